"""The package's layers import only the layers below them, as docs/layout.md's table declares: one test per module,
generated from the package's files and the table, reading each module's syntax tree (imports inside functions
count; a docstring that names a module does not)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import bench

PACKAGE = Path(bench.__file__).parent
LAYOUT = PACKAGE.parent / "docs" / "layout.md"
#: The package's own entry point, ``python -m bench``: the CLI's door, so it may import what the CLI may.
ENTRY = {"__main__.py": "cli", "__init__.py": "core"}


def declared_layers(text: str) -> dict[str, set[str] | None]:
    """Each layer of the layout table (``bench/<layer>/``) and the layers it may import (None: anything), from the
    table's ``imports`` column: its backticked layer names (``nothing of `bench` above it`` names none)."""
    layers: dict[str, set[str] | None] = {}
    for line in text.splitlines():
        m = re.match(r"\| `bench/(\w+)/` \| [^|]* \| ([^|]*) \|", line)
        if m:
            layers[m[1]] = None if m[2].strip() == "anything" else set(re.findall(r"`(\w+)`", m[2]))
    for allowed in layers.values():
        if allowed is not None:
            allowed.discard("bench")
    return layers


LAYERS = declared_layers(LAYOUT.read_text())
MODULES = sorted(PACKAGE.rglob("*.py"))


def layer_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return ENTRY[rel.name] if len(rel.parts) == 1 else rel.parts[0]


def imported_layers(path: Path) -> dict[str, int]:
    """The ``bench`` layers ``path`` imports (``bench.<layer>...``, absolute), each with its first line."""
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] if node.module != "bench" else [f"bench.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "bench" and len(parts) > 1:
                found.setdefault(parts[1], node.lineno)
    return found


def test_the_table_declares_every_layer_of_the_package():
    dirs = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert dirs == set(LAYERS), f"docs/layout.md's table of layers and bench/'s packages differ: {dirs ^ set(LAYERS)}"
    assert LAYERS["core"] == set() and LAYERS["cli"] is None  # what the table says today, read right


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_module_imports_only_the_layers_below_its_own(path):
    layer = layer_of(path)
    allowed = LAYERS[layer]
    if allowed is None:
        return
    up = {other: line for other, line in imported_layers(path).items() if other != layer and other not in allowed}
    assert not up, (f"bench/{path.relative_to(PACKAGE)} ({layer}) imports {sorted(up)} at line(s) "
                    f"{sorted(up.values())}; docs/layout.md lets {layer} import only {sorted(allowed) or 'nothing'}")


def test_the_scan_sees_imports_inside_functions_and_from_bench_import(tmp_path):
    f = tmp_path / "m.py"
    f.write_text('"""bench.cli is named here."""\nimport os\nfrom bench import results\n\n\ndef f():\n'
                 '    from bench.run.worker import main\n    import bench.host.rounds\n')
    assert imported_layers(f) == {"results": 3, "run": 7, "host": 8}


def module_graph() -> dict[str, set[str]]:
    """Each module of the package (dotted name; a package by its ``__init__``) and the package modules it imports,
    inside functions too (``from bench.x import name`` counts ``bench.x.name`` where that is a module)."""
    mods = {}
    for f in MODULES:
        parts = f.relative_to(PACKAGE.parent).with_suffix("").parts
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f

    def known(name: str) -> str:
        while name not in mods and "." in name:
            name = name.rsplit(".", 1)[0]
        return name

    graph: dict[str, set[str]] = {}
    for name, f in mods.items():
        deps = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("bench"):
                deps |= {known(f"{node.module}.{a.name}") for a in node.names}
            elif isinstance(node, ast.Import):
                deps |= {known(a.name) for a in node.names if a.name.startswith("bench")}
        graph[name] = deps - {name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_two_modules_import_each_other_but_a_package_and_the_modules_it_registers():
    """A registry's package (``bench.models.workloads``, ``bench.run.scenarios``) imports its own modules, which take
    its base class: that circle stays inside the package. Any other circle (``flops`` and ``scenarios.steps`` had
    one) is a failure naming its modules."""
    across = [g for g in circles(module_graph()) if not all(m == g[0] or m.startswith(g[0] + ".") for m in g)]
    assert across == []


def test_the_circle_finder_finds_a_circle_through_three_modules():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "p": {"p.x"}, "p.x": {"p"}}
    assert circles(graph) == [["a", "b", "c"], ["p", "p.x"]]
