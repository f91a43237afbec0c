"""What the results site is built from: the collected runs (``RUN.csv`` with its JSON lines, read by
``bench.results.report.load_runs``, so by ``bench.results.rows.read_rows``) and the results histories
(``history.sqlite``, read by ``bench.results.history``).

A source directory stands for its own CSVs and those of its subdirectories one level down (``results/`` holds the
local runs, ``results/<name>/`` the committed ones: ``results/cpu-smoke/classic-smoke-cpu.csv``), and for the
``history.sqlite`` files at the same places. A run's id is its folder and CSV stem (``cpu-smoke/classic-smoke-cpu``),
so two folders may hold runs of one name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.results.history import HISTORY_NAME

#: Subdirectories of a source that never hold collected runs: records, plots, the site itself.
SKIPPED_DIRS = frozenset({"runs", "plots", "site", "doctor", "images", "selftest", "fidelity"})


@dataclass
class SiteRun:
    """One collected run.

    Attributes:
        name: the CSV's stem (``bench collect``'s run name).
        folder: the CSV's folder relative to its source ('' for one directly in it).
        df: its rows (``bench.results.report.read_bench_csv``).
    """

    name: str
    folder: str
    df: Any

    @property
    def id(self) -> str:
        """``folder/name``, or ``name`` for a run directly in its source."""
        return f"{self.folder}/{self.name}" if self.folder else self.name

    @property
    def page(self) -> str:
        """The run's page in the site (``runs/<slug>.html``)."""
        return f"runs/{page_slug(self.id)}.html"


def page_slug(text: str) -> str:
    """A file-name-safe form of a run id: letters, digits, ``.``, ``_`` and ``-`` as they are, ``/`` as ``--``, any
    other character as ``~`` and its UTF-8 bytes in hex (``a100@x`` -> ``a100~40x``), so that run names that differ
    in such a character (``make`` takes ``@``, ``~``, ``+``, ``=`` in RUN) get pages of their own."""
    def safe(part: str) -> str:
        return "".join(c if re.fullmatch(r"[A-Za-z0-9._-]", c) else "~" + c.encode().hex() for c in part)

    return "--".join(safe(p) for p in text.split("/")).strip("-") or "run"


def _folders(source: Path) -> list[tuple[Path, str]]:
    """(directory, its folder name relative to ``source``) for ``source`` and its subdirectories, sorted."""
    subs = sorted(p for p in source.iterdir() if p.is_dir() and p.name not in SKIPPED_DIRS
                  and not p.name.startswith("."))
    return [(source, ""), *((p, p.name) for p in subs)]


def find_runs(sources: list[Path]) -> tuple[list[SiteRun], list[str]]:
    """The collected runs under ``sources`` (directories as the module says, or CSV files), each read once.

    Returns ``(runs, warnings)``: a CSV found in a directory that is not a bench CSV is left out with a warning.

    Raises:
        ValueError: a CSV named explicitly is not a bench CSV, or no run is found at all.
    """
    from bench.results.report import load_runs, read_bench_csv

    runs: list[SiteRun] = []
    warnings: list[str] = []
    for source in sources:
        if not source.is_dir():
            runs.append(SiteRun(source.stem, "", read_bench_csv(source)))
            continue
        for folder, name in _folders(source):
            if not any(folder.glob("*.csv")):
                continue
            found, warned = load_runs([folder])
            warnings += warned
            runs += [SiteRun(run, name, df) for run, df in found]
    if not runs:
        raise ValueError(f"no bench CSV in {', '.join(map(str, sources))} or its folders (run `make collect` first)")
    return runs, warnings


def find_histories(sources: list[Path]) -> list[Path]:
    """Every ``history.sqlite`` directly in a source directory or in one of its subdirectories, sorted."""
    found: list[Path] = []
    for source in sources:
        if source.is_dir():
            found += [d / HISTORY_NAME for d, _ in _folders(source) if (d / HISTORY_NAME).is_file()]
    return found


def load_histories(paths: list[Path]) -> tuple[Any, Any]:
    """The rows and the runs of the histories at ``paths`` (``bench.results.history.load`` and ``runs``), each with
    a ``history`` column naming its file; a run in two files is kept from the first.

    Raises:
        ValueError: a file is not a history this code reads (``HistoryError``'s message).
    """
    import pandas as pd

    from bench.results import history as store

    cells: list[Any] = []
    runs: list[Any] = []
    for path in paths:
        try:
            c, r = store.load(path), store.runs(path)
        except store.HistoryError as e:
            raise ValueError(str(e)) from e
        seen = set().union(*(set(x["run"]) for x in runs)) if runs else set()
        cells.append(c[~c["run"].isin(seen)].assign(history=str(path)))
        runs.append(r[~r["run"].isin(seen)].assign(history=str(path)))
    if not paths:
        return pd.DataFrame(), pd.DataFrame()
    return pd.concat(cells, ignore_index=True), pd.concat(runs, ignore_index=True)
