"""README stays a short front page: under 200 lines, the two commands near the top (CI runs README's test command),
the stacks table, and links that land on files and headings that exist (the docs site itself is checked by
``mkdocs build --strict`` in ``make lint``)."""

from __future__ import annotations

import re
from pathlib import Path

from bench.core.stacks import STACKS
from tests.helpers.numbers import number

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_LINES = 200
#: The first lines a newcomer sees: the two commands must be among them.
TOP_LINES = 20


def _readme() -> str:
    return README.read_text(encoding="utf-8")


def _slug(heading: str) -> str:
    """The anchor MkDocs (Python-Markdown's toc) gives a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"[^\w\s-]", "", heading.strip().lower())
    return re.sub(r"[-\s]+", "-", text).strip("-")


def _anchors(md: Path) -> set[str]:
    body = re.sub(r"^```.*?^```", "", md.read_text(encoding="utf-8"), flags=re.S | re.M)
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*$", body, flags=re.M)}


def test_readme_is_under_200_lines():
    assert len(_readme().splitlines()) < MAX_LINES


def test_readme_opens_with_the_two_commands_in_a_code_block():
    top = "\n".join(_readme().splitlines()[:TOP_LINES])
    block = re.search(r"```sh\n(.*?)```", top, flags=re.S)
    assert block, f"no ```sh block in README's first {TOP_LINES} lines"
    commands = [line.split("#")[0].strip() for line in block.group(1).splitlines()]
    assert "make bench-all" in commands
    assert "make test" in commands
    assert "docker compose run jax-bench" in commands  # the compose way, beside make


def test_readme_keeps_the_stacks_table_and_the_method_tables():
    text = _readme()
    for stack_id in STACKS:
        assert re.search(rf"^\| `{re.escape(stack_id)}` \|", text, flags=re.M), stack_id
    for heading in ("## Stacks", "## Method vs the sources", "### Math mode (TF32)", "## Drivers",
                    "## How timing works", "## Run on the cloud"):
        assert re.search(rf"^{re.escape(heading)}\s*$", text, flags=re.M), heading
    for suite in ("**Classic**", "**Tuning**", "**Paper**"):
        assert suite in text


def test_readme_links_point_at_files_and_headings_that_exist():
    links = re.findall(r"\]\(([^)\s]+)\)", _readme())
    assert links
    for link in links:
        if re.match(r"[a-z]+://", link):
            continue
        path, _, anchor = link.partition("#")
        target = ROOT / path
        assert target.exists(), link
        if anchor:
            assert anchor in _anchors(target), link


def test_readme_and_the_home_page_count_the_committed_smoke_runs_cells():
    """Both front pages describe the committed CPU smoke run by its CSV: cells, ok cells, stacks (docs/index.md said
    25 cells after the run was redone at six stacks, 30)."""
    import csv
    import sys

    csv.field_size_limit(sys.maxsize)
    with (ROOT / "results/cpu-smoke/classic-smoke-cpu.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    stated = r"\(`results/cpu-smoke/`, [0-9-]+: (\d+) of (\d+) cells `ok`, (\w+) stacks"
    for page in (README, ROOT / "docs/index.md"):
        m = re.search(stated, page.read_text(encoding="utf-8"))
        assert m, f"{page.name} states the smoke run's cells as '<ok> of <cells> cells `ok`, <n> stacks'"
        assert (int(m.group(1)), int(m.group(2)), number(m.group(3))) == (
            sum(r["status"] == "ok" for r in rows), len(rows), len({r["stack"] for r in rows})), page.name
