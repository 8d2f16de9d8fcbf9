"""The engine's modules import each other without a cycle: each module only uses those below it.

The graph is read from the source with `ast`, every import counted, also one inside a function
(a deferred import hides a cycle from Python, not from a reader). `from package import name`
counts as an import of the submodule `package.name` when there is one, else of the package. A
module is not counted as importing its parent package, which Python runs first: a package's
`__init__` may gather its modules.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import dbt_ivm

ROOT = Path(dbt_ivm.__file__).parent


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> its file, for every module of the package at `root`."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported(name: str, path: Path, known: Mapping[str, Path]) -> set[str]:
    """The modules of `known` that module `name` (at `path`) imports, anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, one level up per dot past the first
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            for alias in node.names:
                if f"{base}.{alias.name}" in known:
                    found.add(f"{base}.{alias.name}")
                elif base in known:
                    found.add(base)
    found.discard(name)
    return found


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    known = modules(root)
    return {name: imported(name, path, known) for name, path in known.items()}


def cycles(graph: Mapping[str, set[str]]) -> Iterator[list[str]]:
    """One cycle (its modules, the first again at the end) per strongly connected component of
    more than one module: Tarjan's algorithm, then a path around the component."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            components.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    for component in components:
        if len(component) > 1:
            yield _around(graph, component)


def _around(graph: Mapping[str, set[str]], component: set[str]) -> list[str]:
    """A path from the component's first module back to itself, within the component."""
    start = min(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & component):
            if w == start:
                return [*paths[v], start]
            if w not in paths:
                paths[w] = [*paths[v], w]
                queue.append(w)
    raise AssertionError(f"no path around {component}")


def test_the_engine_has_no_import_cycle():
    found = [" -> ".join(c) for c in cycles(import_graph())]
    assert not found, "import cycles in dbt_ivm:\n" + "\n".join(found)


def test_a_cycle_is_found_with_its_path_also_through_a_deferred_import(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("def f():\n    from pkg.sub.c import x\n")
    (package / "sub" / "__init__.py").write_text("from . import c\n")  # a package gathering its module
    (package / "sub" / "c.py").write_text("from ..a import y\n")
    graph = import_graph(package)
    assert graph["pkg.sub"] == {"pkg.sub.c"} and graph["pkg.sub.c"] == {"pkg.a"}
    assert list(cycles(graph)) == [["pkg.a", "pkg.b", "pkg.sub.c", "pkg.a"]]
