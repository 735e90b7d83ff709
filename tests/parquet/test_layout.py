"""The layout of metaindex.parquet: no import circles between its modules (imports inside
functions count too: a lazy import only hides a circle), and the public names stay."""

from __future__ import annotations

import ast
from pathlib import Path

import metaindex.parquet

PACKAGE = Path(metaindex.parquet.__file__).parent


def _module_imports(path: Path) -> set[str]:
    """The metaindex.parquet modules ``path`` imports, anywhere in the file."""
    names = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "metaindex.parquet":
                out.update(a.name for a in node.names if a.name in names)
            elif node.module.startswith("metaindex.parquet."):
                out.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            out.update(
                a.name.split(".")[2] for a in node.names if a.name.startswith("metaindex.parquet.")
            )
    return out


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (module -> modules it imports), or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return path[path.index(n) :] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_no_import_circles_in_the_parquet_package():
    graph = {p.stem: _module_imports(p) for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert graph["reader"] >= {"source", "footer", "schema", "page_reader"}, (
        "the reader should be built from the split modules"
    )
    circle = _cycle(graph)
    assert circle is None, f"import circle in metaindex/parquet: {' -> '.join(circle)}"


def test_cycle_finder_finds_a_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_public_surface_is_kept():
    from metaindex.parquet import ParquetFile, read_table, write_table  # noqa: F401
    from metaindex.parquet.reader import (  # noqa: F401
        arrow_schema_of,
        footer_fingerprint,
        footer_region,
        read_footer,
        schema_tree,
    )

    for name in metaindex.parquet.__all__:
        assert hasattr(metaindex.parquet, name), f"metaindex.parquet lost {name}"
