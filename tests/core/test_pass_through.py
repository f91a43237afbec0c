"""The request's inputs on their way to a GPU host and back (a review of the typed record and the request):
a record naming its GPU by UUID is kept, multi-word inputs reach the cloud whole, the SkyPilot task's empty envs
leave make its defaults, a switch is on only when set to 1, an input equal to its default is the default cell, and
an image's tag follows the package data its cells read."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.cli import main
from bench.core import request
from bench.core.atomic import write_json_atomic
from bench.host import imagetag
from bench.results.record import new_record, read_record
from bench.run import plan, runner
from tests.helpers.cloud_vm import INSTALLABLE, RUN, VM

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable


def make_n(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-n", "--no-print-directory", *args, f"PYTHON={PY}"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


def test_a_gpu_record_naming_its_gpu_by_uuid_is_read(tmp_path):
    """CUDA_VISIBLE_DEVICES=GPU-... (or MIG-...) makes telemetry.gpu_index the UUID
    (bench.instruments.nvml.nvml_index)."""
    plan_cell = plan.expand(["pytorch"], "classic", "smoke", "gpu", ["mnist_mlp"])[0]
    rec = new_record(plan_cell)
    rec.update(status="ok", telemetry={"available": True, "gpu_index": "MIG-8a3f0c2e-1111-2222-3333-444455556666"})
    write_json_atomic(tmp_path / "r.json", rec)
    assert read_record(tmp_path / "r.json")["telemetry"]["gpu_index"].startswith("MIG-")


BAD_WORKER = """
import json, sys
from bench.results.cell import Cell
from bench.results.record import new_record
rec = new_record(Cell.from_dict(json.load(open(sys.argv[1]))))
rec.update(status="ok", telemetry={"gpu_index": [1, 2]})  # a field of a type the schema does not declare
open(sys.argv[2], "w").write(json.dumps(rec))
"""


def test_a_worker_record_the_schema_rejects_is_kept_and_named(tmp_path, monkeypatch):
    script = tmp_path / "worker.py"
    script.write_text(BAD_WORKER)
    monkeypatch.setattr(runner, "WORKER", [sys.executable, str(script)])
    out = tmp_path / "run"
    with pytest.raises(SystemExit):
        main(["run", "--stack", "pytorch", "--workload", "mnist_mlp", "--device", "cpu", "--out", str(out)])
    rec = json.loads((out / "pytorch" / "pytorch__classic__mnist_mlp__fit__smoke__default.json").read_text())
    assert rec["status"] == "failed" and "rejected" in rec["reason"] and "telemetry.gpu_index" in rec["reason"]
    kept = list(out.rglob("*.rejected.json"))
    assert len(kept) == 1 and json.loads(kept[0].read_text())["telemetry"]["gpu_index"] == [1, 2]


def test_make_cloud_sends_a_multi_word_input_whole():
    p = make_n("cloud", "GPUS=H100", "BUCKET=b", "WORKLOADS=mnist_mlp mnist_cnn", "SET=tf32=off", "DRY_RUN=1",
               "DEVICE=cpu")
    assert p.returncode == 0, p.stderr
    assert "--input 'WORKLOADS=mnist_mlp mnist_cnn'" in p.stdout and "--input 'SET=tf32=off'" in p.stdout


def test_the_sky_tasks_empty_envs_leave_make_its_defaults(tmp_path):
    """SkyPilot exports an empty env as K='', which make takes as set: run.sh unsets them."""
    vm = VM(tmp_path, installed=tuple(INSTALLABLE), state=("docker-group",))
    vm._fake(vm.bin, "make", f'echo "make-env SUITE=${{SUITE-unset}} SIZE=${{SIZE-unset}}" >> "{vm.log}"')
    p = vm.run(RUN, str(tmp_path / "bucket"), RUN_NAME="r", SUITE="", STACKS="", SIZE="", REPEATS="", SEED="",
               PASS_VARS="")
    assert p.returncode == 0, p.stderr
    assert "make-env SUITE=unset SIZE=unset" in vm.calls()


def test_a_switch_is_on_only_when_set_to_one():
    assert request.run_args({"NO_AUGMENT": "0"}) == [] and request.run_args({"NO_AUGMENT": "1"}) == ["--no-augment"]
    with pytest.raises(ValueError, match="1 \\(on\\) or 0 \\(off\\)"):
        request.run_args({"TELEMETRY_SAMPLES": "2"})
    bad = make_n("bench-pytorch", "DEVICE=cpu", "NO_AUGMENT=2")
    assert bad.returncode != 0 and "not valid for bench run" in bad.stderr


def test_a_sequence_length_equal_to_the_models_own_is_the_default_cell():
    default = plan.expand(["pytorch"], "paper", "smoke", "cpu", ["bert"])
    own = plan.WORKLOADS["bert"].model.config("smoke")["seq_len"]
    same = plan.expand(["pytorch"], "paper", "smoke", "cpu", ["bert"], seq_len=own)
    other = plan.expand(["pytorch"], "paper", "smoke", "cpu", ["bert"], seq_len=own + 1)
    assert [c.id for c in same] == [c.id for c in default]
    assert all(c.id.endswith(f"__seq_len={own + 1}") for c in other)


def test_an_images_tag_follows_the_package_data_its_cells_read(tmp_path):
    """The FLOP table MFU divides by is package data, not code: editing it must give the images a new tag."""
    root = tmp_path / "tree"
    for rel in (*imagetag.COMMON, "images/Dockerfile", "images/c-toolchain.sh", "images/imports.py",
                "images/pytorch/requirements-cpu.lock", "images/layers/torch-cpu.lock", "bench/__init__.py",
                "bench/core/reference/paper_flops.csv"):
        src, dst = ROOT / rel, root / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(src.read_bytes())
    before = imagetag.tag("pytorch", "cpu", root)
    (root / "bench/core/reference/paper_flops.csv").write_text("changed\n")
    assert imagetag.tag("pytorch", "cpu", root) != before
