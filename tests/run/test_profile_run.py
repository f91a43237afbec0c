"""``bench run --profile`` on the frameworks installed here (CPU): the profile runs after the timed window and the
telemetry have closed, changes no timed number, and gives every stack a trace and a valid ``profile`` block whose
categories sum to its op time; the report's section and ``bench compare --profile`` show them."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest

from bench.core.opcategories import KEYS
from bench.results.cell import Cell
from bench.results.record import read_record
from bench.results.schema import Metrics
from bench.results.schema.declare import rule_of, unit_of
from tests.conftest import has, needs_torch
from tests.helpers.cells import make_cell


def torch_cell(profile: bool) -> Cell:
    return make_cell(stack="pytorch", suite="classic", workload="mnist_mlp", task="fit", size="smoke", device="cpu",
                     profile=profile)


@needs_torch
def test_the_profile_starts_after_the_timed_window_and_the_telemetry_closed(monkeypatch, tmp_path):
    from bench.instruments.profile.window import Window
    from bench.instruments.telemetry.sampler import NullTelemetry
    from bench.instruments.timing import EpochTimer
    from bench.run import worker

    log: list[str] = []
    for cls, name, tag in ((NullTelemetry, "stop", "telemetry.stop"), (EpochTimer, "end_epoch", "timer.end_epoch"),
                           (EpochTimer, "summary", "timer.summary"), (Window, "arm", "profile.arm"),
                           (Window, "start", "profile.start"), (Window, "stop", "profile.stop")):
        original = getattr(cls, name)

        def logged(self, *a, _original=original, _tag=tag, **kw):
            log.append(_tag)
            return _original(self, *a, **kw)

        monkeypatch.setattr(cls, name, logged)
    rec = worker.fill_record(torch_cell(True), None, tmp_path)
    assert rec.status == "ok", rec.reason
    timed = [t for t in log if not t.startswith("profile")]
    assert log == [*timed, "profile.arm", "profile.start", "profile.stop"]  # every timer and telemetry call first
    assert timed[-2:] == ["telemetry.stop", "timer.summary"] and timed.count("timer.end_epoch") == 2
    assert rec.profile is not None and rec.profile.steps == 5 and (tmp_path / rec.profile.trace).is_file()
    p50 = rec.metrics.ms_per_step_p50
    assert rec.profile.ms_per_step == pytest.approx(rec.profile.wall_ms / 5)
    assert rec.profile.slowdown == (None if p50 is None else pytest.approx(rec.profile.ms_per_step / p50))
    assert rec.profile.execution_differs is None  # torch on a CPU
    # kineto's own ERROR lines reach the block (on a machine without a CUDA driver torch 2.13.0's kineto logs
    # 'DeviceProperties.cpp:50] gpuGetDeviceCount failed with code 35' into the trace)
    assert all(w.startswith(("error: ", "warning: ")) for w in rec.profile.warnings or [])


@needs_torch
def test_the_timed_record_is_on_disk_before_the_profile_starts(monkeypatch, tmp_path):
    """What the profile might lose (its process killed for time or memory) is written first: the record with every
    timed number, its profile unfinished; the worker's final record then replaces it."""
    from bench.instruments import profile
    from bench.instruments.profile.window import Window
    from bench.run import worker

    out = tmp_path / "cell.json"
    seen: list[dict] = []
    arm = Window.arm

    def arm_after_reading(self):
        seen.append(read_record(out))
        arm(self)

    monkeypatch.setattr(Window, "arm", arm_after_reading)
    rec = worker.fill_record(torch_cell(True), None, tmp_path, out)
    assert rec.status == "ok" and rec.profile is not None and rec.profile.steps == 5 and rec.profile.reason is None
    assert len(seen) == 1 and seen[0]["status"] == "ok" and seen[0]["profile"] == {"reason": profile.UNFINISHED}
    assert seen[0]["metrics"] == rec.metrics.model_dump(exclude_unset=True)
    assert f"profile: none ({profile.UNFINISHED})" in seen[0]["notes"]
    assert not any(n.startswith("profile: none") for n in rec.notes)


def measured_metrics() -> set[str]:
    """The metrics a clock (or a power meter) reading gives, from the schema's declarations: those a repeated cell
    aggregates as a median or derives from them, and the lists of seconds (each epoch's)."""
    return {name for name, f in Metrics.model_fields.items()
            if rule_of(f) in ("median", "derived") or unit_of(f) == "s"}


@needs_torch
def test_a_profiled_cell_records_what_an_unprofiled_one_does(tmp_path):
    """Everything the cell measures but its clock readings is equal with and without a profile: the same
    barriers and clock reads (the profile's own are not the timer's), steps, losses, parameters, settings."""
    from bench.run import worker

    plain = worker.fill_record(torch_cell(False), None, tmp_path).model_dump(exclude_unset=True)
    profiled = worker.fill_record(torch_cell(True), None, tmp_path).model_dump(exclude_unset=True)
    assert "profile" not in plain and profiled["profile"]["steps"] == 5
    timed = measured_metrics()
    assert {"ms_per_step_mean", "fit_call_s", "fit_call_s_per_epoch", "fit_epoch_s", "fit_epoch_s_mean"} <= timed
    assert set(plain["metrics"]) == set(profiled["metrics"])
    assert {k: v for k, v in plain["metrics"].items() if k not in timed} == \
           {k: v for k, v in profiled["metrics"].items() if k not in timed}
    assert plain["history"] == profiled["history"] and plain["model"] == profiled["model"]
    assert plain["settings"] == profiled["settings"] and plain["cell_id"] == profiled["cell_id"]


#: The stacks whose frameworks are installed here, each profiled by its framework's own profiler (keras2-tf needs
#: tf-keras, which only its image holds: the Docker e2e test profiles it).
NATIVE = [s for s, ok in (("pytorch", has("torch")), ("jax", has("jax") and has("flax")),
                          ("keras3-jax", has("keras") and has("jax")), ("keras3-torch", has("keras") and has("torch")),
                          ("keras3-tf", has("keras") and has("tensorflow"))) if ok]


def bench(*args, timeout=900):
    return subprocess.run([sys.executable, "-m", "bench", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def profiled_run(tmp_path_factory):
    if not NATIVE:
        pytest.skip("no framework installed")
    out = tmp_path_factory.mktemp("profiled")
    stacks = [a for s in NATIVE for a in ("--stack", s)]
    p = bench("run", "--device", "cpu", "--out", str(out), "--workload", "mnist_mlp", "--profile", *stacks)
    return out, p


@pytest.mark.parametrize("stack", NATIVE)
def test_every_native_stack_profiles_a_smoke_cell(profiled_run, stack):
    out, p = profiled_run
    assert p.returncode == 0, p.stdout + p.stderr
    rec = read_record(out / stack / f"{stack}__classic__mnist_mlp__fit__smoke__default.json")
    prof = rec["profile"]
    assert "reason" not in prof, prof.get("reason")
    assert prof["device"] == "cpu" and prof["steps"] == 5 and prof["warmup_steps"] == 1 and prof["steps_cap"] == 10
    assert all(w.startswith(("error: ", "warning: ")) for w in prof["warnings"])
    assert prof.get("execution_differs") is None  # on a CPU nothing changes how the steps execute
    assert set(prof["categories"]) == set(KEYS)
    assert sum(prof["categories"].values()) == pytest.approx(prof["op_ms"], rel=1e-9)
    assert 0 < prof["device_busy_fraction"] <= 1 and prof["host_fraction"] == pytest.approx(
        1 - prof["device_busy_fraction"])
    assert prof["categories"]["matmul_conv"] > 0 and prof["top_ops"]
    assert prof["window_ms"] > 0 and prof["wall_ms"] == pytest.approx(prof["window_ms"], rel=0.25, abs=2.0)
    trace = out / prof["trace"]
    assert trace.parent == out / stack and prof["trace_bytes"] == trace.stat().st_size < 5 * 2**20
    events = json.loads(gzip.decompress(trace.read_bytes()))["traceEvents"]
    assert any(e.get("name") == "dlbench.profiled_steps" for e in events)
    if stack in ("pytorch", "keras3-torch"):
        assert prof["profiler"].startswith("torch.profiler") and "tensorboard" not in prof
    else:
        assert list((out / prof["tensorboard"]).rglob("*.xplane.pb"))
    assert prof["cost_s"] < 0.5 * rec["process"]["wall_s"]  # the profile costs at most half the cell


def test_the_collector_report_and_compare_show_the_profiles(profiled_run, tmp_path):
    out, p = profiled_run
    assert p.returncode == 0, p.stdout + p.stderr
    csv = tmp_path / "run.csv"
    assert bench("collect", str(out), "-o", str(csv), "--no-history").returncode == 0
    assert ".trace.json" not in csv.read_text().replace("trace.json.gz", "")  # only the path, never a trace
    r = bench("report", str(csv), "-o", str(tmp_path))
    assert r.returncode == 0, r.stderr
    report = (tmp_path / "report.md").read_text()
    assert "## Where the time goes" in report and "### mnist_mlp fit" in report
    assert "Largest difference:" in report and (tmp_path / "plots" / "run" / "where_the_time_goes.png").is_file()
    c = bench("compare", str(csv), str(csv), "--profile")
    assert c.returncode == 0, c.stderr
    assert c.stdout.count("where the time goes,") == len(NATIVE) and "idle (host)" in c.stdout


def test_a_record_without_a_profile_is_run_again_when_one_is_asked_for(profiled_run):
    out, _ = profiled_run
    stack = NATIVE[0]
    again = bench("run", "--device", "cpu", "--out", str(out), "--workload", "mnist_mlp", "--profile",
                  "--stack", stack)
    assert "already ok, skipped" in again.stdout
    path = out / stack / f"{stack}__classic__mnist_mlp__fit__smoke__default.json"
    rec = json.loads(path.read_text())
    del rec["profile"]
    path.write_text(json.dumps(rec))
    assert "already ok" in bench("run", "--device", "cpu", "--out", str(out), "--workload", "mnist_mlp",
                                 "--stack", stack).stdout
    rerun = bench("run", "--device", "cpu", "--out", str(out), "--workload", "mnist_mlp", "--profile",
                  "--stack", stack)
    assert "profile None, not 'a profile (--profile)'" in rerun.stdout and "profile" in read_record(path)
