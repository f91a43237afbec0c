"""The results site in a real browser: Debian's Chromium, headless, driven by selenium through Debian's chromedriver,
opens the site built from the committed results over file:// (no server, no network) and finds no console error,
every run, every cell and the expected charts; a click on a row opens that cell's record; sorting and filtering
work; the report's classic table reads the same as report.md.

Skipped where Chromium, its driver or selenium is missing; CI (.ci/run installs them) sets BENCH_REQUIRE_BROWSER=1,
which turns the skip into a failure."""

import os
import shutil
import tempfile
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("plotly", reason="the results site needs plotly (the collect extra)")

from bench.results.report import load_runs, write_report  # noqa: E402
from bench.results.site import markdown  # noqa: E402
from bench.results.site.build import build_site  # noqa: E402
from bench.results.site.sources import page_slug  # noqa: E402
from tests.helpers.site import RESULTS, committed_csvs  # noqa: E402

CHROMIUM = os.environ.get("BENCH_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("BENCH_CHROMEDRIVER", "/usr/bin/chromedriver")
#: Chromium as root in a sandbox with no network: no sandbox, no GPU, and none of its own network traffic.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1400,1000")
OVERHEAD_PAIRS = (("jax", "keras3-jax"), ("pytorch", "keras3-torch"))


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "the selenium package (the dev extra)"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (Path(path).is_file() and os.access(path, os.X_OK)):
            return f"{path} (apt-get install chromium chromium-driver)"
    return None


@pytest.fixture(scope="module")
def browser():
    missing = _missing()
    if missing:
        if os.environ.get("BENCH_REQUIRE_BROWSER") == "1":
            pytest.fail(f"the browser test is required here (BENCH_REQUIRE_BROWSER=1) but {missing} is missing")
        pytest.skip(f"no headless browser: {missing} is not installed (.ci/run installs it)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="bench-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    build_site([RESULTS], out)
    return out


def open_page(driver, path: Path):
    """Load ``path`` over file:// and return the console's errors (none expected)."""
    driver.get_log("browser")  # what an earlier page left
    driver.get(path.as_uri())
    return [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


def expected_charts(df) -> int:
    """Charts a run's page should draw, from its CSV alone: ms/step; s/epoch (the 2017 metric, fit_call_s_per_epoch,
    or a schema-3 record's fit_s_per_epoch) where a classic row has it; J/epoch, MFU where a row has them;
    a forest plot for the Keras-overhead pairs and one for a version pair, where the two stacks share an ok cell."""
    ok = df[df["status"] == "ok"]
    def has(m: str) -> pd.Series:
        return ok[f"metrics.{m}"].notna() if f"metrics.{m}" in ok else pd.Series(False, index=ok.index)

    classic = ok["suite"] == "classic"
    n = 1 + bool((classic & (has("fit_call_s_per_epoch") | has("fit_s_per_epoch"))).any())
    n += sum(has(m).any() for m in ("j_per_epoch", "mfu"))
    cells = {s: set(zip(g["workload"], g["task"], g["variant"], strict=True)) for s, g in ok.groupby("stack")}
    n += any(cells.get(a, set()) & cells.get(b, set()) for a, b in OVERHEAD_PAIRS)
    n += any(s.split("--")[0] in cells and cells[s] & cells[s.split("--")[0]] for s in cells if "--" in s)
    return int(n)


def test_index_lists_every_run_without_console_errors(browser, site):
    from selenium.webdriver.common.by import By

    assert open_page(browser, site / "index.html") == []
    rows = browser.find_elements(By.CSS_SELECTOR, "#runs tbody tr")
    assert len(rows) == len(committed_csvs())
    browser.find_elements(By.CSS_SELECTOR, "#runs thead th")[1].click()  # date (UTC): sorts as text, oldest first
    dates = [tr.find_elements(By.TAG_NAME, "td")[1].text for tr in browser.find_elements(By.CSS_SELECTOR,
                                                                                           "#runs tbody tr")]
    assert dates == sorted(dates) and len(set(dates)) > 1
    rows = browser.find_elements(By.CSS_SELECTOR, "#runs tbody tr")
    rows[0].click()  # a row opens its run's page
    assert "/runs/" in browser.current_url and browser.find_element(By.TAG_NAME, "h1").text.startswith("Run ")


def test_each_run_page_has_its_cells_and_charts(browser, site):
    from selenium.webdriver.common.by import By

    for p in committed_csvs():
        df = pd.read_csv(p)
        assert open_page(browser, site / "runs" / f"{page_slug(f'{p.parent.name}/{p.stem}')}.html") == [], p
        assert len(browser.find_elements(By.CSS_SELECTOR, "#g0-classic-cells tbody tr")) == len(df), p
        assert len(browser.find_elements(By.CSS_SELECTOR, ".js-plotly-plot")) == expected_charts(df), p
        assert len(browser.find_elements(By.CSS_SELECTOR, ".js-plotly-plot .point")) > 0, p


def test_clicking_a_row_shows_that_cells_record(browser, site):
    from selenium.webdriver.common.by import By

    p = RESULTS / "ledger-cpu" / "keras-overhead-classic-smoke-cpu.csv"
    df = pd.read_csv(p)
    open_page(browser, site / "runs" / f"{page_slug('ledger-cpu/' + p.stem)}.html")
    panel = browser.find_element(By.ID, "record")
    assert not panel.is_displayed()
    for i in (0, 5):
        browser.find_elements(By.CSS_SELECTOR, "#g0-classic-cells tbody tr")[i].click()
        assert panel.is_displayed()
        assert panel.find_element(By.CLASS_NAME, "record-title").text == df["cell_id"].iloc[i]
        text = panel.text
        ms = float(df["metrics.ms_per_step_mean"].iloc[i])  # JSON and JavaScript print the shortest round trip, as repr
        assert f"ms_per_step_mean\n{ms!r}" in text or f"ms_per_step_mean {ms!r}" in text
        assert "ms_per_step_mean.values" in text  # the spread across repeats
    panel.find_element(By.CLASS_NAME, "close").click()
    assert not panel.is_displayed()


def test_tables_sort_and_filter(browser, site):
    from selenium.webdriver.common.by import By

    p = RESULTS / "cpu-smoke" / "classic-smoke-cpu.csv"
    df = pd.read_csv(p)
    open_page(browser, site / "runs" / f"{page_slug('cpu-smoke/' + p.stem)}.html")
    table = browser.find_element(By.ID, "g0-classic-cells")
    heads = [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
    table.find_elements(By.CSS_SELECTOR, "thead th")[heads.index("ms/step")].click()
    shown = [float(tr.find_elements(By.TAG_NAME, "td")[heads.index("ms/step")].text)
             for tr in table.find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert shown == sorted(round(v, 2) for v in df["metrics.ms_per_step_mean"])
    browser.find_element(By.CSS_SELECTOR, 'input.filter[data-table="g0-classic-cells"]').send_keys("keras3-jax")
    visible = [tr for tr in table.find_elements(By.CSS_SELECTOR, "tbody tr") if tr.is_displayed()]
    assert len(visible) == int((df["stack"] == "keras3-jax").sum()) > 0


def test_the_classic_table_reads_as_in_the_report(browser, site, tmp_path):
    from selenium.webdriver.common.by import By

    p = RESULTS / "cpu-smoke" / "classic-smoke-cpu.csv"
    [(run, df)], _ = load_runs([p])
    report = write_report([(run, df)], tmp_path)
    [classic] = [t for t in markdown.tables(report.read_text().splitlines()) if t.head[:2] == ["workload", "task"]]
    open_page(browser, site / "runs" / f"{page_slug('cpu-smoke/' + p.stem)}.html")
    table = browser.find_element(By.ID, "g0-classic-report-0")
    shown = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")] for tr in table.find_elements(By.CSS_SELECTOR,
                                                                                                   "tbody tr")]
    assert shown == [[markdown.plain(c) for c in row] for row in classic.rows]


def test_history_page_draws_the_trends(browser, site):
    import sqlite3

    from selenium.webdriver.common.by import By

    assert open_page(browser, site / "history.html") == []
    # cells (without the stack) that ran in two or more runs of one history on one machine model
    with sqlite3.connect(RESULTS / "ledger-cpu" / "history.sqlite") as conn:
        trends = conn.execute("SELECT COUNT(*) FROM (SELECT cell FROM cells WHERE status = 'ok' GROUP BY cell, "
                              "machine HAVING COUNT(DISTINCT run) >= 2)").fetchone()[0]
    assert trends > 0
    assert len(browser.find_elements(By.CSS_SELECTOR, ".js-plotly-plot")) == trends
    assert "no detectable change" in browser.find_element(By.TAG_NAME, "main").text
