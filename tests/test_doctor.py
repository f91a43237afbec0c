"""The preflight (bench.doctor) against a fake nvidia-smi and a fake docker on PATH: old driver, Hopper
with TensorFlow's PTX, a busy GPU, MIG on, no Container Toolkit, no GPU at all."""

from __future__ import annotations

import collections
import json

import pytest

from bench import doctor

FAKE_NVIDIA_SMI = """#!/bin/sh
if [ -z "$FAKE_GPU_CSV" ]; then
  echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."; exit 9
fi
case "$*" in
  *--query-gpu=*) printf '%s\\n' "$FAKE_GPU_CSV" ;;
  *--query-compute-apps=*) [ -z "$FAKE_APPS" ] || printf '%s\\n' "$FAKE_APPS" ;;
esac
"""
FAKE_DOCKER = """#!/bin/sh
case "$1 $2" in
  "version --format") echo 20.10.24 ;;
  "compose version") echo 2.29.1 ;;
  "buildx version") exit 1 ;;
  "info --format") echo /var/lib/docker ;;
  "image inspect") exit 1 ;;
  "run --rm")
    if [ -n "$FAKE_TOOLKIT" ]; then echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)"; else
      echo 'could not select device driver "" with capabilities: [[gpu]]' >&2; exit 125; fi ;;
esac
"""
A100 = "NVIDIA A100-SXM4-80GB, GPU-a100, {driver}, Enabled, {mig}, Enabled, 400.00, 400.00, 210, 1410, 1410, 1410"
H100 = "NVIDIA H100 80GB HBM3, GPU-h100, {driver}, Disabled, Disabled, Enabled, 500.00, 700.00, 345, 1980, 1980, 1980"


@pytest.fixture
def host(tmp_path, monkeypatch):
    """Fakes on PATH and plenty of disk; returns a function that runs the host checks of a scenario."""
    for name, text in (("nvidia-smi", FAKE_NVIDIA_SMI), ("docker", FAKE_DOCKER)):
        (tmp_path / name).write_text(text)
        (tmp_path / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    Usage = collections.namedtuple("Usage", "total used free")
    monkeypatch.setattr(doctor.shutil, "disk_usage", lambda p: Usage(500e9, 100e9, 400e9))

    def run(gpu_csv="", apps="", toolkit="1", device="auto", variant="gpu", stacks=doctor.DEFAULT_STACKS):
        monkeypatch.setenv("FAKE_GPU_CSV", gpu_csv)
        monkeypatch.setenv("FAKE_APPS", apps)
        monkeypatch.setenv("FAKE_TOOLKIT", toolkit)
        checks = doctor.host_checks(device, variant, list(stacks), docker="docker")
        return {c.name: c for c in checks}

    return run


def failed(checks):
    return sorted(n for n, c in checks.items() if c.state == "fail")


def test_good_gpu_host_passes(host):
    checks = host(A100.format(driver="580.65.06", mig="Disabled"), variant="gpu")
    assert failed(checks) == []
    assert checks["Docker engine"].value == "20.10.24" and checks["BuildKit"].state == "ok"
    assert checks["NVIDIA Container Toolkit"].state == "ok"
    assert checks["Persistence mode"].state == "ok" and checks["Power limit"].state == "ok"
    # 5 gpu images to build (their own parts, the tensorflow and torch layers once each) + the collector
    assert "5 gpu image(s) to build need ~30 GB" in checks["Disk for images"].value


def test_disk_need_counts_a_shared_layer_once_and_not_at_all_once_built():
    gb = lambda *a: doctor.build_bytes(*a) / 1e9  # noqa: E731
    assert gb("gpu", ["keras2-tf", "keras3-tf", "keras3-jax"], set()) == 3 * 3 + 7
    assert gb("gpu", ["keras3-tf"], {"keras2-tf"}) == 3  # the TensorFlow layer is on disk already
    assert gb("gpu", ["pytorch-cu12"], set()) == 9  # no shared layer: its whole image
    assert gb("cpu", ["pytorch", "keras3-jax"], {"keras3-torch"}) == 3 + 3 + 3  # only the tensorflow layer


def test_old_driver_fails_the_cuda_13_images_only(host):
    checks = host(A100.format(driver="535.183.01", mig="Disabled"))
    assert failed(checks) == ["Driver for keras3-torch", "Driver for pytorch"]
    assert "R580" in checks["Driver for pytorch"].fix and "CUDA 13.0" in checks["Driver for pytorch"].value
    assert checks["Driver for keras3-jax"].state == "ok"
    # plain PyTorch has a CUDA 12 stack for this driver; Keras 3 on PyTorch has none
    assert "run pytorch-cu12 instead" in checks["Driver for pytorch"].fix
    assert "instead" not in checks["Driver for keras3-torch"].fix
    cu12 = host(A100.format(driver="535.183.01", mig="Disabled"), stacks=["pytorch-cu12"])
    assert cu12["Driver for pytorch-cu12"].state == "ok" and "CUDA 12.8" in cu12["Driver for pytorch-cu12"].value


def test_hopper_needs_a_driver_that_jits_tensorflows_ptx(host):
    checks = host(H100.format(driver="550.54.15"))
    assert "TF PTX for keras3-tf" in failed(checks) and "TF PTX for keras2-tf" in failed(checks)
    assert checks["Power limit"].state == "warn" and "-pl 700" in checks["Power limit"].fix
    assert checks["Persistence mode"].state == "warn"


def test_busy_gpu_fails(host):
    checks = host(A100.format(driver="580.65.06", mig="Disabled"), apps="4242, python, 30000 MiB")
    assert failed(checks) == ["GPU not shared"] and "4242" in checks["GPU not shared"].value


def test_mig_is_a_warning_with_the_reason(host):
    checks = host(A100.format(driver="580.65.06", mig="Enabled"))
    assert failed(checks) == [] and checks["MIG"].state == "warn" and "not comparable" in checks["MIG"].fix


def test_missing_container_toolkit_fails(host):
    checks = host(A100.format(driver="580.65.06", mig="Disabled"), toolkit="")
    assert failed(checks) == ["NVIDIA Container Toolkit"]
    assert "nvidia-ctk" in checks["NVIDIA Container Toolkit"].fix


def test_no_gpu_says_what_is_used_instead(host):
    checks = host(device="auto", variant="cpu")
    assert failed(checks) == [] and checks["NVIDIA GPU"].state == "info"
    assert "CPU images and smoke size" in checks["NVIDIA GPU"].fix
    assert "Driver for pytorch" not in checks
    assert failed(host(device="gpu", variant="gpu")) == ["NVIDIA GPU"]


def test_no_docker_engine_fails_with_the_fix(host, monkeypatch, tmp_path):
    (tmp_path / "docker").write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n")
    checks = host(variant="cpu")
    assert "Docker engine" in failed(checks) and "dockerd" in checks["Docker engine"].fix


def test_main_prints_the_table_saves_json_and_exits_1_on_a_problem(host, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_GPU_CSV", A100.format(driver="535.183.01", mig="Disabled"))
    monkeypatch.setenv("FAKE_APPS", "")
    monkeypatch.setenv("FAKE_TOOLKIT", "1")
    out = tmp_path / "doctor" / "host.json"
    rc = doctor.main(["host", "--variant", "gpu", "--docker", "docker", "--out", str(out)])
    text = capsys.readouterr()
    assert rc == 1 and "✗" in text.out and "Driver for pytorch" in text.err
    saved = json.loads(out.read_text())
    assert saved["part"] == "host" and any(c["state"] == "fail" for c in saved["checks"])
    assert doctor.main(["host", "--stacks", "keras4"]) == 2


def test_image_checks_probe_then_measure_each_gemm_mode():
    calls = []

    def measure(stack, dtype, tf32):
        calls.append((stack, dtype, tf32))
        return (600.0 if dtype == "bfloat16" else 300.0 if tf32 else 50.0), ""

    checks, extra = doctor.image_checks("pytorch", "gpu", measure=measure, probe=lambda s: ["NVIDIA H100"])
    assert [c.state for c in checks] == ["ok"] * 4
    assert extra["measured_tflops"] == {"bf16": 600.0, "fp32": 50.0, "tf32": 300.0}
    assert calls == [("pytorch", "bfloat16", False), ("pytorch", "float32", False), ("pytorch", "float32", True)]


def test_image_checks_without_a_gpu():
    checks, extra = doctor.image_checks("keras3-jax", "cpu", probe=lambda s: [])
    assert [c.state for c in checks] == ["info"] and extra == {}
    checks, _ = doctor.image_checks("keras3-jax", "gpu", probe=lambda s: [])
    assert checks[0].state == "fail" and "sees no GPU" in checks[0].value

    def old_driver(stack):
        raise RuntimeError("the torch framework of stack pytorch cannot use the GPU: ... needs NVIDIA driver R580")

    checks, _ = doctor.image_checks("pytorch", "gpu", probe=old_driver)
    assert checks[0].state == "fail" and "R580" in checks[0].value


def test_gemm_measurement_runs_in_a_cell_like_process():
    """The measurement path itself, on the CPU with torch: a positive TFLOP/s from a fresh process."""
    pytest.importorskip("torch")
    value, why = doctor.measure_gemm("pytorch", "float32", False, device="cpu", n=128)
    assert why == "" and value and value > 0
