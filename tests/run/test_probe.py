"""The measured GEMM peak behind ``mfu_measured`` is keyed by the software it was measured under as well as the GPU:
the NVIDIA driver, and the image's local ID (``BENCH_IMAGE_ID``; else its digest, ``BENCH_IMAGE_DIGEST``) or, without
either, the framework and CUDA library versions (every installed ``nvidia-*`` distribution and XLA's CUDA plugin among
them). After an image rebuild or a driver change the saved peak is "not measured yet": a record gets null with that
reason, and the next run measures it again; tagging or pushing the image changes nothing. Fakes: NVML
(``two_gpu_pynvml``), the installed distributions, the image's ID and digest, the GEMM subprocess, Docker and compose
(for the Makefile)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import types
from pathlib import Path

import pytest

from bench.instruments import environment
from bench.run import peaks, probe
from tests.helpers.gpu_host import DRIVER, PACKAGES, FakeHost


@pytest.fixture
def host(monkeypatch, tmp_path):
    return FakeHost(monkeypatch, tmp_path)


def test_the_key_holds_the_driver_the_image_and_the_gemm_libraries_only():
    key = peaks.software_identity(DRIVER, "sha256:one", PACKAGES)
    assert key == {"image": "sha256:one", "driver": DRIVER,
                   "packages": {"nvidia-cublas": "13.0.2.14", "torch": "2.13.0", "triton": "3.5.0"}}
    assert peaks.same_software(key, key) == (True, "")
    ok, why = peaks.same_software(key, None)  # a file saved before the key existed
    assert not ok and "before" in why


def test_a_peak_measured_under_this_driver_and_image_is_used(host):
    line = host.ensure()
    assert "measured the GEMM peak" in line and len(host.calls) == 3
    saved = json.loads((host.results / "doctor" / "pytorch-gpu.json").read_text())
    assert saved["software"] == peaks.software_identity(DRIVER, "sha256:one", PACKAGES)
    m = host.record_mfu()
    assert m["mfu_measured"] == pytest.approx(0.5) and "bf16" in m["measured_peak_source"]
    assert "already" in host.ensure() and host.calls == []  # the same GPU, driver and image: kept


def test_after_an_image_rebuild_the_peak_is_not_measured_yet_and_is_measured_again(host):
    """The old code kept the peak of the image before the rebuild (its cache was keyed by stack, flavor and GPU)."""
    host.ensure()
    host.image("sha256:two")  # make build again: a new image ID
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


def test_pushing_the_image_keeps_its_peak_and_the_record_keeps_the_registry_digest(host):
    """make push fills RepoDigests of an unchanged image, so make passes another BENCH_IMAGE_DIGEST from then on: the
    old key (the digest) measured the peak again and one image's records carried two keys. The ID decides."""
    host.ensure()
    host.image("sha256:one", digest="ghcr.io/o/dlbench/pytorch@sha256:pushed")
    assert host.record_mfu()["mfu_measured"] == pytest.approx(0.5)
    assert "already" in host.ensure() and host.calls == []
    assert environment.capture()["image_digest"] == "ghcr.io/o/dlbench/pytorch@sha256:pushed"  # provenance as before
    assert environment.capture()["image_id"] == "sha256:one"


def test_without_an_image_id_the_digest_is_the_key_as_before(host):
    """A container started without BENCH_IMAGE_ID (a Makefile before it passed one) is keyed by its digest; a doctor
    file of the previous key (``image_digest``) is read as such."""
    host.image(None, digest="sha256:one")
    key = peaks.current_software({"driver": DRIVER})
    assert key["image"] == "sha256:one"
    old = {**key, "image_digest": key["image"]}
    del old["image"]
    assert peaks.same_software(key, old) == (True, "")
    assert peaks.same_software({**key, "image": "sha256:two"}, old) == (False, "image sha256:one, not sha256:two")


def test_without_a_digest_the_framework_and_cuda_library_versions_decide(host):
    """Outside make (no BENCH_IMAGE_ID or BENCH_IMAGE_DIGEST: SkyPilot, Kubernetes, a bare checkout) the versions are
    the key: a new torch or cuBLAS is another measurement, a new NumPy is not."""
    host.image(None)
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


class FakeDistribution:
    """What ``importlib.metadata.distributions()`` yields: a name as its METADATA spells it, and a version."""

    def __init__(self, name: str, version: str):
        self.metadata, self.version = {"Name": name}, version


def fake_metadata(installed: dict[str, str]) -> types.SimpleNamespace:
    """A stand-in for ``importlib.metadata`` holding ``installed`` (METADATA name -> version)."""
    def norm(name: str) -> str:
        return name.replace("_", "-").lower()

    def version(name: str) -> str:
        found = {norm(k): v for k, v in installed.items()}
        if norm(name) not in found:
            raise PackageNotFoundError(name)
        return found[norm(name)]

    from importlib.metadata import PackageNotFoundError

    return types.SimpleNamespace(PackageNotFoundError=PackageNotFoundError, version=version,
                                 distributions=lambda: [FakeDistribution(k, v) for k, v in installed.items()])


def test_the_versions_key_holds_every_installed_gpu_runtime_distribution(monkeypatch):
    """The jax and keras2-tf GPU locks pin nvidia-cuda-nvcc-cu12 (ptxas, with which XLA compiles its GEMM kernels) and
    nvidia-nvjitlink-cu12, which the named list of environment.DISTRIBUTIONS left out of env.packages, so a new
    ptxas kept the old peak where no image ID is known; so did a CUDA 13 plugin of XLA. Every installed nvidia-*
    and jax-cuda*-plugin/pjrt distribution is now in env.packages and in the key; NVML's bindings and NumPy are not
    in the key."""
    installed = {"torch": "2.13.0", "numpy": "2.3.4", "jax": "0.10.2", "nvidia_cuda_nvcc_cu12": "12.9.86",
                 "nvidia-nvjitlink-cu12": "12.9.86", "nvidia-cublas-cu12": "12.9.1.4", "jax_cuda12_plugin": "0.10.2",
                 "jax-cuda13-pjrt": "0.10.2", "nvidia-ml-py": "13.580.82", "requests": "2.32.3"}
    monkeypatch.setattr(environment, "md", fake_metadata(installed))
    versions = environment.package_versions()
    assert versions == {"jax": "0.10.2", "torch": "2.13.0", "numpy": "2.3.4", "jax-cuda12-plugin": "0.10.2",
                        "jax-cuda13-pjrt": "0.10.2", "nvidia-cublas-cu12": "12.9.1.4",
                        "nvidia-cuda-nvcc-cu12": "12.9.86", "nvidia-ml-py": "13.580.82",
                        "nvidia-nvjitlink-cu12": "12.9.86"}
    key = peaks.software_identity(DRIVER, None, versions)["packages"]
    assert key == {k: v for k, v in versions.items() if k not in ("numpy", "nvidia-ml-py")}
    newer = peaks.software_identity(DRIVER, None, {**versions, "nvidia-cuda-nvcc-cu12": "12.9.90"})
    assert peaks.same_software(newer, peaks.software_identity(DRIVER, None, versions)) == (
        False, "nvidia-cuda-nvcc-cu12 12.9.86, not 12.9.90")


ROOT = Path(__file__).resolve().parents[2]


def test_make_passes_the_image_id_and_the_digest_to_every_cell_and_doctor_container(tmp_path):
    """make bench-<stack> and doctor-<stack> pass the local ID (the key) beside the digest (the record's provenance),
    each from docker image inspect of the stack's image; a pushed image answers another digest, the same ID."""
    docker, compose, log = tmp_path / "docker", tmp_path / "compose", tmp_path / "compose.log"
    docker.write_text('#!/bin/sh\ncase "$4" in\n  *RepoDigests*) echo "reg/x/keras3-jax@sha256:pushed";;\n'
                      '  *.Id*) echo "sha256:local";;\nesac\n')
    compose.write_text(f'#!/bin/sh\nfor a in "$@"; do echo "$a"; done >> {log}\necho END >> {log}\n')
    docker.chmod(0o755)
    compose.chmod(0o755)
    p = subprocess.run(["make", "-s", "bench-keras3-jax", "doctor-keras3-jax", "DEVICE=cpu", f"DOCKER={docker}",
                        f"COMPOSE={compose}", f"RESULTS_DIR={tmp_path / 'results'}", f"PYTHON={sys.executable}"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    runs = [r.split("\n") for r in log.read_text().split("END\n") if r]
    assert [r[r.index("bench") + 1] for r in runs] == ["run", "doctor"]
    for args in runs:
        assert "BENCH_IMAGE_ID=sha256:local" in args and "BENCH_IMAGE_DIGEST=reg/x/keras3-jax@sha256:pushed" in args


class Probes:
    """``bench.run.session.planning_probe`` faked: counts its calls (each would be a framework's process)."""

    def __init__(self, monkeypatch, caplog):
        from bench.run import session

        self.calls, self.caplog = [], caplog
        caplog.set_level(logging.INFO, logger="bench")
        monkeypatch.setattr(session, "planning_probe", lambda sid: self.calls.append(sid) or ["cuda:0"])

    def resolve(self, requested="gpu"):
        from bench.run import session

        self.calls.clear()
        self.caplog.clear()
        return session.resolve_device(requested, ["pytorch"])

    @property
    def lines(self) -> list[str]:
        """What the last ``resolve`` logged (the CLI prints it on stdout)."""
        return [r.getMessage() for r in self.caplog.records if r.name == "bench.run.session"]


def test_a_run_after_the_doctor_on_this_gpu_and_software_skips_the_probe(host, monkeypatch, caplog):
    """bench doctor (here ensure_measured_peak, the doctor's image part) recorded that the framework ran a matmul on
    this GPU under this software: bench run takes that answer and starts no probe process, and says so."""
    probes = Probes(monkeypatch, caplog)
    assert probes.resolve() == "gpu" and probes.calls == ["pytorch"]  # no doctor file yet: probed
    assert "probed" in probes.lines[0] and "no pytorch-gpu.json" in probes.lines[0]
    host.ensure()
    assert probes.resolve() == "gpu" and probes.resolve("auto") == "gpu" and probes.calls == []
    assert "probe skipped" in probes.lines[0] and "GPU-aaa" in probes.lines[0]
    assert probes.resolve("cpu") == "cpu" and probes.calls == []


@pytest.mark.parametrize("change, why", [
    (lambda host, mp: mp.setenv("CUDA_VISIBLE_DEVICES", "1"), "written on GPU GPU-aaa, not GPU-bbb"),
    (lambda host, mp: setattr(host, "driver", "590.10.01"), "other software (driver 580.65.06, not 590.10.01)"),
    (lambda host, mp: host.image("sha256:two"), "other software (image sha256:one, not sha256:two)"),
    (lambda host, mp: mp.setenv("CUDA_VISIBLE_DEVICES", ""), "keep the framework off the GPU"),
    (lambda host, mp: mp.setitem(sys.modules, "pynvml", None), "not none (NVML)"),
    (lambda host, mp: (host.results / "doctor" / "pytorch-gpu.json").write_text("{}"), "no framework GPU"),
])
def test_another_gpu_software_or_environment_than_the_doctors_is_probed(host, monkeypatch, caplog, change, why):
    probes = Probes(monkeypatch, caplog)
    host.ensure()
    change(host, monkeypatch)
    probes.resolve()
    assert probes.calls == ["pytorch"] and "probed" in probes.lines[0] and why in probes.lines[0], probes.lines


def _run_on_the_gpu(monkeypatch, tmp_path) -> tuple[int, str, list[int]]:
    """``bench run`` of one cell on the fake host's GPU, the cells themselves faked: (exit code, output, the cell
    counts ``run_cells`` was given)."""
    from click.testing import CliRunner

    from bench import cli
    from bench.run import runner, session

    ran: list[int] = []
    monkeypatch.setattr(session, "resolve_device", lambda requested, stacks: "gpu")
    monkeypatch.setattr(runner, "run_cells", lambda cells, out, **kw: ran.append(len(cells)) or [])
    r = CliRunner().invoke(cli.cli, ["run", "--stack", "pytorch", "--workload", "mnist_mlp",
                                     "--out", str(tmp_path / "run")])
    return r.exit_code, r.output, ran


def test_a_peak_folder_it_cannot_write_is_one_line_before_anything_is_measured(host, monkeypatch, tmp_path):
    """The peak goes to ``$BENCH_RESULTS_DIR/doctor`` whatever ``--out`` says: a file in its way is one line and exit
    2 before a GEMM is measured or a cell runs, where before the probe's first save raised a traceback."""
    (tmp_path / "doctor").write_text("not a folder")
    code, output, ran = _run_on_the_gpu(monkeypatch, tmp_path)
    assert code == 2 and ran == [] and host.calls == [], output
    line = [x for x in output.splitlines() if "GEMM peak" in x]
    assert len(line) == 1 and "doctor" in line[0] and "in the way" in line[0] and "Traceback" not in output


def test_a_read_only_peak_folder_that_holds_every_mode_is_fine(host, monkeypatch, tmp_path):
    """Nothing is written when the saved peak holds every mode for this GPU, driver and image: a shared, read-only
    doctor folder measured once runs its cells (the folder is checked only when a mode is to be measured)."""
    host.ensure()
    monkeypatch.setattr(probe, "unwritable", lambda folder: "Read-only file system")
    code, output, ran = _run_on_the_gpu(monkeypatch, tmp_path)
    assert code == 0 and ran == [1], output
    (tmp_path / "doctor" / "pytorch-gpu.json").unlink()  # a mode to measure: now the folder must take it
    code, output, ran = _run_on_the_gpu(monkeypatch, tmp_path)
    assert code == 2 and ran == [] and "Read-only file system" in output
