"""The package's import graph: no cycles, no upward imports, no private names across modules.

Every ``import`` of a ``mimesis_gym`` module counts, at module level and inside functions alike (a
lazy import is still a dependency, and the circles this test was written against were all lazy);
only imports under ``if TYPE_CHECKING:`` are left out, since they never run. Importing a submodule
also runs its parent packages' ``__init__``; those implicit edges are not counted.

Layers, lowest first; a module may import its own layer and those below:

- 0 ``core``
- 1 ``users``, ``agents``
- 2 ``envs`` and the package root ``mimesis_gym`` (the facade that registers the envs)
- 3 ``evaluation``, ``algorithms``, ``integrations``
- 4 ``cli``
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "mimesis_gym"
LAYERS = {
    "core": 0,
    "corpora": 0,
    "behaviors": 0,
    "users": 1,
    "agents": 1,
    "envs": 2,
    "evaluation": 3,
    "algorithms": 3,
    "integrations": 3,
    "cli": 4,
}
ROOT_LAYER = 2


def module_files() -> dict[str, tuple[Path, bool]]:
    """Dotted module name → (file, is a package ``__init__``)."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


MODULES = module_files()


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def known(name: str) -> str:
    """The longest prefix of ``name`` that is one of our modules (``a.b.Class`` → ``a.b``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


class Imports(ast.NodeVisitor):
    """``(target module, imported name or None, line)`` of every import outside TYPE_CHECKING blocks."""

    def __init__(self, module: str, is_package: bool) -> None:
        self.package = module.split(".") if is_package else module.split(".")[:-1]
        self.found: list[tuple[str, str | None, int]] = []

    def visit_If(self, node: ast.If) -> None:
        if is_type_checking(node.test):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.found.append((alias.name, None, node.lineno))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.package[: len(self.package) - (node.level - 1)]
            source = ".".join([*base, *([node.module] if node.module else [])])
        else:
            source = node.module or ""
        for alias in node.names:
            submodule = f"{source}.{alias.name}"
            if submodule in MODULES:
                self.found.append((submodule, None, node.lineno))
            else:
                self.found.append((source, alias.name, node.lineno))


def imports_of(module: str) -> list[tuple[str, str | None, int]]:
    path, is_package = MODULES[module]
    visitor = Imports(module, is_package)
    visitor.visit(ast.parse(path.read_text(encoding="utf-8")))
    return [(known(target), name, line) for target, name, line in visitor.found if target.startswith("mimesis_gym")]


GRAPH = {module: imports_of(module) for module in MODULES}


def layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1:
        return ROOT_LAYER
    return LAYERS[parts[1]]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_top_level_part_has_a_layer():
    parts = {module.split(".")[1] for module in MODULES if "." in module}
    assert parts <= set(LAYERS), f"give these a layer: {sorted(parts - set(LAYERS))}"


def test_the_scanner_sees_lazy_imports_and_skips_type_checking_ones():
    runner = {target for target, _, _ in GRAPH["mimesis_gym.evaluation.runner"]}
    assert "mimesis_gym.evaluation.ray_workers" in runner  # check_reachable, imported inside run_eval only
    assert "mimesis_gym.envs" in {target for target, _, _ in GRAPH["mimesis_gym.evaluation.plan"]}
    cli = {target for target, _, _ in GRAPH["mimesis_gym.cli.evaluate"]}
    assert "mimesis_gym.evaluation.runner" in cli  # imported inside _cmd_eval only
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import mimesis_gym.cli\n")
    visitor = Imports("mimesis_gym.core.x", False)
    visitor.visit(tree)
    assert visitor.found == [("typing", "TYPE_CHECKING", 1)]


def test_no_import_cycles():
    graph = {module: {target for target, _, _ in edges if target != module} for module, edges in GRAPH.items()}
    assert cycles(graph) == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_upward_imports(module):
    upward = [f"line {line}: {target}" for target, _, line in GRAPH[module] if target and layer(target) > layer(module)]
    assert upward == [], f"{module} (layer {layer(module)}) imports a higher layer: {upward}"


def test_no_private_names_across_modules():
    private = [
        f"{module}:{line} imports {name} from {target}"
        for module, edges in GRAPH.items()
        for target, name, line in edges
        if name is not None and name.startswith("_") and not name.startswith("__") and target != module
    ]
    assert private == []
