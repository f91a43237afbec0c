"""The report's provenance: the run's span and process time over every repeat of every cell."""

import pandas as pd

from bench.results.report.provenance import run_span


def row(start: str, end: str, **more):
    return {"started_utc": f"2026-01-01T{start}+00:00", "finished_utc": f"2026-01-01T{end}+00:00", **more}


def test_the_span_and_process_time_cover_every_repeat():
    """Each row's own times are its first repeat's; the span runs to the last repeat's end and the process time
    sums every repeat's (repeats.process_wall_s)."""
    df = pd.DataFrame([row("10:00:00", "10:01:00", **{"repeats.n": 2, "process.wall_s": 60.0,
                                                      "repeats.process_wall_s": [60.0, 60.0],
                                                      "repeats.started_utc": ["2026-01-01T10:00:00+00:00",
                                                                              "2026-01-01T10:20:00+00:00"],
                                                      "repeats.finished_utc": ["2026-01-01T10:01:00+00:00",
                                                                               "2026-01-01T10:21:00+00:00"]}),
                       row("10:02:00", "10:03:00", **{"repeats.n": 1, "process.wall_s": 30.0})])
    assert run_span(df) == ("- Run date (UTC): 2026-01-01; cells ran from 10:00:00 to 2026-01-01 10:21:00 "
                            "(21.0 min; cell processes 2.5 min in all, every repeat)")


def test_a_repeated_row_without_its_repeats_times_is_named():
    """A row of several repeats collected without the repeats' times: the span is what the rows hold, and says
    so; the process time still sums every repeat's."""
    df = pd.DataFrame([row("10:00:00", "10:01:00", **{"repeats.n": 3, "process.wall_s": 60.0,
                                                      "repeats.process_wall_s": [60.0, 60.0, 60.0]})])
    assert run_span(df) == ("- Run date (UTC): 2026-01-01; cells ran from 10:00:00 to 2026-01-01 10:01:00 "
                            "(1.0 min; cell processes 3.0 min in all, every repeat; 1 cell(s) of several repeats "
                            "hold their first repeat's times only: the span may have started earlier or ended "
                            "later)")
    assert run_span(pd.DataFrame([{"status": "ok"}])) == "- Run date: n/a"


def test_a_stack_whose_rows_ran_other_versions_names_them_all():
    """A run folder resumed on another image holds one stack's cells on two torch versions: the provenance named the
    first row's version as the stack's. It names each one and says the rows are mixed; one version reads as before."""
    from bench.results.report.provenance import provenance

    two = pd.DataFrame([{"stack": "pytorch", "device": "cpu", "env.packages.torch": v, "env.python": "3.11.9"}
                        for v in ("2.13.0", "2.10.0")])
    [line] = [x for x in provenance(two) if x.startswith("- pytorch:")]
    assert line.startswith("- pytorch: torch 2.10.0 / 2.13.0; Python 3.11.9 **(mixed: torch differ")
    [line] = [x for x in provenance(two.iloc[:1]) if x.startswith("- pytorch:")]
    assert line == "- pytorch: torch 2.13.0; Python 3.11.9"
