"""The record's ``env`` block (``bench.instruments.environment``): framework-reported versions, the distributions and
the environment variables it names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.instruments import environment

ROOT = Path(__file__).resolve().parents[2]

#: A process that imports JAX alone (no Flax, which imports ``jax.extend`` itself), as keras3-jax's cells do.
JAX_ONLY_CODE = """
import json, sys
import jax
assert "jax.extend" not in sys.modules, "this check needs a process where nothing imported jax.extend"
from bench.instruments.environment import framework_cuda
print("FRAMEWORK_CUDA" + json.dumps(framework_cuda()))
"""


def test_jax_backend_is_read_in_a_process_that_imported_only_jax():
    """jax 0.10.2's ``import jax`` leaves ``jax.extend`` unimported: the record must still hold the platform, not
    ``AttributeError: module 'jax' has no attribute 'extend'`` (keras3-jax imports JAX without Flax)."""
    pytest.importorskip("jax")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    p = subprocess.run([sys.executable, "-c", JAX_ONLY_CODE], capture_output=True, text=True, timeout=300,
                       cwd=ROOT, env=env)
    line = next((x for x in p.stdout.splitlines() if x.startswith("FRAMEWORK_CUDA")), None)
    assert line, p.stderr[-3000:]
    jax_block = json.loads(line[len("FRAMEWORK_CUDA"):])["jax"]
    assert "error" not in jax_block, jax_block
    assert jax_block["platform"] == "cpu" and jax_block["platform_version"]


def _lock_names() -> set[str]:
    names = set()
    for lock in ROOT.glob("images/*/requirements-*.lock"):
        for line in lock.read_text().splitlines():
            if "==" in line and not line.startswith((" ", "#")):
                names.add(line.split("==")[0].strip().lower())
    return names


@pytest.mark.parametrize("name", ["jax-cuda12-pjrt", "jax-cuda12-plugin", "triton", "flax", "optax",
                                  "torchvision", "nvidia-cublas-cu12", "nvidia-cublas", "nvidia-cuda-nvcc-cu12",
                                  "nvidia-nvjitlink-cu12", "nvidia-nvjitlink", "nvidia-nccl-cu13"])
def test_the_gpu_runtime_packages_the_locks_pin_are_recorded(name):
    """The GPU runtime a record ran on: XLA's CUDA plugin, Triton, the model libraries, cuBLAS under both the
    CUDA 12 name and the CUDA 13 one (torch 2.13's lock), ptxas (nvcc) and nvJitLink, each a name some image lock
    pins: named (``DISTRIBUTIONS``) or, for NVIDIA's and XLA's CUDA plugin, every installed one (``GPU_RUNTIME``)."""
    assert name in _lock_names()
    assert name in environment.DISTRIBUTIONS or environment.GPU_RUNTIME.fullmatch(name)


def test_every_nvidia_distribution_the_locks_pin_is_recorded():
    assert all(environment.GPU_RUNTIME.fullmatch(n) for n in _lock_names() if n.startswith("nvidia-"))



@pytest.mark.parametrize("name", ["XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_ALLOCATOR",
                                  "XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_FLAGS", "TF_GPU_ALLOCATOR",
                                  "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "CUDA_DEVICE_ORDER"])
def test_the_allocator_and_device_order_variables_are_recorded(monkeypatch, name):
    monkeypatch.setenv(name, "x")
    assert name in environment.ENV_VARS
    assert environment.capture()["env_vars"][name] == "x"


BOTH_FRACTIONS = {"XLA_CLIENT_MEM_FRACTION": "0.95", "XLA_PYTHON_CLIENT_MEM_FRACTION": "0.5"}


def test_jaxlib_refuses_both_memory_fractions():
    """The fact the check rests on (jaxlib 0.10.2 jaxlib/xla_client.py): the CUDA plugin's options raise."""
    pytest.importorskip("jaxlib")
    from jaxlib import xla_client

    with pytest.MonkeyPatch.context() as mp:
        for k, v in BOTH_FRACTIONS.items():
            mp.setenv(k, v)
        with pytest.raises(ValueError, match="XLA_PYTHON_CLIENT_MEM_FRACTION"):
            xla_client.generate_pjrt_gpu_plugin_options()


def test_both_memory_fractions_are_a_problem_only_for_a_jax_gpu_cell():
    from bench.core.stacks import get_stack
    from bench.run.cellenv import gpu_env_problem

    line = gpu_env_problem(get_stack("keras3-jax"), "gpu", BOTH_FRACTIONS)
    assert line and "XLA_CLIENT_MEM_FRACTION=0.95" in line and "XLA_PYTHON_CLIENT_MEM_FRACTION=0.5" in line
    assert "\n" not in line
    assert gpu_env_problem(get_stack("jax"), "gpu", BOTH_FRACTIONS)
    assert gpu_env_problem(get_stack("keras3-jax"), "cpu", BOTH_FRACTIONS) is None
    assert gpu_env_problem(get_stack("pytorch"), "gpu", BOTH_FRACTIONS) is None
    assert gpu_env_problem(get_stack("jax"), "gpu", {"XLA_CLIENT_MEM_FRACTION": "0.95"}) is None


def test_the_probe_fails_with_one_line_naming_both_fractions(monkeypatch):
    """make doctor / --device resolution: the JAX probe would otherwise find only the CPU (or fall back to it)."""
    from bench.core.stacks import get_stack
    from bench.run import probe

    for k, v in BOTH_FRACTIONS.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(probe.subprocess, "run", lambda *a, **k: pytest.fail("the probe ran"))
    with pytest.raises(RuntimeError) as e:
        probe.probe_gpus(get_stack("jax"))
    assert "XLA_CLIENT_MEM_FRACTION" in str(e.value) and "XLA_PYTHON_CLIENT_MEM_FRACTION" in str(e.value)


def test_a_jax_gpu_cell_fails_with_one_line_naming_both_fractions(monkeypatch):
    from bench.results.cell import Cell
    from bench.run import worker
    from bench.run.scenarios.epochs import Epochs

    for k, v in BOTH_FRACTIONS.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(worker, "capture", lambda: {"gpu": {"available": False, "reason": "no GPU here"}})
    monkeypatch.setattr(Epochs, "run", lambda *a, **k: pytest.fail("the cell ran"))
    cell = Cell(stack="keras3-jax", suite="classic", workload="mnist_mlp", task="fit", size="smoke", device="gpu")
    rec = worker.run_cell(cell)
    assert rec["status"] == "failed" and "XLA_PYTHON_CLIENT_MEM_FRACTION=0.5" in rec["reason"]
    assert "XLA_CLIENT_MEM_FRACTION=0.95" in rec["reason"] and not rec.get("traceback")


@pytest.mark.parametrize("image, native", [("dlbench/pytorch:gpu", False), (None, True), ("", True)])
def test_a_cell_outside_an_image_is_recorded_native(monkeypatch, image, native):
    """env.native: no stack image ran the cell (every image sets BENCH_IMAGE, images/Dockerfile), as in the GPU
    window; the record then claims no image and no image flavor."""
    from bench.instruments import environment

    monkeypatch.delenv("BENCH_FLAVOR", raising=False)
    if image is None:
        monkeypatch.delenv("BENCH_IMAGE", raising=False)
    else:
        monkeypatch.setenv("BENCH_IMAGE", image)
    monkeypatch.setattr(environment, "gpu_info", lambda env=None: {"available": False, "reason": "test"})
    env = environment.capture()
    assert env["native"] is native and env["image"] == image
    assert env["image_flavor"] is None


def test_the_dockerfile_sets_what_native_reads():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "images/Dockerfile").read_text()
    assert "ENV BENCH_GIT_COMMIT=${BENCH_GIT_COMMIT} BENCH_IMAGE=${BENCH_IMAGE}" in text


def test_a_container_is_known_by_the_mark_its_runtime_leaves(tmp_path):
    """Docker leaves /.dockerenv; Podman and CRI-O /run/.containerenv; a Kubernetes pod under containerd no file,
    but the kubelet's KUBERNETES_SERVICE_HOST (before, a Job's records said in_container false); a bare host none."""
    from bench.instruments.environment import in_container

    assert not in_container({}, tmp_path)
    assert in_container({"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, tmp_path)
    assert in_container({"container": "podman"}, tmp_path)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / ".containerenv").touch()
    assert in_container({}, tmp_path)
    (tmp_path / "run" / ".containerenv").unlink()
    (tmp_path / ".dockerenv").touch()
    assert in_container({}, tmp_path)


@pytest.mark.parametrize("mark", [".singularity.d", ".lock"])
def test_an_hpc_container_is_known_by_its_runtimes_mark(tmp_path, mark):
    """Apptainer/Singularity images hold /.singularity.d; enroot (Slurm's pyxis) holds /.lock at the root while a
    container runs. Before, a cell run in either recorded in_container false. A host script's SINGULARITY_CONTAINER
    (an image path it names) is no mark."""
    from bench.instruments.environment import in_container

    assert not in_container({"SINGULARITY_CONTAINER": "/scratch/pytorch.sif"}, tmp_path)
    (tmp_path / mark).mkdir() if mark.endswith(".d") else (tmp_path / mark).touch()
    assert in_container({}, tmp_path)


def test_a_singularity_oci_container_is_known_by_the_library_path_it_always_sets(tmp_path):
    """SingularityCE 4's --oci mode runs an OCI image, which holds no /.singularity.d (on a CPU nothing is bound
    there); the SINGULARITY_CONTAINER and SINGULARITY_NAME it sets a batch script may set on the host too, but its
    LD_LIBRARY_PATH always holds /.singularity.d/libs (internal/pkg/runtime/launcher/oci/process_linux.go@v4.5.1:
    371-372). Before, such a cell recorded in_container false; a host's library path, or a folder below it, is no
    mark."""
    from bench.instruments.environment import in_container

    oci = {"SINGULARITY_CONTAINER": "/tmp/oci-bundle", "SINGULARITY_NAME": "docker://python:3.11",
           "LD_LIBRARY_PATH": "/usr/local/lib:/.singularity.d/libs"}
    assert in_container(oci, tmp_path)
    assert in_container({"LD_LIBRARY_PATH": "/.singularity.d/libs"}, tmp_path)
    assert not in_container({"LD_LIBRARY_PATH": "/usr/local/cuda/lib64"}, tmp_path)
    assert not in_container({"LD_LIBRARY_PATH": "/opt/x/.singularity.d/libs"}, tmp_path)


def test_a_commit_asked_of_git_is_marked_dirty_where_the_code_that_ran_is_not_the_commits(tmp_path):
    """A cell run from a checkout with changed or new files under the package recorded HEAD's commit, as if that
    commit's code had run; a commit given in BENCH_GIT_COMMIT (an image's) is taken as given."""
    import subprocess

    from bench.core.commit import DIRTY
    from bench.instruments.environment import git_commit

    def git(*args: str) -> str:
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                              capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    git("add", "a.py")
    git("commit", "-q", "-m", "one")
    head = git("rev-parse", "HEAD")
    assert git_commit({}, tmp_path) == head
    (tmp_path / "a.py").write_text("x = 2\n")
    changed = git_commit({}, tmp_path)
    assert changed and changed.startswith(head + DIRTY + ".")
    git("checkout", "-q", "a.py")
    (tmp_path / "b.py").write_text("")
    added = git_commit({}, tmp_path)
    assert added and added.startswith(head + DIRTY + ".") and added != changed
    assert git_commit({"BENCH_GIT_COMMIT": "abc123"}, tmp_path) == "abc123"
    assert git_commit({}, tmp_path / "nowhere") is None
