"""A GPU host for the measured GEMM peak's tests (``bench.run.peaks``, ``bench.run.probe``): fake NVML, installed
versions, image ID and digest, and GEMM subprocess (tests/run/test_probe.py, tests/run/test_probe_signal.py)."""

from __future__ import annotations

import os
import sys

from bench.instruments import environment
from bench.results.schema import Record
from bench.run import probe
from tests.helpers.fake_nvml import two_gpu_pynvml

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
        self.image("sha256:one")

    def nvml(self):
        nv = two_gpu_pynvml()
        nv.nvmlSystemGetDriverVersion = lambda: self.driver
        return nv

    def image(self, image_id: str | None, digest: str | None = None) -> None:
        """What make passes: the local ID, and the digest (the registry's once pulled or pushed, else the ID)."""
        for var, value in (("BENCH_IMAGE_ID", image_id), ("BENCH_IMAGE_DIGEST", digest or image_id)):
            if value is None:
                self.monkeypatch.delenv(var, raising=False)
            else:
                self.monkeypatch.setenv(var, value)

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
               "image_digest": os.environ.get("BENCH_IMAGE_DIGEST"), "image_id": os.environ.get("BENCH_IMAGE_ID")}
        r = Record.model_validate({"stack": "pytorch", "device": "gpu", "env": env,
                                   "settings": {"precision": "bfloat16"},
                                   "metrics": {"flops_per_step": 350e12, "ms_per_step_mean": 1000.0}})
        add_mfu(r)
        return r.metrics.model_dump(exclude_unset=True)
