"""The results site (bench.results.site) built from the committed results: its pages hold every run, every cell of
each run's CSV with the CSV's numbers and records, the Markdown report's tables cell for cell, and no script or
style from outside the site; a failed cell and measured energy and MFU show up; bad input is one line."""

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("plotly", reason="the results site needs plotly (the collect extra)")

from bench.results.report import load_runs, write_report  # noqa: E402
from bench.results.site import markdown  # noqa: E402
from bench.results.site.build import build_site  # noqa: E402
from bench.results.site.cells import COLUMNS, record_of  # noqa: E402
from bench.results.site.sources import find_runs, page_slug  # noqa: E402
from tests.helpers.site import RESULTS, ROOT, committed_csvs  # noqa: E402


class Tables(HTMLParser):
    """Every <table> of a page: {id: (head, rows, row records)} with each cell's text as a browser shows it, and the
    page's records JSON and the src/href of its scripts and stylesheets."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables, self.urls, self.records = {}, [], None
        self._table = self._row = self._cell = None
        self._in_records = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._table = self.tables.setdefault(a.get("id"), ([], [], []))
        elif tag == "tr" and self._table is not None:
            self._row = []
            self._ref = a.get("data-record")
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag in ("script", "link"):
            self.urls += [a[k] for k in ("src", "href") if a.get(k)]
            self._in_records = a.get("id") == "records"

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        elif self._in_records:
            self.records = json.loads(data)

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            head, rows, refs = self._table
            if not head:
                head.extend(self._row)
            else:
                rows.append(self._row)
                refs.append(self._ref)
            self._row = None
        elif tag == "table":
            self._table = None
        elif tag == "script":
            self._in_records = False


def parse(path: Path) -> Tables:
    t = Tables()
    t.feed(path.read_text(encoding="utf-8"))
    return t


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    done = build_site([RESULTS], out)
    return out, done


def test_every_committed_run_is_on_the_index(site):
    out, done = site
    csvs = committed_csvs()
    assert done["runs"] == len(csvs) > 0
    _, rows, _ = parse(out / "index.html").tables["runs"]
    ids = {r[0] for r in rows}
    assert ids == {f"{p.parent.name}/{p.stem}" if p.parent != RESULTS else p.stem for p in csvs}
    assert "CPU rows are smoke tests of the harness" in (out / "index.html").read_text()
    for p, row in ((p, next(r for r in rows if r[0].endswith(f"/{p.stem}") or r[0] == p.stem)) for p in csvs):
        df = pd.read_csv(p)
        assert row[6:] == [str(len(df)), str(int((df["status"] == "ok").sum())), str(int((df["status"] != "ok").sum()))]


def test_every_cell_is_listed_with_the_csv_numbers_and_its_record(site):
    out, _ = site
    ms_col = [h for h, _ in COLUMNS].index("ms/step")
    epoch_col = [h for h, _ in COLUMNS].index("s/epoch")
    shown = set()
    for p in committed_csvs():
        df = pd.read_csv(p)
        page = parse(out / "runs" / f"{page_slug(f'{p.parent.name}/{p.stem}')}.html")
        head, rows, refs = page.tables["g0-classic-cells"]
        assert len(rows) == len(df)
        for i, (row, ref) in enumerate(zip(rows, refs, strict=True)):
            assert int(ref) == i and row[0] == df["stack"].iloc[i]
            assert row[ms_col] == f"{df['metrics.ms_per_step_mean'].iloc[i]:.2f}"
            assert row[epoch_col] == epoch_text(df.iloc[i]), (p, i)
            shown.add(row[epoch_col][-1:] == "†" if row[epoch_col] else None)
            record = page.records[ref]
            assert record["cell"]["cell_id"] == df["cell_id"].iloc[i]
            assert record["metrics"]["ms_per_step_mean"] == df["metrics.ms_per_step_mean"].iloc[i]  # exact
    assert {True, False} <= shown  # the committed runs hold both schemas' s/epoch


def epoch_text(row) -> str:
    """The 2017 metric as the cells table should show it, read from the CSV row without the site's code: schema 4's
    fit_call_s_per_epoch, else schema 3's fit_s_per_epoch marked †, else nothing."""
    for column, mark in (("metrics.fit_call_s_per_epoch", ""), ("metrics.fit_s_per_epoch", "†")):
        if column in row and pd.notna(row[column]):
            return f"{row[column]:.2f}{mark}"
    return ""


def test_the_classic_s_per_epoch_chart_reads_the_2017_metric_and_marks_schema_3s_field():
    """The chart of s/epoch reads metrics.fit_call_s_per_epoch; a schema-3 record's fit_s_per_epoch is its own
    trace, named with †; a run with neither draws no chart."""
    from bench.results.site import charts
    from bench.results.site.cells import cell_rows

    base = {"suite": "classic", "workload": "mnist_cnn", "task": "fit", "variant": "default", "status": "ok",
            "metrics.ms_per_step_mean": 2.0, "repeats.ms_per_step_mean.values": [2.0]}
    df = pd.DataFrame([{**base, "stack": "keras3-jax", "metrics.fit_call_s_per_epoch": 12.5},
                       {**base, "stack": "pytorch", "metrics.fit_s_per_epoch": 7.0}])
    cells = cell_rows(df, lambda v: None)
    assert [c["cells"][[h for h, _ in COLUMNS].index("s/epoch")] for c in cells] == ["12.50", "7.00†"]
    fig = charts.s_per_epoch_chart(df, cells, "classic: s/epoch")
    assert [(t.name, list(t.y)) for t in fig.data] == [("keras3-jax", [12.5]),
                                                       ("pytorch † (schema 3: fit_s_per_epoch)", [7.0])]
    assert charts.s_per_epoch_chart(df.drop(columns=["metrics.fit_call_s_per_epoch", "metrics.fit_s_per_epoch"]),
                                    cells, "classic: s/epoch") is None


def assert_same_tables(csv: Path, page: Path, tmp_path: Path) -> int:
    """The run's Markdown report (`bench report`, one run) and its page show the same tables, cell for cell (the
    page orders them by suite, with provenance and method last); returns how many."""
    [(run, df)], _ = load_runs([csv])
    report = write_report([(run, df)], tmp_path / run)
    expected = [([markdown.plain(h) for h in t.head], [[markdown.plain(c) for c in r] for r in t.rows])
                for t in markdown.tables(report.read_text().splitlines())]
    shown = [(h, r) for tid, (h, r, _) in parse(page).tables.items() if not tid.endswith("-cells")]
    assert sorted(map(repr, shown)) == sorted(map(repr, expected)), csv
    return len(expected)


def test_the_report_tables_are_on_the_run_page_cell_for_cell(site, tmp_path):
    out, _ = site
    for p in committed_csvs():
        assert assert_same_tables(p, out / "runs" / f"{page_slug(f'{p.parent.name}/{p.stem}')}.html", tmp_path) > 0


def test_a_gpu_run_of_the_tuning_and_paper_suites(tmp_path):
    """Records as the tuning and paper suites write them on a GPU (tests/helpers/records.py's), failures included:
    the page has the report's Table 2, throughput and tuning tables, the paper and energy charts, the footnotes."""
    from bench.core.atomic import write_json_atomic
    from bench.results.collect import collect
    from bench.results.record import result_path
    from tests.helpers.records import fake_record, paper_record

    recs = [fake_record("keras3-tf", "default", {}, 60.0, baseline=True),
            fake_record("keras3-tf", "jit_compile=false", {"jit_compile": False}, 65.0),
            fake_record("pytorch", "data_pipeline=tensor_dataset", {"data_pipeline": "tensor_dataset"}, 30.0),
            paper_record("keras3-tf", "bert", "fit", 32, 200.0),
            paper_record("keras3-jax", "bert", "fit", 32, 100.0, mfu=0.25),
            paper_record("keras3-torch", "bert", "fit", 32, status="failed", reason="RuntimeError: boom")]
    for c, r in recs:
        write_json_atomic(result_path(tmp_path / "records", c), r)
    collect(tmp_path / "records", tmp_path / "gpu.csv")
    done = build_site([tmp_path / "gpu.csv"], tmp_path / "site")
    page = tmp_path / "site" / "runs" / "gpu.html"
    assert assert_same_tables(tmp_path / "gpu.csv", page, tmp_path) >= 4  # Table 2, throughput, tuning x2
    html = page.read_text().replace("\\u002f", "/")  # plotly's JSON escapes the slash
    for title in ("tuning: ms/step", "tuning: energy per epoch", "paper: ms/step", "ours beside the published A100",
                  "paper: MFU"):
        assert title in html, title
    assert done["charts"] == 5
    assert "Cells that did not run" in html and "RuntimeError: boom" in html
    tables = parse(page)
    # the tuning fakes ran on a "Fake H100", the paper ones on the source's A100: two GPU sections, one numbering
    (key,) = [k for k in tables.tables if k.endswith("-paper-cells")]
    head, rows, _ = tables.tables[key]
    assert [r[head.index("status")] for r in rows].count("failed") == 1
    # no CPU row: the index does not say CPU rows are smoke tests (it said so of every site); the committed CPU
    # runs' site does
    assert "smoke tests of the harness" not in (tmp_path / "site" / "index.html").read_text()


def test_classic_table_cells_open_their_records(site):
    out, _ = site
    p = RESULTS / "cpu-smoke" / "classic-smoke-cpu.csv"
    df = pd.read_csv(p)
    page = parse(out / "runs" / f"{page_slug('cpu-smoke/classic-smoke-cpu')}.html")
    html = (out / "runs" / f"{page_slug('cpu-smoke/classic-smoke-cpu')}.html").read_text()
    head, rows, _ = page.tables["g0-classic-report-0"]
    # each linked cell's record is the row of that workload and stack, and its text starts with its ms/step
    for ref, text in re.findall(r'<td class="ref" data-record="(\d+)">([^<]*)</td>', html):
        row = df.iloc[int(ref)]
        assert text.startswith(f"{row['metrics.ms_per_step_mean']:.2f} ")
    assert html.count('<td class="ref"') == len(df)


def test_the_site_loads_nothing_from_outside_it(site):
    out, _ = site
    assert (out / "assets" / "plotly.min.js").stat().st_size > 1_000_000
    for page in [out / "index.html", out / "history.html", *(out / "runs").glob("*.html")]:
        text = page.read_text()
        urls = parse(page).urls
        assert urls and all(not re.match(r"^[a-z]+:", u) and not u.startswith("//") for u in urls), (page, urls)
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", text), page
        for u in urls:
            assert (page.parent / u).resolve().is_file(), (page, u)


def test_a_failed_cell_and_measured_energy_and_mfu_show(tmp_path):
    src = RESULTS / "cpu-smoke" / "classic-smoke-cpu.csv"
    df = pd.read_csv(src)
    df["reason"] = df["reason"].astype(object)
    df.loc[3, ["status", "reason"]] = ["failed", "RuntimeError: out of memory (a test's)"]
    measured = pd.DataFrame({"metrics.j_per_epoch": 10.0 + df.index, "metrics.mfu": 0.25}, index=df.index)
    df = pd.concat([df.drop(columns=list(measured), errors="ignore"), measured], axis=1)
    df.to_csv(tmp_path / "edited.csv", index=False)
    done = build_site([tmp_path / "edited.csv"], tmp_path / "site")
    page = parse(tmp_path / "site" / "runs" / "edited.html")
    head, rows, _ = page.tables["g0-classic-cells"]
    assert rows[3][head.index("status")] == "failed" and rows[3][head.index("ms/step")] == ""
    assert rows[3][head.index("reason")] == "RuntimeError: out of memory (a test's)"
    assert rows[0][head.index("J/epoch")] == "10.0" and rows[0][head.index("MFU")] == "25.0 %"
    html = (tmp_path / "site" / "runs" / "edited.html").read_text()
    assert "Cells that did not run" in html and "failed: RuntimeError: out of memory" in html
    assert "classic: energy per epoch" in html and "classic: MFU" in html
    assert done["charts"] == 5  # ms/step, s/epoch, J/epoch, MFU, Keras overhead


def test_record_of_groups_blocks_and_drops_empty_values():
    row = pd.Series({"stack": "jax", "status": "ok", "metrics.ms_per_step_mean": 1.5, "metrics.mfu": float("nan"),
                     "env.gpu.name": "", "repeats.ms_per_step_mean.values": [1.0, 2.0]})
    assert record_of(row) == {"cell": {"stack": "jax", "status": "ok"}, "metrics": {"ms_per_step_mean": 1.5},
                              "repeats": {"ms_per_step_mean.values": [1.0, 2.0]}}


def test_markdown_tables_and_inline_marks():
    lines = ["## A", "", "text *one* and **two** `x`", "| a | b |", "|---|---|", "| **1.5** | n/a [^1] |", "",
             "- item", "![plot](p.png)"]
    kinds = [b.kind for b in markdown.blocks(lines)]
    assert kinds == ["h", "p", "table", "ul"]
    [t] = markdown.tables(lines)
    assert t.head == ["a", "b"] and t.rows == [["**1.5**", "n/a [^1]"]]
    assert markdown.inline("*one* and **two** `x` <b>") == \
        "<em>one</em> and <strong>two</strong> <code>x</code> &lt;b&gt;"
    assert markdown.plain("[t](l) **1.5** B*28 rows") == "t 1.5 B*28 rows"


def test_runs_in_folders_are_found_and_named_by_folder(tmp_path):
    src = RESULTS / "cpu-smoke" / "classic-smoke-cpu.csv"
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / src.name).write_bytes(src.read_bytes())
    (tmp_path / "a" / "not-a-run.csv").write_text("x,y\n1,2\n")
    runs, warnings = find_runs([tmp_path])
    assert sorted(r.id for r in runs) == ["a/classic-smoke-cpu", "b/classic-smoke-cpu"]
    assert len(warnings) == 1 and "not-a-run.csv" in warnings[0]


def bench(*args):
    return subprocess.run([sys.executable, "-m", "bench", *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


def test_bench_site_writes_the_site_and_bad_input_is_one_line(tmp_path):
    p = bench("site", RESULTS / "rounds-smoke", "-o", tmp_path / "site")
    assert p.returncode == 0, p.stderr
    assert "1 runs, 3 pages" in p.stdout and (tmp_path / "site" / "index.html").is_file()
    (tmp_path / "empty").mkdir()
    p = bench("site", tmp_path / "empty", "-o", tmp_path / "site2")
    assert p.returncode == 2 and "no bench CSV" in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    p = bench("site", RESULTS / "rounds-smoke", "-o", tmp_path / "s3", "--history", tmp_path / "none.sqlite")
    assert p.returncode == 2 and "no history at" in p.stderr and "Traceback" not in p.stderr


def test_run_names_that_differ_in_a_character_a_file_name_drops_get_pages_of_their_own():
    """``make`` takes ``@``, ``~``, ``+`` and ``=`` in RUN; each became ``-``, so ``a100@2026-11-27`` and
    ``a100-2026-11-27`` wrote one page, linked twice from the index."""
    names = ["a100@2026-11-27", "a100-2026-11-27", "a100~2026-11-27", "a+b", "a=b", "a-b", "cpu-smoke/classic"]
    slugs = [page_slug(n) for n in names]
    assert len(set(slugs)) == len(names), slugs
    assert all(re.fullmatch(r"[A-Za-z0-9._~-]+", s) for s in slugs), slugs
    assert page_slug("cpu-smoke/classic-smoke-cpu") == "cpu-smoke--classic-smoke-cpu"  # plain names as they were
