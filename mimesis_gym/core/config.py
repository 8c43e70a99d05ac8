"""The base of the project's user-set settings models (trainer, eval, endpoint): finite numbers, plausible sizes.

:class:`ConfigModel` refuses unknown keys and every non-finite float (``lr: .inf``, ``nan``, the
string ``"inf"``), wherever the float sits (``tuple[float, float]``, ``float | None``), with
pydantic's ``allow_inf_nan=False``: the error names the field ("Input should be a finite number").
A size field may declare a plausibility bound with :func:`plausible_up_to`; a value above it is kept
but raises an :class:`ImplausibleSettingWarning` naming the setting, its value and the bound, so a
typo such as ``group_size: 1e8`` is seen before a run tries to allocate it.
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator

__all__ = ["TOKENS_PLAUSIBLE", "TURNS_PLAUSIBLE", "ConfigModel", "ImplausibleSettingWarning", "plausible_up_to"]

_BOUND_KEY = "plausible_up_to"

TOKENS_PLAUSIBLE = 1 << 20
"""A token budget above 1,048,576 (a prompt, a response, one turn, a micro-batch, a reply) warns."""
TURNS_PLAUSIBLE = 1024
"""More than 1,024 turns in one episode warns."""


class ImplausibleSettingWarning(UserWarning):
    """A setting far beyond any sensible run (likely a typo); the value is kept."""


def plausible_up_to(bound: int) -> dict[str, Any]:
    """``Field(..., json_schema_extra=plausible_up_to(N))``: warn when the value exceeds ``N`` (shown in the schema)."""
    return {_BOUND_KEY: bound}


class ConfigModel(BaseModel):
    """Base of a settings model a person writes: no unknown keys, finite floats, warnings on implausible sizes.

    ``section`` prefixes the setting names in warnings (``"rollout"`` → ``rollout.group_size``).
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    section: ClassVar[str] = ""

    @model_validator(mode="after")
    def _warn_on_implausible_sizes(self) -> Any:
        for name, field in type(self).model_fields.items():
            extra = field.json_schema_extra
            bound = extra.get(_BOUND_KEY) if isinstance(extra, dict) else None
            value = getattr(self, name)
            if isinstance(bound, int) and isinstance(value, (int, float)) and value > bound:
                setting = f"{self.section}.{name}" if self.section else name
                warnings.warn(
                    f"{setting}={value:,} is beyond the plausible bound {bound:,}: a typo? (the value is kept)",
                    ImplausibleSettingWarning,
                    stacklevel=2,
                )
        return self
