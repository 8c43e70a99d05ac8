"""Grammar-constrained decoding for the in-process engine, backed by llguidance (extra ``local``).

:class:`TokenConstraint` is the per-request hook of :meth:`LocalLM.generate
<mimesis_gym.core.local_lm.LocalLM.generate>`: the engine hands it a row's next-token logits right before
the token is chosen and gets back the log-probs of the **constrained distribution** (disallowed tokens at
``-inf``, the rest renormalised), then tells it which token was chosen. :class:`GrammarConstraint` is
that hook for a Lark grammar: llguidance's ``LLMatcher`` computes the allowed tokens after every
token (``compute_logit_bias``: one byte per token) and the forbidden logits are set to ``-inf``; the
grammar, its lexer and the token trie are all llguidance's.

llguidance (a single wheel without dependencies) is imported inside functions only, so the module loads
without it; :func:`require_llguidance` (and :func:`grammar_constraint`) raise a
:class:`~mimesis_gym.core.errors.ConfigurationError` naming the extra when it is missing.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Protocol

from mimesis_gym.core.errors import ConfigurationError

__all__ = ["GrammarConstraint", "TokenConstraint", "grammar_constraint", "require_llguidance"]


class TokenConstraint(Protocol):
    """What the engine calls for one constrained row (one instance per request, used from one thread)."""

    def log_probs(self, logits: Any) -> Any:
        """The 1-D float32 log-probs over the vocabulary for the row's raw ``logits`` (a 1-D CPU tensor,
        not modified), with every token the constraint forbids at ``-inf`` and the rest renormalised."""
        ...

    def accept(self, token: int) -> None:
        """Advance past the chosen ``token`` (always one :meth:`log_probs` allowed)."""
        ...


class GrammarConstraint:
    """A Lark grammar enforced token by token through an llguidance matcher."""

    def __init__(self, matcher: Any) -> None:
        self._matcher = matcher

    def log_probs(self, logits: Any) -> Any:
        import numpy as np
        import torch

        self._check()
        # llguidance's per-token allow list (one byte per tokenizer token: 0 forbidden, 200 allowed)
        allowed = np.frombuffer(self._matcher.compute_logit_bias(), dtype=np.uint8) != 0
        masked = logits.detach().float().cpu().numpy().copy()
        shared = min(allowed.size, masked.size)
        masked[:shared][~allowed[:shared]] = -np.inf
        masked[shared:] = -np.inf  # ids the model has beyond the tokenizer's vocabulary
        if not np.isfinite(masked).any():
            raise RuntimeError("the grammar allows no token here (llguidance returned an empty mask)")
        return torch.log_softmax(torch.from_numpy(masked), dim=-1)

    def accept(self, token: int) -> None:
        self._matcher.consume_token(int(token))
        self._check()

    @property
    def done(self) -> bool:
        """The grammar has been completed (its stop token consumed)."""
        return bool(self._matcher.is_stopped())

    def _check(self) -> None:
        if self._matcher.is_error():
            raise RuntimeError(f"constrained decoding failed: {self._matcher.get_error()}")


_TOKENIZERS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_GRAMMARS: dict[str, str] = {}
_LOCK = threading.Lock()


def require_llguidance() -> None:
    """:class:`ConfigurationError` naming the extra (and the way out) unless llguidance can be imported."""
    try:
        import llguidance
        import llguidance.hf  # noqa: F401
    except ImportError:
        raise ConfigurationError(
            "constrained actions need llguidance: pip install 'mimesis-gym[local]' "
            "(or turn them off with --no-constrained-actions)"
        ) from None


def grammar_constraint(tokenizer: Any, lark: str) -> GrammarConstraint:
    """A fresh constraint for one request: ``lark`` (a Lark grammar) over ``tokenizer`` (a fast HF tokenizer).

    The llguidance tokenizer is built once per HF tokenizer and grammars once per text. The grammar must
    end at the tokenizer's EOS token, which llguidance allows once the grammar is complete. A grammar
    llguidance rejects raises ``ValueError`` with its message.
    """
    require_llguidance()
    import llguidance
    import llguidance.hf

    with _LOCK:
        ll_tokenizer = _TOKENIZERS.get(tokenizer)
        if ll_tokenizer is None:
            ll_tokenizer = _TOKENIZERS[tokenizer] = llguidance.hf.from_tokenizer(tokenizer)
        compiled = _GRAMMARS.get(lark)
        if compiled is None:
            compiled = llguidance.LLMatcher.grammar_from_lark(lark)
            is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(compiled, ll_tokenizer)
            if is_error:
                raise ValueError(f"llguidance rejects the grammar: {'; '.join(messages)}")
            _GRAMMARS[lark] = compiled
    matcher = llguidance.LLMatcher(ll_tokenizer, compiled, log_level=0)
    return GrammarConstraint(matcher)
