"""The report's Markdown tables: one writer (``bench.results.report.common.md_table``, tabulate's pipe format) that
every report module goes through, so none joins table cells by hand."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import bench.results.report as report_package
from bench.results.report.common import md_cell, md_table
from bench.results.site.markdown import cells_of, tables

REPORT_DIR = Path(report_package.__file__).parent


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of ``tree`` (module, classes, functions): prose, not table text."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _looks_like_table_text(text: str) -> bool:
    """A literal that builds a pipe table by hand: a cell border (`` | ``), a row's first or last border, a
    separator (``---|``)."""
    return " | " in text or text.startswith("| ") or text.endswith(" |") or "---|" in text or "|---" in text


def hand_built_tables(path: Path) -> list[str]:
    """``line: literal`` of each string literal of ``path`` (outside docstrings; f-strings' parts included) that
    builds a pipe table by hand, and of each ``<literal with |>.join(...)``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    prose = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose \
                and _looks_like_table_text(node.value):
            found.append(f"{path.name}:{node.lineno}: {node.value!r}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join" \
                and isinstance(node.func.value, ast.Constant) and "|" in str(node.func.value.value):
            found.append(f"{path.name}:{node.lineno}: {node.func.value.value!r}.join")
    return found


def test_no_report_module_joins_a_table_by_hand():
    """Every table of the report is written by ``md_table``: no module of bench/results/report/ holds a literal
    cell border or separator (the old code wrote its 10 tables by hand, with 15 ``" | ".join`` calls)."""
    modules = sorted(REPORT_DIR.glob("*.py"))
    assert len(modules) >= 10  # the package's modules, not an empty folder
    assert [hit for m in modules for hit in hand_built_tables(m)] == []


def test_the_check_finds_a_table_joined_by_hand(tmp_path):
    source = tmp_path / "section.py"
    source.write_text('"""A | B."""\nrow = "| " + " | ".join(["a", "b"]) + " |"\nsep = "|---" * 2\n'
                      'x = "|".join(cells)\n')
    hits = hand_built_tables(source)
    assert sorted(int(hit.split(":")[1]) for hit in hits) == [2, 2, 2, 2, 3, 4]  # not the docstring's line 1
    assert "section.py:2: ' | '.join" in hits and "section.py:4: '|'.join" in hits


def test_md_table_keeps_the_text_of_each_cell_and_pads_the_columns():
    lines = md_table(["cell", "p", "n"], [["mnist_mlp fit", "0.500", "007"], ["babi", "1e3", None]])
    assert len({len(ln) for ln in lines}) == 1  # padded to one width
    assert [cells_of(ln) for ln in (lines[0], *lines[2:])] == [["cell", "p", "n"], ["mnist_mlp fit", "0.500", "007"],
                                                               ["babi", "1e3", "None"]]
    [table] = tables(lines)  # the results site reads it back cell for cell (no number parsed or reformatted)
    assert table.head == ["cell", "p", "n"]
    assert table.rows == [["mnist_mlp fit", "0.500", "007"], ["babi", "1e3", "None"]]


def test_md_table_aligns_left_by_default_and_right_where_asked():
    sep = md_table(["run", "cells", "ok"], [["r1", "4", "4"]], align=["left", "right", "right"])[1]
    marks = [c.strip() for c in sep.strip("|").split("|")]
    assert [(m[0], m[-1]) for m in marks] == [(":", "-"), ("-", ":"), ("-", ":")] and all("--" in m for m in marks)
    assert all(c.strip().startswith(":") for c in md_table(["a", "b"], [["1", "2"]])[1].strip("|").split("|"))
    row = md_table(["run", "cells"], [["r1", "4"]], align=["left", "right"])[2]
    assert row.endswith("|       4 |")  # padded on the left: the right-aligned column reads right-aligned as text too


def test_a_pipe_in_a_cell_is_escaped_and_a_line_break_never_enters_one():
    assert md_cell("jit|xla") == "jit\\|xla"
    assert md_cell("two\nlines \r\n  here") == "two lines here"
    lines = md_table(["a|b", "note"], [["x | y", "first\nsecond"]])
    assert len(lines) == 3  # header, separator, one row: the break did not split the row
    [table] = tables(lines)
    assert table.head == ["a|b", "note"] and table.rows == [["x | y", "first second"]]
    assert "x \\| y" in lines[2]


def test_a_row_of_another_width_is_refused():
    with pytest.raises(ValueError, match="2 cells under 3 headers"):
        md_table(["a", "b", "c"], [["1", "2"]])
    with pytest.raises(ValueError, match="1 cells under 2 headers"):
        md_table(["a", "b"], [["1", "2"]], align=["right"])
