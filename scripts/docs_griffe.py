"""Griffe extensions of the docs site (named in ``mkdocs.yml``): roles become links, re-exports go.

``SphinxRoles``: the docstrings name objects with reStructuredText roles — ``:class:`Database```,
``:func:`~mimesis_gym.core.text.clean_text```, ``:meth:`Collated.take``` — which Markdown would print
as they are. Once the package is loaded, each role becomes an *optional* cross-reference: a link
when the object has a page, its name in code type otherwise. A role naming a ``mimesis_gym``
object that does not exist is a broken reference and is logged as a warning, which fails
``mkdocs build --strict``; roles naming the standard library or another package are left as code.
``convert`` is the whole rewrite and needs no griffe; ``tests/test_docs_site.py`` checks it.

``DefinedOnce``: re-exports are dropped (a package's, and a module's that keeps the names of a module
split up importable), so that the API pages, which render every submodule, show each object once,
where it is defined.
"""

from __future__ import annotations

import html
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

ROLE = re.compile(r":(?:class|func|meth|data|attr|mod|exc|obj):`(~?)([A-Za-z_][\w.]*)`")
"""A role: optional ``~`` (show the last name only), then a dotted name."""

PACKAGE = "mimesis_gym"


def convert(text: str, resolve: Callable[[str], str | None]) -> tuple[str, list[str]]:
    """Rewrite every role of ``text``; return the new text and the names that are broken references.

    ``resolve(name)`` gives the full path of ``name`` in the docstring's scope, or ``None``. A
    resolved name becomes ``<autoref identifier="path" optional><code>shown</code></autoref>``;
    an unresolved one becomes ``` `shown` ``` and, unless it names something outside the package
    (the standard library or a third-party module), is reported as broken.
    """
    broken: list[str] = []

    def replace(match: re.Match[str]) -> str:
        tilde, name = match.groups()
        shown = name.rsplit(".", 1)[-1] if tilde else name
        path = resolve(name)
        if path is not None:
            return f'<autoref identifier="{html.escape(path)}" optional><code>{html.escape(shown)}</code></autoref>'
        if not _is_external(name):
            broken.append(name)
        return f"`{shown}`"

    return ROLE.sub(replace, text), broken


THIRD_PARTY = frozenset(
    {
        "accelerate", "gymnasium", "httpx", "llguidance", "numpy", "openenv", "pyarrow", "pydantic", "ray", "torch",
        "transformers", "trl", "verl", "vllm",
    }  # fmt: skip
)
"""Other packages the docstrings name."""


def _is_external(name: str) -> bool:
    root = name.split(".", 1)[0]
    return root in sys.stdlib_module_names or root in THIRD_PARTY


try:
    import griffe
except ImportError:  # the docs extra is not installed: convert() is still usable (and tested)
    griffe = None  # type: ignore[assignment]


def _objects(obj: Any) -> Iterator[Any]:
    """``obj`` and every object it defines (aliases, i.e. imports, are skipped)."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _objects(member)


if griffe is not None:

    class SphinxRoles(griffe.Extension):
        """Rewrite the roles of every docstring of the loaded package (see the module docstring)."""

        def on_package(self, *, pkg: Any, loader: Any, **kwargs: Any) -> None:
            collection = loader.modules_collection
            for obj in _objects(pkg):
                if obj.docstring is None or ":`" not in obj.docstring.value:
                    continue
                text, broken = convert(obj.docstring.value, lambda name, obj=obj: _resolve(obj, collection, name))
                obj.docstring.value = text
                for name in broken:
                    griffe.logger.warning(f"{obj.path}: the docstring names {name!r}, which does not exist")

    class DefinedOnce(griffe.Extension):
        """Document each object once, in the module that defines it.

        A package's ``__init__`` re-exports names for ``from mimesis_gym.core import X``, and a module
        split by job keeps its old names importable (``mimesis_gym.evaluation.runner``); the API
        pages render every submodule, so the re-exported copies are dropped from the module that
        imports them (after :class:`SphinxRoles`, which resolves names through them).
        """

        def on_package(self, *, pkg: Any, loader: Any, **kwargs: Any) -> None:
            for module in _objects(pkg):
                if module.is_module:
                    for name, member in list(module.members.items()):
                        if member.is_alias and member.target_path.startswith(PACKAGE + "."):
                            del module.members[name]

    def _resolve(obj: Any, collection: Any, name: str) -> str | None:
        """The canonical path of ``name`` as seen from ``obj``: a full dotted path, or scoped like Python."""
        if name.split(".", 1)[0] == PACKAGE:
            return _canonical(collection, name)
        first, _, rest = name.partition(".")
        try:
            path = obj.resolve(first)
        except griffe.NameResolutionError:
            return None
        return _canonical(collection, f"{path}.{rest}" if rest else path)

    def _canonical(collection: Any, path: str) -> str | None:
        """Where the object at ``path`` is defined (through re-exports), or ``None`` when there is none."""
        try:
            member = collection.get_member(path)
            return member.final_target.path if member.is_alias else member.path
        except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            return None
