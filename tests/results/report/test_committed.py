"""The committed reports (results/<folder>/report.md) are what today's report code writes from the committed CSVs
beside them: a reader of the repository never reads a method note, a column or a footnote that the code has since
changed; and the committed CSVs are what today's collector reads from the records beside them. Regenerate a report
with ``python -m bench report results/<folder>`` (its plots too; they are deterministic), a CSV with ``python -m bench
collect results/<folder>/runs/<run> -o results/<folder>/<run>.csv --no-history``."""

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


CSVS = sorted(p for p in (ROOT / "results").glob("*/*.csv") if (p.parent / "runs" / p.stem).is_dir())


@pytest.mark.parametrize("csv", CSVS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_committed_csv_holds_what_bench_collect_reads_from_its_records_today(csv: Path, tmp_path: Path):
    """``bench collect results/<folder>/runs/<run>`` writes the committed ``<run>.csv``'s columns and values (the
    order of its columns aside). A CSV collected before the collector listed every repeat's times
    (``repeats.started_utc`` / ``finished_utc``) made its report's span end at repeat 1 of the last cell: the
    rounds-smoke report said 11:41:34 to 11:44:18, where its records run to 11:49:28."""
    import pandas as pd

    from bench.results.collect import collect

    collect(csv.parent / "runs" / csv.stem, tmp_path / csv.name)
    today, committed = (pd.read_csv(p, dtype=str).sort_values("cell_id", kind="stable").reset_index(drop=True)
                        for p in (tmp_path / csv.name, csv))
    assert sorted(today.columns) == sorted(committed.columns), \
        f"{csv.name}: collect today adds {set(today) - set(committed)}, drops {set(committed) - set(today)}"
    pd.testing.assert_frame_equal(today[sorted(today.columns)], committed[sorted(committed.columns)])


def test_a_committed_report_spans_every_record_of_its_run():
    """The rounds-smoke report's span runs from the first start to the last end over every record of the run, its
    repeats' records included (read here from the JSON files, not through the collector)."""
    import json

    run = ROOT / "results" / "rounds-smoke" / "runs" / "rounds-smoke-cpu"
    records = [json.loads(p.read_text()) for p in run.rglob("*.json")]
    first = min(r["started_utc"] for r in records)
    last = max(r["finished_utc"] for r in records)
    text = (run.parents[1] / "report.md").read_text()
    assert f"cells ran from {first[11:19]} to {last[:10]} {last[11:19]}" in text
