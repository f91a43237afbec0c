"""Take docs/img/site-index.png and docs/img/site-run.png: the results site built from the committed results/, in
headless Chromium (Debian's chromium and chromium-driver, with the browser test's flags), the run page with a cell's
record open.

Run from the repository root: python docs/img/site_screenshots.py (needs the collect and dev extras). The numbers are
the committed CPU runs' (2 vCPUs, synthetic data, a few batches): tests of the harness, not benchmarks.
"""

import shutil
import tempfile
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from bench.results.site.build import build_site
from tests.results.site.test_browser import CHROMEDRIVER, CHROMIUM, FLAGS

OUT = Path("docs/img")
RUN = "runs/ledger-cpu--keras-overhead-classic-smoke-cpu.html"  # 4 repeats a cell: the intervals show

site = Path(tempfile.mkdtemp(prefix="bench-site-"))
profile = tempfile.mkdtemp(prefix="bench-chromium-")
build_site([Path("results")], site)
options = webdriver.ChromeOptions()
options.binary_location = CHROMIUM
for flag in (*FLAGS, f"--user-data-dir={profile}"):
    options.add_argument(flag)
driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
try:
    driver.set_window_size(1280, 520)
    driver.get((site / "index.html").as_uri())
    driver.save_screenshot(str(OUT / "site-index.png"))
    driver.set_window_size(1400, 1000)
    driver.get((site / RUN).as_uri())
    driver.find_elements(By.CSS_SELECTOR, "#g0-classic-cells tbody tr")[4].click()  # keras3-torch mnist_cnn
    driver.execute_script("window.scrollTo(0, 0)")
    driver.save_screenshot(str(OUT / "site-run.png"))
finally:
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)
    shutil.rmtree(site, ignore_errors=True)
