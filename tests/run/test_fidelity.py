import pytest

from bench.run.fidelity import measure
from tests.conftest import needs_keras_torch, needs_torch


@needs_torch
def test_fidelity_runs_each_cadence_twice_between_two_free_running_loops():
    r = measure("pytorch", "mnist_mlp", "cpu", "smoke", epochs=2, cadences=("step", "every:3", "epoch"))
    assert r["steps_per_epoch"] == 8 and r["batch_size"] == 128
    assert r["order"] == ["hand", "step", "every:3", "epoch", "epoch", "every:3", "step", "hand"]
    assert len(r["handloop_runs_ms"]) == 2 and r["handloop_ms_per_step"] == pytest.approx(
        sum(r["handloop_runs_ms"]) / 2)
    reads = {"step": 2 * (1 + 8), "every:3": 2 * (1 + 3), "epoch": 2 * 2}  # 2 epochs of 8 steps
    for cadence, c in r["cadences"].items():
        assert len(c["runs_ms"]) == 2 and c["ms_per_step"] == pytest.approx(sum(c["runs_ms"]) / 2)
        assert c["ms_per_step"] == pytest.approx(sum(e[1] for e in c["epoch_s"]) / 2 / 8 * 1000)
        assert c["clock_reads"] == [reads[cadence]] * 2
        assert c["ratio"] == pytest.approx(c["ms_per_step"] / r["handloop_ms_per_step"])
        assert c["overhead_pct"] == pytest.approx(100 * (c["ratio"] - 1))


def test_fidelity_needs_two_epochs_and_valid_cadences():
    with pytest.raises(ValueError, match="2 epochs"):
        measure("pytorch", "mnist_mlp", "cpu", "smoke", epochs=1)
    with pytest.raises(ValueError, match="every:N"):
        measure("pytorch", "mnist_mlp", "cpu", "smoke", cadences=("often",))


@needs_keras_torch
def test_keras_free_running_loop_cancels_the_cost_of_each_fit_call():
    # fit(6) - fit(1): 5 epochs of 8 steps. `make test` runs this beside image builds, whose load exceeded
    # fit(2) - fit(1) once (a difference under noise is NoisyMeasurement, tested below, not a negative ms/step)
    r = measure("keras3-torch", "mnist_mlp", "cpu", "smoke", epochs=6, cadences=("epoch",))
    assert r["order"] == ["hand", "epoch", "epoch", "hand"]
    assert len(r["handloop_fit_call_overhead_s"]) == 2 and r["handloop_ms_per_step"] > 0
    assert r["cadences"]["epoch"]["clock_reads"] == [12, 12]


@needs_keras_torch
def test_a_keras_free_running_run_without_steady_time_is_an_error_not_a_negative_ms_per_step(monkeypatch):
    from bench.models.engines import NoisyMeasurement
    from bench.models.engines.keras import handloop

    monkeypatch.setattr(handloop, "clock", lambda: 0.0)  # every fit call "takes" 0 s: no steady time
    with pytest.raises(NoisyMeasurement, match=r"noise exceeds its 1 steady epoch\(s\)"):
        measure("keras3-torch", "mnist_mlp", "cpu", "smoke", epochs=2, cadences=("epoch",))


def test_the_jax_stack_has_its_own_free_running_loop_and_imports_no_torch():
    """Fidelity on `jax` times a bare jitted JAX loop (the engine's step fed as a default cell feeds it), never a
    PyTorch one, and the harness's epoch cadence lands near it (the same work timed two ways)."""
    pytest.importorskip("flax")
    import json
    import subprocess
    import sys

    code = ("import json, sys\nfrom bench.run.fidelity import measure\n"
            "r = measure('jax', 'mnist_mlp', 'cpu', 'smoke', epochs=3, cadences=('epoch',))\n"
            "print(json.dumps({'torch': 'torch' in sys.modules, 'hand': r['handloop_ms_per_step'], "
            "'epoch': r['cadences']['epoch']['ms_per_step'], 'order': r['order']}))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["torch"] is False and r["order"] == ["hand", "epoch", "epoch", "hand"]
    assert r["hand"] > 0 and 1 / 3 < r["epoch"] / r["hand"] < 3


def test_the_harness_side_differs_from_the_free_running_loop_only_in_its_timing():
    """The loop trains on stored images with no callbacks: the harness side runs without augmentation and, on Keras,
    without the notebooks' per-batch callback (progress=none), whatever the workload's default."""
    from bench.core.knobs import settings_class
    from bench.run.fidelity import harness_settings

    keras = harness_settings(settings_class("keras"), "every:8")
    assert (keras.sync, keras.augment, keras.progress) == ("every:8", False, "none")
    for engine in ("torch", "jax"):
        other = harness_settings(settings_class(engine), "step")
        assert (other.sync, other.augment) == ("step", False) and not hasattr(other, "progress")


def test_every_free_running_loop_takes_the_protocols_parameters_by_keyword_only():
    """``HandLoop.run`` is keyword-only (two strings and two integers in a row cannot be swapped unnoticed); each
    family's ``handloop.run`` takes the protocol's parameters, by keyword only."""
    import inspect

    from bench.core.families import FAMILIES
    from bench.models.engines import HandLoop
    from bench.run.fidelity import hand_loop

    def keyword_only(fn) -> list[str]:
        params = [p for p in inspect.signature(fn).parameters.values() if p.name != "self"]
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params), fn
        return [p.name for p in params]

    names = keyword_only(HandLoop.run)
    assert names == ["stack", "workload", "ds", "device", "epochs", "batch", "tf32"]
    loops = [loop for loop in map(hand_loop, FAMILIES) if loop is not None]
    assert len(loops) == 3
    for loop in loops:
        assert keyword_only(loop.run) == names


def test_make_fidelity_writes_an_ignored_folder_and_the_committed_files_only_on_purpose():
    """``make fidelity`` on a CPU wrote ``results/fidelity/<stack>-cpu.json``, the committed measurements whose
    provenance results/fidelity/README.md gives: a user's run overwrote them. It writes ``fidelity/local/`` (ignored
    by git) unless ``FIDELITY_DIR=fidelity`` asks for the committed place."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    make = ["make", "-n", "--no-print-directory", "DEVICE=cpu", "DOCKER=docker", "COMPOSE=docker-compose"]

    def out(*extra):
        p = subprocess.run([*make, *extra, "fidelity-pytorch"], cwd=root, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        return p.stdout

    assert "--out /results/fidelity/local/pytorch-cpu.json" in out()
    assert "--out /results/fidelity/pytorch-cpu.json" in out("FIDELITY_DIR=fidelity")

    def git(*args):
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)

    assert git("ls-files", "--error-unmatch", "results/fidelity/pytorch-cpu.json").returncode == 0  # committed
    assert git("check-ignore", "-q", "results/fidelity/local/pytorch-cpu.json").returncode == 0  # a run's: ignored
