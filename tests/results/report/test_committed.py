"""The committed reports (results/<folder>/report.md) are what today's report code writes from the committed CSVs
beside them: a reader of the repository never reads a method note, a column or a footnote that the code has since
changed. Regenerate one with ``python -m bench report results/<folder>`` (its plots too; they are deterministic)."""

from pathlib import Path

import pytest

from bench.results.actions import write_report_for

ROOT = Path(__file__).resolve().parents[3]
COMMITTED = sorted(p.parent for p in (ROOT / "results").glob("*/report.md"))


def test_the_committed_reports_are_found():
    """The list below is the repository's, not an empty glob (a moved results folder would make it vacuous)."""
    assert {p.name for p in COMMITTED} >= {"cpu-smoke", "ledger-cpu", "method-cpu"}


@pytest.mark.parametrize("folder", COMMITTED, ids=lambda p: p.name)
def test_a_committed_report_is_what_bench_report_writes_today(folder: Path, tmp_path: Path):
    """``bench report results/<folder>`` (the History section from the folder's history.sqlite, when there) writes
    the committed report.md, byte for byte, and the plots it links are committed."""
    history = folder / "history.sqlite"
    write_report_for([folder], tmp_path, None, history if history.is_file() else None)
    written = (tmp_path / "report.md").read_text()
    assert written == (folder / "report.md").read_text(), \
        f"results/{folder.name}/report.md is stale: rewrite it with `python -m bench report results/{folder.name}`"
    plots = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.png"))
    assert all((folder / p).is_file() for p in plots), f"plots not committed in results/{folder.name}: {plots}"
