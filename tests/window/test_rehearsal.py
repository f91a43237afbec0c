"""The GPU window's rehearsal (``make window-rehearse``): what window/run.sh left in ``$BENCH_WINDOW_REHEARSAL`` after
running on the CPU at smoke size in .window-venv (the GPU host's packages, window/host-packages.txt) with the carried
wheels. Each check is something that would cost GPU minutes if it first showed on the host: a part that did not
finish, a cell that failed, an instrument that crashed, a record that claims an image or versions that did not run.
Skipped unless the variable names a rehearsal (``make window-rehearse`` sets it; CI runs it).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REHEARSAL = os.environ.get("BENCH_WINDOW_REHEARSAL")
pytestmark = pytest.mark.skipif(not REHEARSAL, reason="no rehearsal: make window-rehearse runs one")
#: The parts the rehearsal ran (window/run.sh --parts; `make test` leaves out classic and tuning, docs/ci.md).
PARTS = tuple(os.environ.get("BENCH_WINDOW_PARTS", "env instrument classic tuning paper").split())
CELL_PARTS = tuple(p for p in PARTS if p in ("classic", "tuning", "paper"))
if not CELL_PARTS:
    raise ValueError(f"BENCH_WINDOW_PARTS={' '.join(PARTS)!r} runs no cell: name classic, tuning or paper too")
#: what a self-test check records when its process crashed or hung, or a framework is missing (run_child, selftest)
CRASH_MARKS = ("the check process failed", "timed out after", "is not installed in this environment")


def work() -> Path:
    return Path(str(REHEARSAL)) / "work"


def host_pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "window/host-packages.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[name] = version
    return pins


def records() -> list[dict]:
    found = [json.loads(p.read_text()) for p in (work() / "results/runs").rglob("*.json")
             if not p.name.endswith(".cell.json") and "__r" not in p.stem.rsplit("__", 1)[-1]]
    return [r for r in found if "cell_id" in r]


def test_every_part_ran_to_its_end():
    rows = [line.split("\t") for line in (work() / "parts.tsv").read_text().splitlines()]
    assert [r[0] for r in rows] == list(PARTS)
    # the instrument part exits 1 when a self-test verdict fails; on two shared cores a timing check may, so its
    # crashes are checked on their own below; every other part must have exited 0
    bad = {r[0]: r[1] for r in rows if r[1] != "0" and r[0] != "instrument"}
    assert not bad, f"parts that failed: {bad}; see {work()}/logs/"


def test_the_summary_and_the_archive_came_out():
    out = Path(str(REHEARSAL)) / "out"
    assert sorted(p.name for p in out.iterdir()) == ["summary.md", "window.tar.gz"]
    assert f"| {CELL_PARTS[0]} | 0 |" in (out / "summary.md").read_text()


@pytest.mark.skipif("instrument" not in PARTS, reason="the instrument part did not run")
def test_no_instrument_crashed():
    selftest = json.loads((work() / "results/selftest.json").read_text())
    assert set(selftest["frameworks"]) == {"torch", "jax"} and all(selftest["frameworks"].values())
    crashed = [c for c in selftest["checks"] if any(m in (c.get("reason") or "") for m in CRASH_MARKS)]
    assert not crashed, crashed
    for stack in ("pytorch", "keras3-jax"):
        fidelity = json.loads((work() / f"results/fidelity-{stack}.json").read_text())
        assert fidelity["handloop_ms_per_step"] > 0 and fidelity["cadences"]


def test_every_cell_ran_ok():
    recs = records()
    by_part = {part: [r for r in recs if r["suite"] == part] for part in CELL_PARTS}
    assert all(by_part.values()), {k: len(v) for k, v in by_part.items()}
    failed = {r["cell_id"]: r.get("reason") for r in recs if r["status"] != "ok"}
    assert not failed, failed


def test_the_capped_full_size_inputs_ran_as_the_gpu_runs_them():
    """The GPU's cells name their capped inputs in their ids (epochs, samples, steps): the rehearsal runs the same
    options, with smaller values, so those ids' code paths have run before a GPU minute is spent."""
    ids = [r["cell_id"] for r in records()]
    if "paper" in PARTS:
        assert any(i.startswith("pytorch__paper__") and "steps=2" in i for i in ids)
    if "classic" in PARTS:
        assert any("epochs=3+samples=256" in i for i in ids) and any("samples=128" in i for i in ids)
        profiled = [r for r in records() if r.get("profile")]
        assert {r["stack"] for r in profiled} == {"pytorch", "keras3-torch", "keras3-jax", "jax"}


def test_records_say_what_ran():
    pins = host_pins()
    for r in records():
        env = r["env"]
        assert env["native"] is True and env["image"] is None and env["image_flavor"] is None, r["cell_id"]
        assert env["python"].startswith("3.12.") and env["git_commit"], r["cell_id"]
        for name in ("torch", "jax", "keras", "transformers"):
            if name in env["packages"]:
                want = pins.get(name) or next(line.split("==")[1] for line in
                                              (ROOT / "window/wheels.txt").read_text().splitlines()
                                              if line.startswith(f"{name}=="))
                assert env["packages"][name] == want, (r["cell_id"], name)


def test_a_part_cut_by_its_limit_keeps_what_ran_and_leaves_no_cell_running(tmp_path):
    """A part over its limit (WINDOW_LIMIT_<part>): window/run.sh still writes the summary and the archive, the cell
    that was running is stopped (bench records it on the SIGTERM) and no process of the window outlives it."""
    venv = Path(str(REHEARSAL)).parent / ".window-venv" / "bin"
    # 12 s lands inside a cell (the second, on a quiet 2-core VM: the cells end at ~6, ~16, ~26 s, and a machine 3x
    # slower is still inside the first): at 25 s an AMD EPYC VM had just finished the third, and no cell was cut.
    # A faster machine ended the second cell just before 12 s, and the limit fell between two cells, where none
    # runs to be stopped: then the next limit is tried, every check the same on each try.
    statuses: set[str] = set()
    for limit in ("12", "9", "16"):
        env = {**os.environ, "PATH": f"{venv}:{os.environ['PATH']}", "WINDOW_LIMIT_classic": limit}
        work, out = tmp_path / limit / "work", tmp_path / limit / "out"
        p = subprocess.run(["bash", str(ROOT / "window/run.sh"), "--device", "cpu", "--size", "smoke", "--parts",
                            "classic", "--work", str(work), "--site", str(Path(str(REHEARSAL)) / "site"), str(out)],
                           env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 1, p.stdout + p.stderr
        assert (work / "parts.tsv").read_text().split("\t")[:2] == ["classic", "124"]
        assert sorted(x.name for x in out.iterdir()) == ["summary.md", "window.tar.gz"]
        left = subprocess.run(["pgrep", "-f", str(work)], capture_output=True, text=True).stdout.split()
        assert not left, f"processes of the cut part still running: {left}"
        statuses = {json.loads(x.read_text()).get("status") for x in (work / "results/runs").rglob("*.json")
                    if not x.name.endswith(".cell.json") and "repeats" not in x.parts}
        if statuses - {"ok"}:
            break
    assert statuses - {"ok"}, f"no record of the cell the limit stopped: {statuses}"
