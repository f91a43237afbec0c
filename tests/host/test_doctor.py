"""The preflight (bench.host.doctor) against a fake nvidia-smi and a fake docker on PATH: old driver, Hopper
on R535 (TensorFlow's sm_90 machine code), a busy GPU, MIG on, no Container Toolkit, no GPU at all."""

from __future__ import annotations

import collections
import importlib.metadata
import importlib.util
import json
import mmap
import struct
from pathlib import Path

import pytest

from bench.core.checks import Check
from bench.core.stacks import TF_FATBIN_ARCHS
from bench.host import doctor
from bench.host.__main__ import main as host_cli
from bench.run import peaks, probe
from tests.conftest import has

FAKE_NVIDIA_SMI = """#!/bin/sh
if [ -z "$FAKE_GPU_CSV" ]; then
  echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."; exit 9
fi
case "$*" in
  *--query-gpu=*clocks*)  # the full query; FAKE_QUERY_ERROR: an old driver that lacks a field
    if [ -n "$FAKE_QUERY_ERROR" ]; then echo "$FAKE_QUERY_ERROR"; exit 2; fi
    printf '%s\\n' "$FAKE_GPU_CSV" ;;
  *--query-gpu=*) printf '%s\\n' "$FAKE_GPU_CSV" | cut -d, -f1-3 ;;  # the identity fields alone
  *--query-compute-apps=*"-i 1"*) [ -z "$FAKE_APPS_1" ] || printf '%s\\n' "$FAKE_APPS_1" ;;
  *--query-compute-apps=*"-i "*) [ -z "$FAKE_APPS" ] || printf '%s\\n' "$FAKE_APPS" ;;
  *--query-compute-apps=*)  # every GPU's: FAKE_APPS on GPU 0, FAKE_APPS_1 on GPU 1
    for a in "$FAKE_APPS" "$FAKE_APPS_1"; do [ -z "$a" ] || printf '%s\\n' "$a"; done ;;
esac
"""
FAKE_DOCKER = """#!/bin/sh
case "$1 $2" in
  "--version ") echo "${FAKE_DOCKER_VERSION:-Docker version 20.10.24, build 297e128}" ;;
  "version --format") case "$3" in
    *Client*) echo "${FAKE_CLIENT:-20.10.24}"; [ -z "$FAKE_NO_ENGINE" ] || exit 1 ;;
    *) [ -z "$FAKE_NO_ENGINE" ] || { echo "Cannot connect to the Docker daemon" >&2; exit 1; }; echo 20.10.24 ;;
  esac ;;
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

    def run(gpu_csv="", apps="", toolkit="1", device="auto", flavor="gpu", stacks=doctor.DEFAULT_STACKS,
            apps_1="", query_error=""):
        monkeypatch.setenv("FAKE_GPU_CSV", gpu_csv)
        monkeypatch.setenv("FAKE_APPS", apps)
        monkeypatch.setenv("FAKE_APPS_1", apps_1)
        monkeypatch.setenv("FAKE_QUERY_ERROR", query_error)
        monkeypatch.setenv("FAKE_TOOLKIT", toolkit)
        checks = doctor.host_checks(device, flavor, list(stacks), docker="docker")
        return {c.name: c for c in checks}

    return run


def failed(checks):
    return sorted(n for n, c in checks.items() if c.state == "fail")


def test_good_gpu_host_passes(host):
    checks = host(A100.format(driver="580.65.06", mig="Disabled"), flavor="gpu")
    assert failed(checks) == []
    assert checks["Docker engine"].value == "20.10.24" and checks["BuildKit"].state == "ok"
    assert checks["NVIDIA Container Toolkit"].state == "ok"
    assert checks["Persistence mode"].state == "ok" and checks["Power limit"].state == "ok"
    # 6 gpu images to build (their own parts, the tensorflow and torch layers once each) + the collector
    assert "6 gpu image(s) to build need ~33 GB" in checks["Disk for images"].value


def test_a_new_docker_client_without_buildx_fails_buildkit_whatever_the_engine(host, monkeypatch):
    """A Docker 28 client talking to a 20.10 engine: its ``docker build`` needs the buildx plugin (the client, not the
    engine, decides), so the check fails before make builds anything; a 20.10 client builds with BuildKit itself."""
    monkeypatch.setenv("FAKE_CLIENT", "28.2.2")
    checks = host(A100.format(driver="580.65.06", mig="Disabled"))
    assert checks["Docker engine"].value == "20.10.24" and failed(checks) == ["BuildKit"]
    assert "client 28.2.2" in checks["BuildKit"].value and "docker-buildx" in checks["BuildKit"].fix
    monkeypatch.setenv("FAKE_CLIENT", "20.10.24+dfsg1")
    assert host(A100.format(driver="580.65.06", mig="Disabled"))["BuildKit"].state == "ok"
    # an engine it cannot reach: the client still printed its version (exit 1), which still decides
    monkeypatch.setenv("FAKE_NO_ENGINE", "1")
    checks = host(A100.format(driver="580.65.06", mig="Disabled"))
    assert checks["Docker engine"].state == "fail" and checks["BuildKit"].state == "ok"
    assert "client 20.10.24+dfsg1" in checks["BuildKit"].value


def test_podmans_docker_shim_is_named_for_what_builds(host, monkeypatch):
    """Podman's ``docker`` answers a client version below 23, but buildah builds, reading no DOCKER_BUILDKIT."""
    monkeypatch.setenv("FAKE_DOCKER_VERSION", "podman version 5.2.2")
    monkeypatch.setenv("FAKE_CLIENT", "5.2.2")
    check = host(A100.format(driver="580.65.06", mig="Disabled"))["BuildKit"]
    assert check.state == "ok" and "buildah" in check.value and "built in" not in check.value


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


def test_hopper_runs_tensorflow_on_an_r535_driver(host):
    """TF 2.21's wheel holds sm_90 machine code (``TF_FATBIN_ARCHS``): an H100 on R535 needs no PTX JIT, so
    the TF stacks pass there; only the CUDA 13 images fail, for their CUDA, as on an A100."""
    checks = host(H100.format(driver="535.183.01"))
    for sid in ("keras2-tf", "keras3-tf"):
        assert checks[f"Driver for {sid}"].state == "ok" and "R525+" in checks[f"Driver for {sid}"].value
    assert failed(checks) == ["Driver for keras3-torch", "Driver for pytorch"]
    assert checks["Power limit"].state == "warn" and "-pl 700" in checks["Power limit"].fix
    assert checks["Persistence mode"].state == "warn"


def _fatbin_archs(path: Path) -> dict[str, set[int]]:
    """The ``.nv_fatbin`` section's entries of the ELF shared object ``path``: SASS (ELF, kind 2) and PTX (kind 1)
    compute capabilities x10. Fatbin containers start with magic 0xBA55ED50 (u32), version (u16), header size
    (u16), payload size (u64); each entry with kind (u16), (u16), header size (u32), payload size (u64), and the
    architecture at byte 28 -- the layout cuobjdump lists, read here because cuobjdump may be absent."""
    with path.open("rb") as f:
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)  # 1 GB for libtensorflow_cc: not read whole
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    heads = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = heads[shstrndx][4]
    out: dict[str, set[int]] = {"sass": set(), "ptx": set()}
    for name_at, _, _, _, off, size in heads:
        if data[names + name_at:data.find(b"\0", names + name_at)] != b".nv_fatbin":
            continue
        pos = off
        while pos + 16 <= off + size:
            magic, _, head, body = struct.unpack_from("<IHHQ", data, pos)
            if magic != 0xBA55ED50:
                pos += 8  # containers are 8-byte aligned
                continue
            entry, end = pos + head, pos + head + body
            while entry < end:
                kind, _, ehead, ebody = struct.unpack_from("<HHIQ", data, entry)
                out[{1: "ptx", 2: "sass"}[kind]].add(struct.unpack_from("<I", data, entry + 28)[0])
                entry += ehead + ebody
            pos = end
    return out


def test_tf_fatbin_archs_are_the_installed_wheels():
    """``TF_FATBIN_ARCHS`` (the doctor's reason to pass TF on Hopper with any R525+ driver) is what the installed
    TensorFlow 2.21.0's CUDA kernels carry."""
    spec = importlib.util.find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("tensorflow is not installed here: the image's own wheel is the one pinned")
    root = Path(list(spec.submodule_search_locations)[0])
    if importlib.metadata.version("tensorflow") != "2.21.0":
        pytest.skip(f"tensorflow {importlib.metadata.version('tensorflow')} installed, TF_FATBIN_ARCHS is 2.21.0's")
    sos = [root / "libtensorflow_framework.so.2", root / "libtensorflow_cc.so.2"]
    if not all(so.exists() for so in sos):
        pytest.skip("a CPU-only TensorFlow wheel: no CUDA kernels to read")
    for so in sos:
        archs = _fatbin_archs(so)
        assert archs == {k: set(v) for k, v in TF_FATBIN_ARCHS.items()}, so.name


def test_busy_gpu_fails(host):
    checks = host(A100.format(driver="580.65.06", mig="Disabled"), apps="4242, python, 30000 MiB")
    assert failed(checks) == ["GPU not shared"] and "4242" in checks["GPU not shared"].value


def test_mig_fails_a_gpu_run_with_the_fix(host):
    """compose's count: 1 gives the container GPU 0 by index, without MIG devices: CUDA would find no device."""
    checks = host(A100.format(driver="580.65.06", mig="Enabled"), device="gpu")
    assert failed(checks) == ["MIG"] and "sees no CUDA device" in checks["MIG"].fix
    assert "nvidia-smi -i 0 -mig 0" in checks["MIG"].fix and "not be comparable" in checks["MIG"].fix
    cpu = host(A100.format(driver="580.65.06", mig="Enabled"), device="cpu", flavor="cpu")
    assert cpu["MIG"].state == "warn"  # a CPU run does not use the GPU


def test_missing_container_toolkit_fails(host):
    checks = host(A100.format(driver="580.65.06", mig="Disabled"), toolkit="")
    assert failed(checks) == ["NVIDIA Container Toolkit"]
    assert "nvidia-ctk" in checks["NVIDIA Container Toolkit"].fix


def test_no_gpu_says_what_is_used_instead(host):
    checks = host(device="auto", flavor="cpu")
    assert failed(checks) == [] and checks["NVIDIA GPU"].state == "info"
    assert "CPU images and smoke size" in checks["NVIDIA GPU"].fix
    assert "Driver for pytorch" not in checks
    assert failed(host(device="gpu", flavor="gpu")) == ["NVIDIA GPU"]


def test_no_docker_engine_fails_with_the_fix(host, monkeypatch, tmp_path):
    (tmp_path / "docker").write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n")
    checks = host(flavor="cpu")
    assert "Docker engine" in failed(checks) and "dockerd" in checks["Docker engine"].fix


def test_main_prints_the_table_saves_json_and_exits_1_on_a_problem(host, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_GPU_CSV", A100.format(driver="535.183.01", mig="Disabled"))
    monkeypatch.setenv("FAKE_APPS", "")
    monkeypatch.setenv("FAKE_TOOLKIT", "1")
    out = tmp_path / "doctor" / "host.json"
    rc = host_cli(["doctor", "host", "--flavor", "gpu", "--docker", "docker", "--out", str(out)])
    text = capsys.readouterr()
    assert rc == 1 and "✗" in text.out and "Driver for pytorch" in text.err
    saved = json.loads(out.read_text())
    assert saved["part"] == "host" and any(c["state"] == "fail" for c in saved["checks"])
    assert host_cli(["doctor", "host", "--stacks", "keras4"]) == 2


def test_image_checks_probe_then_measure_each_gemm_mode():
    calls = []

    def measure(stack, dtype, tf32):
        calls.append((stack, dtype, tf32))
        return (600.0 if dtype == "bfloat16" else 300.0 if tf32 else 50.0), ""

    nvml = {"available": True, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-h100"}
    checks, extra = probe.image_checks("pytorch", "gpu", measure=measure, probe=lambda s: ["NVIDIA H100"],
                                        identify=lambda: nvml)
    assert [c.state for c in checks] == ["ok"] * 4
    assert extra["gpu"] == {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-h100"}
    assert extra["measured_tflops"] == {"bf16": 600.0, "fp32": 50.0, "tf32": 300.0}
    assert calls == [("pytorch", "bfloat16", False), ("pytorch", "float32", False), ("pytorch", "float32", True)]


def test_image_checks_without_a_gpu():
    checks, extra = probe.image_checks("keras3-jax", "cpu", probe=lambda s: [])
    assert [c.state for c in checks] == ["info"] and extra == {}
    checks, _ = probe.image_checks("keras3-jax", "gpu", probe=lambda s: [])
    assert checks[0].state == "fail" and "sees no GPU" in checks[0].value

    def old_driver(stack):
        raise RuntimeError("the torch framework of stack pytorch cannot use the GPU: ... needs NVIDIA driver R580")

    checks, _ = probe.image_checks("pytorch", "gpu", probe=old_driver)
    assert checks[0].state == "fail" and "R580" in checks[0].value


def test_gemm_measurement_runs_in_a_cell_like_process():
    """The measurement path itself, on the CPU with torch: a positive TFLOP/s from a fresh process."""
    pytest.importorskip("torch")
    value, why = peaks.measure_gemm("pytorch", "float32", False, device="cpu", n=128)
    assert why == "" and value and value > 0


def test_the_probes_module_entry_prints_what_the_parent_parses(monkeypatch, capsys):
    """``python -m bench.run.gpucheck``: the probe's two lines and the GEMM's one, from the module's own entry."""
    from bench.models.engines import frameworks, gemm, math_mode
    from bench.run import gpucheck

    calls = []
    monkeypatch.setattr(frameworks, "import_backend", lambda b: calls.append(("import", b)))
    monkeypatch.setattr(frameworks, "gpu_devices", lambda b: ["cuda:0"])
    monkeypatch.setattr(gemm, "gpu_matmul", lambda b: calls.append(("matmul", b)))
    monkeypatch.setattr(math_mode, "set_tf32", lambda b, mode: calls.append(("tf32", mode)))
    monkeypatch.setattr(gemm, "gemm_tflops", lambda b, dtype, n, device: calls.append((dtype, n, device)) or 1.5)
    gpucheck.main(["probe", "torch"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "IMPORTED" and json.loads(lines[1][5:]) == {"gpus": ["cuda:0"], "warnings": []}
    gpucheck.main(["gemm", "torch", "off", "float32", "128", "cpu"])
    assert capsys.readouterr().out.splitlines() == ["TFLOPS 1.5"]
    assert calls == [("import", "torch"), ("matmul", "torch"), ("import", "torch"), ("tf32", "off"),
                     ("float32", 128, "cpu")]


def test_only_processes_on_the_gpu_the_runs_use_count(host):
    """A shared 8-GPU VM: a job on GPU 1 leaves GPU 0, the one compose's count: 1 gives the runs, free."""
    two = "\n".join([A100.format(driver="580.65.06", mig="Disabled")] * 2)
    checks = host(two, apps_1="777, python, 30000 MiB")
    assert failed(checks) == [] and checks["GPU not shared"].state == "ok"
    assert "2 GPUs, the runs use GPU 0" in checks["NVIDIA GPU"].value
    busy = host(two, apps="4242, python, 30000 MiB", apps_1="777, python, 30000 MiB")
    assert failed(busy) == ["GPU not shared"] and "4242" in busy["GPU not shared"].value
    assert "777" not in busy["GPU not shared"].value


@pytest.mark.parametrize("app, default, says, advises", [
    ("1410", "1410", "application clocks 1410 MHz (the default)", True),
    ("1200", "1410", "application clocks set to 1200 MHz (-ac; default 1410 MHz)", False),
    ("[N/A]", "[N/A]", "application clocks not reported ([N/A])", True),
])
def test_clocks_line_names_locked_clocks_as_unseen_so_its_advice_cannot_loop(host, app, default, says, advises):
    """``nvidia-smi -lgc`` leaves the application clocks as they were and no --query-gpu field reads a lock back:
    after the advice is followed the query answers the same, so the line must not say the clocks are unlocked
    ("default") and must say that a lock is not seen; application clocks set with ``-ac`` are reported as set."""
    csv = A100.format(driver="580.65.06", mig="Disabled").rsplit(", ", 2)[0] + f", {app}, {default}"
    clocks = host(csv)["Clocks"]
    assert clocks.state == "info" and says in clocks.value
    assert "locked clocks (-lgc): not reported by nvidia-smi --query-gpu" in clocks.value
    if advises:
        assert "sudo nvidia-smi -lgc" in clocks.fix and "reads the same after it" in clocks.fix
    else:
        assert clocks.fix == ""


GOOD_A100 = A100.format(driver="580.65.06", mig="Disabled")


@pytest.mark.parametrize("csv, query_error, fails, warns", [
    # an error text on stdout with exit 0 (a GPU fallen off the bus): one ✗ naming what nvidia-smi said
    ("Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error", "", ["NVIDIA GPU"], []),
    # fewer fields than asked: the identity is asked alone, the state checks are one !
    ("NVIDIA A100-SXM4-80GB, GPU-a100, 580.65.06", "", [], ["GPU state"]),
    # an old driver that lacks a field: nvidia-smi refuses the whole query
    (GOOD_A100, 'Field "clocks.default_applications.graphics" is not a valid field to query.', [], ["GPU state"]),
    # placeholders where a value belongs
    ("NVIDIA A100-SXM4-80GB, GPU-a100, [N/A], Enabled, Disabled, Enabled, 400.00, 400.00, 210, 1410, 1410, 1410",
     "", ["NVIDIA GPU"], []),
    ("NVIDIA A10G, GPU-a10g, 580.65.06, Enabled, [N/A], [N/A], [Not Supported], [Not Supported], 210, 1710, "
     "[N/A], [N/A]", "", [], ["Power limit"]),
])
def test_unexpected_nvidia_smi_output_is_one_line_not_a_traceback(host, csv, query_error, fails, warns):
    checks = host(csv, query_error=query_error, device="gpu")
    assert failed(checks) == fails
    assert sorted(n for n, c in checks.items() if c.state == "warn") == warns
    if fails:
        assert "Unknown Error" in checks["NVIDIA GPU"].value or "'[N/A]'" in checks["NVIDIA GPU"].value
        assert not any(n.startswith("Driver for") for n in checks)  # no driver version to compare
    else:
        assert checks["Driver for pytorch"].state == "ok" and checks["GPU not shared"].state == "ok"
    if warns == ["GPU state"]:
        assert "MIG" not in checks and ("fields" in checks["GPU state"].value or "valid field" in
                                        checks["GPU state"].value)


def test_unlistable_gpu_processes_are_a_warning(host):
    checks = host(GOOD_A100, apps="Failed to initialize NVML: Unknown Error")
    assert checks["GPU not shared"].state == "warn" and "Unknown Error" in checks["GPU not shared"].value


def test_main_reports_garbled_nvidia_smi_output_in_the_table(host, capsys, monkeypatch):
    for k, v in (("FAKE_GPU_CSV", "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error"),
                 ("FAKE_APPS", ""), ("FAKE_APPS_1", ""), ("FAKE_QUERY_ERROR", ""), ("FAKE_TOOLKIT", "1")):
        monkeypatch.setenv(k, v)
    assert host_cli(["doctor", "host", "--device", "gpu", "--flavor", "gpu", "--docker", "docker"]) == 1
    text = capsys.readouterr()
    assert "✗  unreadable: nvidia-smi answered" in text.out and "Traceback" not in text.err


#: Run in a fresh process per framework (importing TensorFlow beside torch and JAX crashed pytest): gemm_tflops,
#: and the same matmul of random float32 inputs on the CPU, each call waited for through its own result with
#: the framework's own API, in turns; the best of each (other processes on a shared CPU only slow a run down).
GEMM_CHECK = """
import sys, time
from bench.models.engines import frameworks, gemm
backend, n, reps = sys.argv[1], 384, 20
frameworks.import_backend(backend)
if backend == "torch":
    import torch
    a, b = torch.randn(n, n), torch.randn(n, n)
    wait = lambda: (a @ b).sum().item()
elif backend == "jax":
    import jax, jax.numpy as jnp
    ka, kb = jax.random.split(jax.random.key(1))
    a, b = jax.random.normal(ka, (n, n)), jax.random.normal(kb, (n, n))
    mm = jax.jit(jnp.matmul)
    wait = lambda: mm(a, b).block_until_ready()
else:
    import tensorflow as tf
    with tf.device("/CPU:0"):
        a, b = tf.random.normal((n, n)), tf.random.normal((n, n))
    mm = tf.function(tf.matmul)  # as gemm_call: on a CPU it is ~2x slower than eager tf.matmul
    wait = lambda: mm(a, b).numpy()
wait()
def reference():
    t0 = time.perf_counter()
    for _ in range(reps):
        wait()
    return 2.0 * n**3 * reps / (time.perf_counter() - t0) / 1e12
pairs = [(gemm.gemm_tflops(backend, "float32", n=n, reps=reps, device="cpu"), reference()) for _ in range(7)]
print("TFLOPS", max(p[0] for p in pairs), max(p[1] for p in pairs))
"""
#: One thread per framework: on a busy 2-core CPU a two-thread GEMM stalls whenever one of its threads waits for
#: a core, which makes single timings vary by more than 2x.
ONE_THREAD = {"OMP_NUM_THREADS": "1", "TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1",
              "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}


@pytest.mark.parametrize("backend", ["torch", "jax", "tensorflow"])
def test_gemm_tflops_agrees_with_a_timing_that_waits_for_the_results(backend):
    """The measured peak is compute, not dispatch: on the CPU, gemm_tflops is within 2x of the same matmuls
    timed by waiting for each result (JAX reported ~300x more before: its barrier blocked on the live arrays,
    the inputs, while the results were dropped, so it timed dispatch)."""
    import os
    import subprocess
    import sys

    if not has(backend):  # not importorskip: TensorFlow would be imported into this process
        pytest.skip(f"{backend} not installed")
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": os.getcwd(), "CUDA_VISIBLE_DEVICES": "",
           "KERAS_BACKEND": backend}
    p = subprocess.run([sys.executable, "-c", GEMM_CHECK, backend], env=env, capture_output=True, text=True,
                       timeout=300)
    line = [x for x in p.stdout.splitlines() if x.startswith("TFLOPS ")]
    assert line, p.stderr[-2000:]
    ours, ref = map(float, line[0].split()[1:])
    assert ref / 2 <= ours <= ref * 2, (ours, ref)


def test_jax_barrier_waits_for_the_results_a_step_keeps():
    """The engines' JAX barrier (block_until_ready on jax.live_arrays()) waits for a step's result while the
    step keeps it (time_calls' ``out``, Keras' state variables and predict outputs)."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from bench.models.engines import frameworks

    a = jax.random.normal(jax.random.key(0), (1024, 1024))
    mm = jax.jit(jnp.matmul)
    mm(a, a).block_until_ready()
    out = mm(mm(a, a), a)
    frameworks.framework("jax").barrier("cpu")()
    assert out.is_ready()


def test_a_gpu_run_measures_its_images_peak_once_per_gpu(tmp_path):
    """The audit: make doctor's image part never ran on the cloud paths (before the images existed, or not at all),
    so mfu_measured was always null there. bench run on a GPU measures it when the results hold none for this GPU,
    and keeps one measured on the same GPU."""
    calls = []

    def checks(stack, device):
        calls.append((stack, device))
        return [Check("x: GEMM bf16", "ok", "600")], {"stack": stack, "gpu": gpu, "measured_tflops": peaks}

    peaks = {"bf16": 600.0, "fp32": 50.0, "tf32": 400.0}

    gpu = {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1"}
    nvml = {"available": True, **gpu}
    line = probe.ensure_measured_peak("pytorch", tmp_path, "gpu", checks, lambda: nvml)
    assert calls == [("pytorch", "gpu")] and "measured" in line
    saved = json.loads((tmp_path / "doctor" / "pytorch-gpu.json").read_text())
    assert saved["measured_tflops"] == peaks and saved["gpu"] == gpu
    assert "already" in probe.ensure_measured_peak("pytorch", tmp_path, "gpu", checks, lambda: nvml)
    assert len(calls) == 1
    other = {"available": True, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-2"}  # another GPU of the model
    gpu = {"name": other["name"], "uuid": other["uuid"]}
    probe.ensure_measured_peak("pytorch", tmp_path, "gpu", checks, lambda: other)
    assert len(calls) == 2


def test_a_doctor_file_with_a_failed_mode_is_not_this_gpus_measurement(tmp_path):
    """Through the ``checks`` seam the other tests fake: a file whose bf16 failed (None) is measured again."""
    gpu = {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1"}
    answers = iter([{"bf16": None, "fp32": 50.0, "tf32": 400.0}, {"bf16": 610.0, "fp32": 51.0, "tf32": 401.0}])
    calls = []

    def checks(stack, device):
        calls.append(stack)
        return [], {"stack": stack, "gpu": gpu, "measured_tflops": next(answers)}

    probe.ensure_measured_peak("pytorch", tmp_path, "gpu", checks, lambda: {"available": True, **gpu})
    line = probe.ensure_measured_peak("pytorch", tmp_path, "gpu", checks, lambda: {"available": True, **gpu})
    assert len(calls) == 2 and "already" not in line
    assert peaks.measured_peak(tmp_path, "pytorch", "gpu", gpu, "bfloat16", False)[0] == 610.0e12


def test_a_failed_gemm_mode_is_measured_again_on_the_next_run(tmp_path, monkeypatch):
    """A failed bf16 GEMM was saved as None beside fp32/tf32, and the file counted as this GPU's measurement for
    good (mfu_measured null for every bf16 cell). Only successes are kept: the next run measures bf16 again and
    re-runs nothing that succeeded. The real image_checks runs, with fakes for the framework's GPU list, NVML and
    the GEMM subprocess."""
    from bench.instruments import environment

    gpu = {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1"}
    tries: list[tuple[str, bool]] = []
    bf16 = iter([None, 610.0])

    def measure(stack, dtype, tf32):
        tries.append((dtype, tf32))
        if dtype == "bfloat16":
            value = next(bf16)
            return value, "" if value else "CUBLAS_STATUS_EXECUTION_FAILED"
        return (400.0 if tf32 else 50.0), ""

    monkeypatch.setattr(probe, "measure_gemm", measure)
    monkeypatch.setattr(probe, "probe_gpus", lambda s: ["cuda:0"])
    monkeypatch.setattr(environment, "gpu_info", lambda env=None: {"available": True, **gpu})
    probe.ensure_measured_peak("pytorch", tmp_path, "gpu")
    saved = json.loads((tmp_path / "doctor" / "pytorch-gpu.json").read_text())
    assert saved["measured_tflops"] == {"bf16": None, "fp32": 50.0, "tf32": 400.0}
    assert peaks.measured_peak(tmp_path, "pytorch", "gpu", gpu, "bfloat16", False)[0] is None
    tries.clear()
    line = probe.ensure_measured_peak("pytorch", tmp_path, "gpu")
    assert "already" not in line and tries == [("bfloat16", False)]  # fp32 / tf32 kept, not re-run
    saved = json.loads((tmp_path / "doctor" / "pytorch-gpu.json").read_text())
    assert saved["measured_tflops"] == {"bf16": 610.0, "fp32": 50.0, "tf32": 400.0}
    assert peaks.measured_peak(tmp_path, "pytorch", "gpu", gpu, "bfloat16", False)[0] == 610.0e12
    tries.clear()
    assert "already" in probe.ensure_measured_peak("pytorch", tmp_path, "gpu") and tries == []


def test_bench_run_on_a_gpu_ensures_the_measured_peak_before_its_cells(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from bench import cli
    from bench.run import runner, session

    seen = []
    monkeypatch.setattr(session, "resolve_device", lambda requested, stacks: "gpu")
    monkeypatch.setattr(probe, "ensure_measured_peak", lambda sid, root, flavor: seen.append((sid, flavor)) or "ok")
    monkeypatch.setattr(runner, "run_cells", lambda cells, out, **kw: seen.append(len(cells)) or [])
    monkeypatch.setenv("BENCH_RESULTS_DIR", str(tmp_path))
    monkeypatch.setenv("BENCH_FLAVOR", "gpu")
    r = CliRunner().invoke(cli.cli, ["run", "--stack", "pytorch", "--workload", "mnist_mlp", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert seen == [("pytorch", "gpu"), 1]  # the peak first, then the cells


def test_an_env_file_written_before_the_flavor_was_named_is_a_warning(tmp_path):
    """A .env from before BENCH_FLAVOR (BENCH_VARIANT=gpu) makes docker compose run pick the cpu images."""
    env = tmp_path / ".env"
    assert doctor.compose_env_check(env) is None  # no .env: nothing to say
    env.write_text("BENCH_VARIANT=gpu\nBENCH_DEVICE=gpu\n")
    check = doctor.compose_env_check(env)
    assert check is not None and check.state == "warn" and "make configure" in check.fix
    env.write_text("BENCH_FLAVOR=gpu\nBENCH_DEVICE=gpu\n")
    assert doctor.compose_env_check(env) is None


def test_an_out_path_it_cannot_write_is_one_line_before_any_check(tmp_path, monkeypatch, capsys):
    """make preflight with a RESULTS_DIR it cannot write ran every check, then ended in save()'s traceback."""
    (tmp_path / "file").write_text("")
    ran = []
    monkeypatch.setattr(doctor, "host_checks", lambda *a, **k: ran.append(a) or [])
    assert host_cli(["doctor", "host", "--out", str(tmp_path / "file" / "doctor" / "host.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("doctor: error: cannot write --out ") and err.count("\n") == 1 and ran == []
