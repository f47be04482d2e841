"""The project's module import graph, read from the source with ast (nothing is imported).

Every `import` and `from ... import` counts, at module level AND inside functions
(a function-level import runs too, just later: if it closes a cycle it only hides
it), and under `if TYPE_CHECKING:` (never run, but a type named across layers is a
dependency all the same, and a cycle through one is a cycle of the design; such an
edge is marked `type_only`). Left out: imports in an AppConfig's `ready()` (Django
runs them once the app registry is loaded).

An edge follows what Python executes: `from releases.services.plan import X`
in releases.dp runs releases/services/__init__.py first, so it is an edge to
releases.services as well as to releases.services.plan; the importer's own
packages are left out (they are always imported before it).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("accounts", "budgets", "datasets", "releases", "dpportal")


@dataclass(frozen=True)
class Import:
    importer: str
    target: str
    line: int
    in_function: bool
    type_only: bool = False


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Every module of the project packages (migrations included), by dotted name."""
    modules = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            modules[module_name(path, root)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


class _Collector(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool) -> None:
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.found: list[tuple[str, str | None, int, bool, bool]] = []
        self.depth = 0  # functions we are inside
        self.type_only = False  # inside `if TYPE_CHECKING:`

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            outer, self.type_only = self.type_only, True
            for child in node.body:
                self.visit(child)
            self.type_only = outer
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        is_app_config = any(
            (isinstance(base, ast.Name) and base.id == "AppConfig")
            or (isinstance(base, ast.Attribute) and base.attr == "AppConfig")
            for base in node.bases
        )
        for child in node.body:
            if is_app_config and isinstance(child, ast.FunctionDef) and child.name == "ready":
                continue  # app-registry imports: run after every app is loaded
            self.visit(child)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.found.append((alias.name, None, node.lineno, self.depth > 0, self.type_only))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            anchor = self.package.split(".")
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            self.found.append((base, alias.name, node.lineno, self.depth > 0, self.type_only))


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def project_imports(modules: dict[str, Path] | None = None) -> list[Import]:
    """Every import of a project module by a project module (see the module docstring)."""
    modules = project_modules() if modules is None else modules
    imports = {}
    for module, path in modules.items():
        collector = _Collector(module, is_package=path.name == "__init__.py")
        collector.visit(ast.parse(path.read_text(), filename=str(path)))
        own = {module, *_ancestors(module)}
        for base, name, line, in_function, type_only in collector.found:
            target = f"{base}.{name}" if name and f"{base}.{name}" in modules else base
            executed = [*_ancestors(target), target]
            for name_run in executed:
                if name_run in modules and name_run not in own:
                    edge = Import(module, name_run, line, in_function, type_only)
                    imports[(module, name_run, line)] = edge
    return list(imports.values())


def find_cycle(imports: list[Import]) -> list[Import]:
    """One import cycle as the list of its edges, or [] when the graph is acyclic."""
    graph: dict[str, list[Import]] = {}
    for edge in imports:
        graph.setdefault(edge.importer, []).append(edge)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[Import] = []

    def visit(node: str) -> list[Import]:
        state[node] = 1
        for edge in graph.get(node, []):
            if state.get(edge.target) == 1:
                start = next(
                    (i for i, e in enumerate(path) if e.importer == edge.target), len(path)
                )
                return [*path[start:], edge]
            if edge.target not in state:
                path.append(edge)
                cycle = visit(edge.target)
                if cycle:
                    return cycle
                path.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return []


def describe(edges: list[Import]) -> str:
    def where(e: Import) -> str:
        notes = [f"line {e.line}"]
        if e.in_function:
            notes.append("in a function")
        if e.type_only:
            notes.append("type-only")
        return ", ".join(notes)

    return "\n".join(f"  {e.importer} -> {e.target} ({where(e)})" for e in edges)
