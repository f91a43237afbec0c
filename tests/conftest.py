import importlib.util
import os
import sys

import pytest

os.environ.setdefault("BENCH_OFFLINE", "1")  # tests never wait on a download
# In-process Keras tests use the torch backend (the meta device builds full-size models without memory);
# TensorFlow, now installed beside keras-hub, would otherwise be Keras' default.
os.environ.setdefault("KERAS_BACKEND", "torch")
# The tests run make as a user types it. Under `make test` (pytest a job of `make -j2`) each such make inherited the
# parent's jobserver and level: it warned "jobserver unavailable" and printed "Entering directory" on stderr and
# stdout, which the tests of one-line errors and printed values read.
for _var in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"):
    os.environ.pop(_var, None)


def has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


needs_torch = pytest.mark.skipif(not has("torch"), reason="torch not installed")
needs_keras_torch = pytest.mark.skipif(not (has("torch") and has("keras")),
                                       reason="keras and torch not installed")
needs_collect = pytest.mark.skipif(not (has("pandas") and has("matplotlib") and has("tabulate")),
                                   reason="bench collect and the report need pandas, matplotlib and tabulate (the "
                                          "collect extra)")


@pytest.fixture
def fake_worker(tmp_path, monkeypatch):
    """``bench run`` spawns tests/helpers/worker.py's fake worker instead of the real one."""
    from bench.run import runner
    from tests.helpers.worker import FAKE

    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE)
    monkeypatch.setattr(runner, "WORKER", [sys.executable, str(script)])


# `make test` leaves out the unit tests listed in tests/slow.txt (marked `slow` here), `make test-full` runs them:
# docs/ci.md. `make slow-tests` rewrites the list from a whole run's own timings (BENCH_SLOW_RECORD).
SLOW_LIST = os.path.join(os.path.dirname(__file__), "slow.txt")
#: A unit test that takes at least this long (s: setup, call and teardown, alone on a 2-core CPU) is `slow`.
SLOW_S = 3.0


def slow_ids(path: str = SLOW_LIST) -> dict[str, float]:
    """tests/slow.txt's node ids -> their measured seconds (lines ``<seconds>\\t<node id>``; ``#`` comments)."""
    out = {}
    with open(path) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                seconds, nodeid = line.rstrip("\n").split("\t")
                out[nodeid] = float(seconds)
    return out


def stale_slow_ids(listed, collected) -> list[str]:
    """The ids of ``listed`` that name no test of ``collected`` (node ids) although their module was collected: a
    renamed test or parameter (its new id would run in `make test`), or a removed one."""
    modules = {n.split("::")[0] for n in collected}
    return sorted(n for n in listed if n not in collected and n.split("::")[0] in modules)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark tests/slow.txt's tests ``slow`` (before ``-m`` deselects) but those marked ``cover``, the one test of a
    path `make test` must run all the same; fail on a listed id its module no longer has."""
    slow = slow_ids()
    for item in items:
        if item.nodeid in slow and not item.get_closest_marker("cover"):
            item.add_marker(pytest.mark.slow)
    picked = any("::" in str(arg) for arg in config.args)  # tests named one by one: their modules' others not collected
    stale = [] if picked else stale_slow_ids(slow, {item.nodeid for item in items})
    if stale:
        raise pytest.UsageError(f"tests/slow.txt lists tests that are gone (make slow-tests rewrites it): {stale}")


_durations: dict[str, float] = {}


def pytest_runtest_logreport(report):
    if os.environ.get("BENCH_SLOW_RECORD"):
        _durations[report.nodeid] = _durations.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session, exitstatus):
    """With BENCH_SLOW_RECORD=<file>: write the tests of this run that took SLOW_S or more, slowest first."""
    path = os.environ.get("BENCH_SLOW_RECORD")
    if not path or exitstatus != 0:
        return
    import platform
    import subprocess
    import time

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    with open("/proc/cpuinfo") as f:
        cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), platform.processor())
    slow = sorted(((s, n) for n, s in _durations.items() if s >= SLOW_S), reverse=True)
    day = time.strftime("%Y-%m-%d", time.gmtime())
    with open(path, "w") as f:
        f.write(f"# Unit tests that took {SLOW_S:g} s or more (setup + call + teardown), measured by make slow-tests\n"
                f"# on {day} at {commit}, {os.cpu_count()} CPUs ({cpu}), the whole unit suite alone: "
                f"{sum(_durations.values()):.0f} s, these {sum(s for s, _ in slow):.0f} s.\n"
                "# `make test` leaves them out; `make test-full` runs them (docs/ci.md). `make slow-tests` rewrites "
                "this list.\n")
        f.writelines(f"{s:.1f}\t{n}\n" for s, n in slow)
