"""One stack list: bench/core/stacks.py. The files that name stacks are written from it and kept current, and a
stack added through that one entry reaches the plan, compose, the Makefile's lists and the report."""

import subprocess
import sys

import pytest

from bench.core.atomic import write_json_atomic
from bench.core.stacks import DEFAULT_STACKS, IMAGE_ENV, STACKS, Stack
from bench.host import stackfiles
from bench.models.workloads import SUITES
from bench.results.collect import collect
from bench.results.record import result_path
from bench.run.plan import expand
from tests.conftest import needs_collect
from tests.helpers.records import paper_record
from tests.helpers.tables import has_cells, rows_starting

ROOT = stackfiles.ROOT


def test_generated_files_are_current():
    assert stackfiles.stale() == [], "run `make stacks`"
    p = subprocess.run([sys.executable, "-m", "bench.host", "stackfiles", "--check"], cwd=ROOT, capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr


def test_check_names_a_stale_file_and_make_stacks_rewrites_it(tmp_path):
    for lock in ROOT.glob("images/*/requirements-*.lock"):
        (tmp_path / lock.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / lock.relative_to(ROOT)).write_text(lock.read_text())
    for name, text in stackfiles.files().items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "compose.yaml").write_text("services: {}\n")
    (tmp_path / "images" / "layers" / "torch-gpu.lock").unlink()
    check = [sys.executable, "-m", "bench.host", "stackfiles", "--check", "--root", str(tmp_path)]
    p = subprocess.run(check, cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 1 and "compose.yaml is stale: run `make stacks`" in p.stderr
    assert "images/layers/torch-gpu.lock is stale" in p.stderr
    subprocess.run(check[:4] + check[5:], cwd=ROOT, check=True, capture_output=True)
    assert subprocess.run(check, cwd=ROOT).returncode == 0


def test_a_shared_layer_is_what_its_stacks_pin_identically_and_follows_a_changed_lock(tmp_path):
    """images/layers/<layer>-<flavor>.lock: the framework and its CUDA libraries, each pin verbatim (version and
    hashes) in every member's lock; a member whose lock moves a pin drops it from the layer."""
    members = {layer: [s.id for s in stacks] for layer, _, stacks in stackfiles.layers()}
    assert members == {"tensorflow": ["keras2-tf", "keras3-tf", "keras3-jax", "jax"],
                       "torch": ["keras3-torch", "pytorch"], "jax": ["keras3-jax", "jax"]}
    for layer, flavor, stacks in stackfiles.layers():
        pins = stackfiles.lock_pins((ROOT / "images" / "layers" / f"{layer}-{flavor}.lock").read_text())
        for s in stacks:
            own = stackfiles.lock_pins((ROOT / "images" / s.id / f"requirements-{flavor}.lock").read_text())
            assert all(own[n] == pin for n, pin in pins.items()), (layer, flavor, s.id)
        assert layer in pins and ("numpy" in pins) == (layer != "jax"), (layer, flavor)
    gpu = stackfiles.lock_pins((ROOT / "images" / "layers" / "tensorflow-gpu.lock").read_text())
    assert {"nvidia-cudnn-cu12", "nvidia-cublas-cu12"} <= set(gpu)
    assert gpu["tensorflow"].startswith("tensorflow==2.21.0")
    assert "torch==2.13.0 " in (ROOT / "images" / "layers" / "torch-cpu.lock").read_text()
    # a member whose lock moves a pin (here keras3-tf's numpy) takes it out of the layer: its own install has it
    for s in members["tensorflow"]:
        lock = ROOT / "images" / s / "requirements-gpu.lock"
        (tmp_path / "images" / s).mkdir(parents=True)
        text = lock.read_text()
        if s == "keras3-tf":
            numpy = stackfiles.lock_pins(text)["numpy"]
            text = text.replace(numpy, numpy.replace("==", "==9"), 1)
        (tmp_path / "images" / s / "requirements-gpu.lock").write_text(text)
    layer = stackfiles.render_layer("tensorflow", "gpu", [STACKS[s] for s in members["tensorflow"]], tmp_path)
    assert "numpy" not in stackfiles.lock_pins(layer) and "tensorflow" in stackfiles.lock_pins(layer)


def test_the_jax_sublayer_holds_what_its_stacks_share_above_the_tensorflow_layer(monkeypatch):
    """keras3-jax and jax share jax, jaxlib and (gpu) its CUDA plugins in a second layer above TensorFlow's: in it
    is each pin both locks have identically and the tensorflow layer lacks; keras2-tf and keras3-tf build none."""
    for flavor in ("cpu", "gpu"):
        sub = stackfiles.lock_pins((ROOT / "images" / "layers" / f"jax-{flavor}.lock").read_text())
        tf = stackfiles.lock_pins((ROOT / "images" / "layers" / f"tensorflow-{flavor}.lock").read_text())
        assert not set(sub) & set(tf)
        locks = [stackfiles.lock_pins((ROOT / "images" / s / f"requirements-{flavor}.lock").read_text())
                 for s in ("keras3-jax", "jax")]
        shared = {n for n, pin in locks[0].items() if locks[1].get(n) == pin}
        assert set(sub) == shared - set(tf), flavor
        assert {"jax", "jaxlib"} <= set(sub) and "flax" not in sub and "keras-hub" not in sub
    assert {"jax-cuda12-plugin", "jax-cuda12-pjrt"} <= set(
        stackfiles.lock_pins((ROOT / "images" / "layers" / "jax-gpu.lock").read_text()))
    assert [STACKS[s].build_args()["SUBLAYER"] for s in ("keras3-jax", "jax", "keras3-tf", "pytorch")] == [
        "jax", "jax", "", ""]
    # a derived stack installs its base's sublayer without shaping it
    derived = [s for s in STACKS.values() if s.base == "keras3-jax"]
    assert derived and all(s.sublayer == "jax" for s in derived)
    # a sublayer must sit on one layer
    bad = dict(STACKS, odd=Stack("odd", "odd-bench", "odd", "jax", "jax", "odd", layer="torch", sublayer="jax"))
    monkeypatch.setattr(stackfiles, "STACKS", bad)
    with pytest.raises(ValueError, match="sublayer 'jax'"):
        stackfiles.layers()


def test_no_argument_that_differs_between_stacks_on_a_layer_is_declared_above_its_step():
    """An ARG is part of the cache key of every RUN after its declaration (Docker's Dockerfile reference, "Impact on
    build caching"): one whose value differs between two stacks on one layer, declared above that layer's install
    step, would build the layer once per value, and their images would no longer share it."""
    lines = (ROOT / "images" / "Dockerfile").read_text().splitlines()
    steps = {False: next(i for i, line in enumerate(lines) if '"/tmp/layer/$LAYER-' in line),
             True: next(i for i, line in enumerate(lines) if '"/tmp/sublayer/$SUBLAYER-' in line)}
    checked = 0
    for name, _, members in stackfiles.layers():
        at = steps[members[0].sublayer == name]
        declared = {line.split()[1].split("=")[0] for line in lines[:at] if line.startswith("ARG ")}
        assert {"LAYER", "FLAVOR"} <= declared
        for arg in declared & set(members[0].build_args()):
            assert len({s.build_args()[arg] for s in members}) == 1, (name, arg)
            checked += 1
    assert checked >= 6


def test_every_stack_has_its_locks_and_one_dockerfile_takes_its_build_args():
    for s in STACKS.values():
        dockerfile = (ROOT / s.dockerfile).read_text()
        assert s.dockerfile == "images/Dockerfile", s.id
        for arg in s.build_args():
            assert f"\nARG {arg}" in dockerfile, (s.id, arg)
        assert set(s.env) <= set(IMAGE_ENV), s.id  # the image sets the stack's environment too
        assert s.imports, s.id
        for v in s.flavors:
            assert (ROOT / "images" / s.id / f"requirements-{v}.lock").is_file(), (s.id, v)
    assert {s.reference for s in STACKS.values() if s.reference} == {
        "keras2-tensorflow", "keras3-tensorflow", "keras3-jax", "keras3-torch", "pytorch"}


def test_the_cuda_12_torch_stack_is_an_extra_gpu_image():
    cu12 = STACKS["pytorch-cu12"]
    assert cu12.flavors == ("gpu",) and not cu12.default and cu12.min_driver < STACKS["pytorch"].min_driver
    assert "pytorch-cu12" not in DEFAULT_STACKS and len(DEFAULT_STACKS) == 6
    lock = (ROOT / "images" / "pytorch-cu12" / "requirements-gpu.lock").read_text()
    assert "\ntorch==2.10.0 " in lock and "nvidia-cublas-cu12==12.8" in lock and "cu13" not in lock
    assert 'image: "dlbench/pytorch-cu12:gpu"' in stackfiles.render_compose()


@pytest.fixture
def extra_stack(monkeypatch):
    """A throwaway stack added the public way: one entry in STACKS (here: a second Keras 3 JAX image)."""
    s = Stack("keras3-jax-next", "jax-next-bench", "Keras 3, JAX backend, next release", "keras", "jax",
              "Keras 3 JAX next", {"KERAS_BACKEND": "jax"}, imports=("keras", "jax"), default=False)
    monkeypatch.setitem(STACKS, s.id, s)
    return s


def test_a_new_stack_reaches_plan_compose_and_make(extra_stack):
    cells = expand([extra_stack.id], "classic", "smoke", "cpu")
    assert [c.workload for c in cells] == SUITES["classic"] and {c.stack for c in cells} == {extra_stack.id}
    compose = stackfiles.render_compose()
    assert "  jax-next-bench:\n" in compose and 'STACK: "keras3-jax-next"\n        KERAS_BACKEND: "jax"' in compose
    assert "  jax-next-bench: *gpu\n" in stackfiles.render_compose_gpu()
    mk = stackfiles.render_makevars()
    assert "keras3-jax-next" in mk.split("ALL_STACKS := ")[1].splitlines()[0]
    assert "keras3-jax-next" not in mk.split("DEFAULT_STACKS := ")[1].splitlines()[0]
    assert "service_keras3-jax-next := jax-next-bench" in mk
    assert "build_args_keras3-jax-next := --build-arg STACK=keras3-jax-next --build-arg KERAS_BACKEND=jax" in mk
    assert stackfiles.stale() == ["compose.yaml", "compose.gpu.yaml", "images/stacks.mk"]


@needs_collect
def test_a_new_stack_gets_its_column_in_the_paper_table(extra_stack, tmp_path):
    from bench.results import report

    recs = [paper_record("keras3-jax", "bert", "fit", 32, 100.0),
            paper_record(extra_stack.id, "bert", "fit", 32, 90.0)]
    run = tmp_path / "run"
    for c, r in recs:
        write_json_atomic(result_path(run, c), r)
    collect(run, tmp_path / "run.csv")
    text = report.write_report(report.load_runs([tmp_path / "run.csv"])[0], tmp_path / "out").read_text()
    head = rows_starting(text, "model", "task", "batch")[0]
    assert has_cells(text, ["Keras 3 JAX", "Keras 3 PyTorch", "Keras 3 JAX next", "Keras 3 best", "PyTorch"])
    row = rows_starting(text, "bert", "fit", "32")[0]
    # its own column, with no published value; faster, but no part of "Keras 3 best", the published three's
    assert "90.00 / NA" in row and any(c.startswith("**100.00** / ") for c in row)
    # a stack that ran no paper row and is not a default one gets no column
    assert "PyTorch 2.10 (CUDA 12.8)" not in head


def test_make_refuses_a_cpu_build_of_a_gpu_only_stack_and_builds_its_gpu_image_with_its_args():
    make = ["make", "-n", "--no-print-directory", "DEVICE=cpu", "DOCKER=docker", "COMPOSE=docker-compose"]
    cpu = subprocess.run([*make, "build-pytorch-cu12"], cwd=ROOT, capture_output=True, text=True)
    assert cpu.returncode != 0 and "pytorch-cu12: gpu image only" in cpu.stderr and "FLAVOR=gpu" in cpu.stderr
    gpu = subprocess.run([*make, "FLAVOR=gpu", "build-pytorch-cu12"], cwd=ROOT, capture_output=True, text=True)
    assert gpu.returncode == 0, gpu.stderr
    assert "-f images/Dockerfile" in gpu.stdout and "--build-arg STACK=pytorch-cu12" in gpu.stdout
    assert "--build-arg TOOLCHAIN=1" in gpu.stdout and "-t dlbench/pytorch-cu12:gpu" in gpu.stdout
    assert "--build-arg LAYER= " in gpu.stdout  # its torch 2.10 shares nothing with the torch 2.13 images
