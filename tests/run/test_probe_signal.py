"""The measured GEMM peak survives a signal: each mode is saved in ``results/doctor/<stack>-<flavor>.json`` as soon as
it is measured (``bench.run.peaks.peak_writer``), by ``bench run``'s ``ensure_measured_peak`` and by ``bench doctor
--out``, so a SIGTERM or SIGINT (``docker compose`` stop, Ctrl-C, an eviction, a timeout) between two modes loses none
measured before it, and the next run measures only the rest. The file is whole and true at every moment: its modes
were each measured on its GPU under its software, or are absent. Fakes: NVML, the installed versions, the image ID and
the GEMM subprocess (``FakeHost``)."""

from __future__ import annotations

import functools
import json
import os
import signal

import pytest

from bench import cli
from bench.core import interrupt
from bench.run import peaks, probe
from tests.helpers.gpu_host import FakeHost


@pytest.fixture
def host(monkeypatch, tmp_path):
    return FakeHost(monkeypatch, tmp_path)


def stop_at_third_mode(host: FakeHost, monkeypatch, exc: BaseException) -> None:
    """The GEMM subprocess answers as ``host``'s, but the third mode (tf32) is stopped by ``exc``."""
    def measure(stack, dtype, tf32):
        if len(host.calls) == 2:
            raise exc
        return FakeHost.measure(host, stack, dtype, tf32)

    monkeypatch.setattr(probe, "measure_gemm", measure)


def saved(host: FakeHost) -> dict:
    return json.loads((host.results / "doctor" / "pytorch-gpu.json").read_text())


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), interrupt.Interrupted(signal.SIGTERM)], ids=repr)
def test_a_signal_after_two_modes_keeps_them_and_the_next_run_measures_only_the_rest(host, monkeypatch, exc):
    """The old code saved the file once, after the last mode: a signal during tf32 lost bf16 and fp32 too."""
    stop_at_third_mode(host, monkeypatch, exc)
    with pytest.raises(type(exc)):
        host.ensure()
    file = saved(host)
    assert file["measured_tflops"] == {"bf16": 700.0, "fp32": 50.0}  # tf32 absent, not null
    assert [c["name"] for c in file["checks"]] == ["pytorch: GPU", "pytorch: GEMM bf16", "pytorch: GEMM fp32"]
    assert file["software"] == peaks.current_software({"driver": host.driver})
    assert host.record_mfu()["mfu_measured"] == pytest.approx(0.5)  # the bf16 peak is usable at once
    monkeypatch.setattr(probe, "measure_gemm", host.measure)
    line = host.ensure()
    assert host.calls == [("float32", True)] and "tf32 350.0" in line
    assert saved(host)["measured_tflops"] == {"bf16": 700.0, "fp32": 50.0, "tf32": 350.0}
    assert "already" in host.ensure() and host.calls == []


def test_a_reader_sees_a_whole_file_of_one_gpu_and_software_at_every_moment(host, monkeypatch):
    """After a driver change every mode is measured again; the file holds the old driver's three modes until the first
    new one is saved, then only the new driver's, never a mix under either key."""
    host.ensure()
    host.driver = "590.10.01"
    seen = []

    def measure(stack, dtype, tf32):
        file = saved(host)
        seen.append((file["software"]["driver"], file["measured_tflops"]))
        return {"bfloat16": 710.0, "float32": 360.0 if tf32 else 55.0}[dtype], ""

    monkeypatch.setattr(probe, "measure_gemm", measure)
    host.ensure()
    old = {"bf16": 700.0, "fp32": 50.0, "tf32": 350.0}
    assert seen == [("580.65.06", old), ("590.10.01", {"bf16": 710.0}), ("590.10.01", {"bf16": 710.0, "fp32": 55.0})]
    assert saved(host)["measured_tflops"] == {"bf16": 710.0, "fp32": 55.0, "tf32": 360.0}


def test_a_signal_while_a_mode_is_saved_is_held_until_the_file_is_whole(host, monkeypatch):
    """SIGTERM arriving inside the write: the file gets the mode just measured, then the signal stops the run."""
    write = peaks.save
    first = []

    def save_with_signal(*args, **kwargs):
        if not first:
            first.append(1)
            os.kill(os.getpid(), signal.SIGTERM)
        write(*args, **kwargs)

    monkeypatch.setattr(peaks, "save", save_with_signal)
    with interrupt.handling(), pytest.raises(interrupt.Interrupted):
        host.ensure()
    assert host.calls == [("bfloat16", False)] and saved(host)["measured_tflops"] == {"bf16": 700.0}


def test_bench_doctor_saves_each_mode_as_it_is_measured(host, monkeypatch):
    """``bench doctor --out`` (make doctor, the GPU window): SIGTERM during tf32 exits 143 with bf16 and fp32 saved."""
    stop_at_third_mode(host, monkeypatch, interrupt.Interrupted(signal.SIGTERM))
    monkeypatch.setattr(probe, "image_checks", functools.partial(probe.image_checks, measure=probe.measure_gemm))
    out = host.results / "doctor" / "pytorch-gpu.json"
    with pytest.raises(SystemExit) as stopped:
        cli.main(["doctor", "--stack", "pytorch", "--device", "gpu", "--out", str(out)])
    assert stopped.value.code == 143
    assert saved(host)["measured_tflops"] == {"bf16": 700.0, "fp32": 50.0}
    assert host.record_mfu()["mfu_measured"] == pytest.approx(0.5)


def test_a_failed_gpu_probe_keeps_the_peak_measured_before(host, monkeypatch):
    """A later check that measures nothing (the framework cannot reach the GPU this time) writes its failed check
    beside the peak measured before, for that GPU and software, not over it (before: a file with the check alone)."""
    def no_tf32(stack, dtype, tf32):
        return (None, "out of memory") if tf32 else host.measure(stack, dtype, tf32)

    monkeypatch.setattr(probe, "measure_gemm", no_tf32)
    host.ensure()  # tf32 failed (saved as None): the next run measures it again, and probes the GPU first

    def unreachable(stack):
        raise RuntimeError("CUDA error: no CUDA-capable device is detected")

    monkeypatch.setattr(probe, "probe_gpus", unreachable)
    line = host.ensure()
    assert "nothing measured (CUDA error: no CUDA-capable device is detected)" in line and "TFLOP/s" not in line
    file = saved(host)
    assert [c["state"] for c in file["checks"]] == ["fail"] and "no CUDA-capable" in file["checks"][0]["value"]
    assert file["measured_tflops"] == {"bf16": 700.0, "fp32": 50.0, "tf32": None}
    assert file["software"] == peaks.current_software({"driver": host.driver})
    assert host.record_mfu()["mfu_measured"] == pytest.approx(0.5)  # still matched to the records of this GPU
    # the framework did not reach the GPU this time: a run must probe it again, not take the old file's word
    assert "framework_gpu" not in file and probe.recorded_gpus("pytorch", host.results, "gpu")[0] is None
