"""The measured GEMM peak behind ``mfu_measured`` is keyed by the software it was measured under as well as the GPU:
the NVIDIA driver, and the image's digest (``BENCH_IMAGE_DIGEST``) or, without one, the framework and CUDA library
versions. After an image rebuild or a driver change the saved peak is "not measured yet": a record gets null with
that reason, and the next run measures it again. Fakes: NVML (``two_gpu_pynvml``), the installed versions, the
digest, the GEMM subprocess."""

from __future__ import annotations

import json
import os
import sys

import pytest

from bench.results.schema import Record
from bench.run import environment, probe
from tests.run.engines.test_gpu_path import two_gpu_pynvml

PACKAGES = {"torch": "2.13.0", "nvidia-cublas": "13.0.2.14", "triton": "3.5.0", "numpy": "2.3.4", "nvidia-ml-py": "13"}
DRIVER = "580.65.06"


class FakeHost:
    """One GPU host whose driver, installed versions and image digest a test changes between runs, and whose GEMM
    subprocess answers 700 / 50 / 350 TFLOP/s (bf16 / fp32 / tf32), counting its calls."""

    def __init__(self, monkeypatch, tmp_path):
        self.monkeypatch, self.results, self.calls = monkeypatch, tmp_path, []
        self.driver, self.packages = DRIVER, dict(PACKAGES)
        monkeypatch.setitem(sys.modules, "pynvml", self.nvml())
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        monkeypatch.setattr(environment, "package_versions", lambda: dict(self.packages))
        monkeypatch.setattr(probe, "probe_gpus", lambda s: ["cuda:0"])
        monkeypatch.setattr(probe, "measure_gemm", self.measure)
        monkeypatch.setenv("BENCH_RESULTS_DIR", str(tmp_path))
        monkeypatch.setenv("BENCH_FLAVOR", "gpu")
        self.digest("sha256:one")

    def nvml(self):
        nv = two_gpu_pynvml()
        nv.nvmlSystemGetDriverVersion = lambda: self.driver
        return nv

    def digest(self, value: str | None) -> None:
        if value is None:
            self.monkeypatch.delenv("BENCH_IMAGE_DIGEST", raising=False)
        else:
            self.monkeypatch.setenv("BENCH_IMAGE_DIGEST", value)

    def measure(self, stack, dtype, tf32):
        self.calls.append((dtype, tf32))
        return (700.0 if dtype == "bfloat16" else 350.0 if tf32 else 50.0), ""

    def ensure(self) -> str:
        self.calls.clear()
        return probe.ensure_measured_peak("pytorch", self.results, "gpu")

    def record_mfu(self) -> dict:
        """A bf16 cell's record captured on this host now (``environment.capture``'s parts), with MFU added."""
        from bench.run.worker import add_mfu

        env = {"gpu": environment.gpu_info(), "packages": environment.package_versions(),
               "image_digest": os.environ.get("BENCH_IMAGE_DIGEST")}
        r = Record.model_validate({"stack": "pytorch", "device": "gpu", "env": env,
                                   "settings": {"precision": "bfloat16"},
                                   "metrics": {"flops_per_step": 350e12, "ms_per_step_mean": 1000.0}})
        add_mfu(r)
        return r.metrics.model_dump(exclude_unset=True)


@pytest.fixture
def host(monkeypatch, tmp_path):
    return FakeHost(monkeypatch, tmp_path)


def test_the_key_holds_the_driver_the_digest_and_the_gemm_libraries_only():
    key = probe.software_identity(DRIVER, "sha256:one", PACKAGES)
    assert key == {"image_digest": "sha256:one", "driver": DRIVER,
                   "packages": {"nvidia-cublas": "13.0.2.14", "torch": "2.13.0", "triton": "3.5.0"}}
    assert probe.same_software(key, key) == (True, "")
    ok, why = probe.same_software(key, None)  # a file saved before the key existed
    assert not ok and "before" in why


def test_a_peak_measured_under_this_driver_and_image_is_used(host):
    line = host.ensure()
    assert "measured the GEMM peak" in line and len(host.calls) == 3
    saved = json.loads((host.results / "doctor" / "pytorch-gpu.json").read_text())
    assert saved["software"] == probe.software_identity(DRIVER, "sha256:one", PACKAGES)
    m = host.record_mfu()
    assert m["mfu_measured"] == pytest.approx(0.5) and "bf16" in m["measured_peak_source"]
    assert "already" in host.ensure() and host.calls == []  # the same GPU, driver and image: kept


def test_after_an_image_rebuild_the_peak_is_not_measured_yet_and_is_measured_again(host):
    """The old code kept the peak of the image before the rebuild (its cache was keyed by stack, flavor and GPU)."""
    host.ensure()
    host.digest("sha256:two")  # make build again: a new image ID
    m = host.record_mfu()
    assert m["mfu_measured"] is None
    assert "no measurement for this image and driver yet" in m["measured_peak_source"]
    assert "image sha256:one, not sha256:two" in m["measured_peak_source"]
    line = host.ensure()
    assert len(host.calls) == 3 and "again: image sha256:one, not sha256:two" in line
    assert host.record_mfu()["mfu_measured"] == pytest.approx(0.5)


def test_after_a_driver_change_the_peak_is_not_measured_yet_and_is_measured_again(host):
    host.ensure()
    host.driver = "590.10.01"
    m = host.record_mfu()
    assert m["mfu_measured"] is None and f"driver {DRIVER}, not 590.10.01" in m["measured_peak_source"]
    assert "again: driver" in host.ensure() and len(host.calls) == 3
    assert host.record_mfu()["mfu_measured"] == pytest.approx(0.5)


def test_without_a_digest_the_framework_and_cuda_library_versions_decide(host):
    """Outside make (no BENCH_IMAGE_DIGEST: SkyPilot, Kubernetes, a bare checkout) the versions are the key: a
    new torch or cuBLAS is another measurement, a new NumPy is not."""
    host.digest(None)
    host.ensure()
    host.packages["numpy"] = "2.4.0"
    assert host.record_mfu()["mfu_measured"] == pytest.approx(0.5)
    assert "already" in host.ensure()
    host.packages["nvidia-cublas"] = "13.1.0.3"
    m = host.record_mfu()
    assert m["mfu_measured"] is None and "nvidia-cublas 13.0.2.14, not 13.1.0.3" in m["measured_peak_source"]
    assert "again: nvidia-cublas" in host.ensure() and len(host.calls) == 3


def test_a_file_saved_before_the_key_existed_is_not_used_and_is_measured_again(host):
    gpu = environment.gpu_info()
    path = host.results / "doctor" / "pytorch-gpu.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"part": "image", "gpu": {"name": gpu["name"], "uuid": gpu["uuid"]},
                                "measured_tflops": {"bf16": 650.0, "fp32": 45.0, "tf32": 300.0}}))
    m = host.record_mfu()
    assert m["mfu_measured"] is None and "no measurement for this image and driver yet" in m["measured_peak_source"]
    assert "again" in host.ensure() and len(host.calls) == 3
    assert host.record_mfu()["mfu_measured"] == pytest.approx(0.5)
