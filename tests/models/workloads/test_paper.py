"""The paper suite (Keras 3 benchmark): cells, full-size parameter counts without allocating weights,
FLOPs and MFU, unsupported cells, and smoke runs of the real code path on PyTorch and Keras' torch backend."""

from __future__ import annotations

import os

import pytest

from bench.core.gpus import gpu_family
from bench.core.reference import read_csv
from bench.models import flops
from bench.models.workloads import SUITES, get_workload
from bench.results.schema import Record
from bench.run import plan
from bench.run.scenarios.steps import SMOKE_MAX_BATCH
from tests.conftest import has
from tests.helpers.cells import make_cell

needs_hf = pytest.mark.skipif(not all(has(m) for m in ("torch", "transformers", "diffusers", "peft")),
                              reason="torch + transformers/diffusers/peft not installed")
needs_hub = pytest.mark.skipif(not all(has(m) for m in ("torch", "keras", "keras_hub", "keras_cv")),
                               reason="keras + keras-hub/keras-cv + torch not installed")

#: Published cells of Table 2 (keras.io Keras 3 benchmarks), read from the table itself (bench/core/reference).
PUBLISHED = {(r["model"], r["task"], int(r["batch_size"])) for r in read_csv("keras_io_benchmarks_2024.csv")}


def test_full_plan_has_exactly_the_published_cells():
    cells = plan.expand(["keras3-jax", "pytorch"], "paper", "full", "gpu")
    assert {(c.workload, c.task, c.inputs.batch_size) for c in cells} == PUBLISHED
    assert len(cells) == 2 * len(PUBLISHED)
    assert len({c.id for c in cells}) == len(cells)  # the two generate batch sizes are distinct cells
    assert {c.variant for c in cells if c.workload == "gemma" and c.task == "generate"} == {"bs32", "bs1"}


def test_smoke_plan_caps_batches_and_overrides_pass_through():
    smoke = plan.expand(["pytorch"], "paper", "smoke", "cpu")
    assert max(c.inputs.batch_size for c in smoke) == SMOKE_MAX_BATCH
    assert {(c.workload, c.inputs.batch_size) for c in smoke if c.task == "generate"} == {
        ("gemma", 2), ("gemma", 1), ("mistral", 2), ("mistral", 1)}
    one = plan.expand(["pytorch"], "paper", "full", "gpu", ["bert"], ["fit"], batch_size=4, steps=7, seq_len=128)
    assert [(c.inputs.batch_size, c.variant, c.inputs.steps, c.inputs.seq_len) for c in one] == [(4, "bs4", 7, 128)]
    with pytest.raises(plan.PlanError, match="steps"):
        plan.expand(["pytorch"], "paper", "full", "gpu", steps=0)


@pytest.mark.parametrize("workload,reason", [("gemma", "requires Keras 3"), ("mistral", "bfloat16")])
def test_keras2_cells_the_source_could_not_run_are_unsupported_with_reason(workload, reason):
    from bench.run.worker import run_cell

    task = get_workload(workload).tasks[0]
    rec = run_cell(make_cell(stack="keras2-tf", suite="paper", workload=workload, task=task, size="smoke",
                             device="cpu"))
    assert rec["status"] == "unsupported"
    assert reason in rec["reason"]


# ---- parameter counts of the full-size models, built without weights -------------------------------------

@needs_hf
@pytest.mark.parametrize("workload,key", [("bert", "total"), ("gemma", "total"), ("mistral", "total"),
                                          ("segment_anything", "total"), ("stable_diffusion", "unet")])
def test_hugging_face_models_match_published_parameter_counts_on_meta(workload, key):
    import torch

    m = get_workload(workload).model
    model = m.torch_model(m.config("full"), torch.float32, "meta")
    assert sum(p.numel() for p in model.parameters()) == m.published_params[key]


@needs_hf
def test_sd_vae_encoder_and_sam_image_encoder_counts_on_meta():
    sd, sam = get_workload("stable_diffusion").model, get_workload("segment_anything").model
    enc = sd.torch_vae(sd.config("full"), "meta").encoder
    assert sum(p.numel() for p in enc.parameters()) == sd.published_params["vae_encoder"]
    vit = sam.torch_model(sam.config("full"), None, "meta").vision_encoder
    assert sum(p.numel() for p in vit.parameters()) == sam.published_params["image_encoder"]


@needs_hf
def test_lora_rank4_on_q_and_v_trains_only_the_adapters():
    import torch

    from bench.models.workloads.paper.common import LORA_RANK

    m = get_workload("mistral").model
    job = m.torch_job("fit", m.config("full"), 1, torch.device("meta"), {})
    trainable = sum(p.numel() for p in job.model.parameters() if p.requires_grad)
    cfg = m.config("full")
    kv = cfg["hidden"] // cfg["q_heads"] * cfg["kv_heads"]
    # per layer: q (4096 -> 4096) and v (4096 -> 1024) adapters, r x (in + out) each
    assert trainable == cfg["layers"] * LORA_RANK * ((cfg["hidden"] * 2) + (cfg["hidden"] + kv))


@pytest.fixture
def keras_torch_backend():
    """Keras on its torch backend in this process; the global dtype policy a cell sets is restored after."""
    if os.environ.get("KERAS_BACKEND", "torch") != "torch":
        pytest.skip("the meta device needs Keras' torch backend")
    os.environ["KERAS_BACKEND"] = "torch"
    yield
    import keras

    keras.config.set_dtype_policy("float32")


@needs_hub
@pytest.mark.parametrize("workload,task,key", [
    ("bert", "fit", "total"), ("gemma", "generate", "total"), ("mistral", "generate", "total"),
    ("segment_anything", "predict", "total"), ("segment_anything", "fit", "image_encoder"),
    ("stable_diffusion", "fit", "vae_encoder")])
def test_keras_models_match_published_parameter_counts_on_meta(keras_torch_backend, workload, task, key):
    import keras

    from bench.core.stacks import get_stack

    w = get_workload(workload)
    with keras.device("meta"):  # Keras' torch backend creates every variable on the meta device: no memory
        job = w.model.keras_job(get_stack("keras3-torch"), keras, task, w.model.config("full"), 1, {})
        assert job.model.count_params() == w.model.published_params[key]


# ---- FLOPs and MFU -------------------------------------------------------------------------------------

def test_flops_table_covers_every_paper_task():
    table = flops.read_table()
    for name in SUITES["paper"]:
        for task in get_workload(name).tasks:
            assert table[(name, task)]["flops_per_example"] > 0
    # published orders of magnitude (docs/suites/paper.md, "The models"): BERT fwd ~97 GFLOP, Mistral LoRA train
    # ~3.7 TFLOP
    assert table[("bert", "predict")]["flops_per_example"] == pytest.approx(97e9, rel=0.02)
    assert table[("mistral", "fit")]["flops_per_example"] == pytest.approx(3.7e12, rel=0.02)



def test_flops_are_counted_for_paper_workloads_only():
    assert flops.paper_workload("bert").name == "bert"
    with pytest.raises(ValueError, match="mnist_cnn is not a paper-suite"):
        flops.paper_workload("mnist_cnn")
    with pytest.raises(KeyError):
        flops.paper_workload("no_such_workload")

@needs_hf
@pytest.mark.parametrize("workload,task", [("bert", "fit"), ("gemma", "generate")])
def test_flops_table_matches_a_recount(workload, task):
    assert flops.count(workload, task) == pytest.approx(flops.read_table()[(workload, task)]["flops_per_example"],
                                                        rel=1e-4)


def test_flops_are_null_with_a_reason_outside_the_table():
    value, why = flops.flops_per_example("bert", "fit", "smoke", {"seq_len": 16})
    assert value is None and "full-size" in why
    value, why = flops.flops_per_example("bert", "fit", "full", {"seq_len": 128})
    assert value is None and "512" in why
    value, method = flops.flops_per_example("bert", "fit", "full", {"seq_len": 512})
    assert value > 0 and "FlopCounterMode" in method


@pytest.mark.parametrize("name,family", [
    ("NVIDIA A100-SXM4-40GB", "A100"), ("NVIDIA A100 80GB PCIe", "A100"), ("NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("NVIDIA H100 PCIe", "H100 PCIe"), ("NVIDIA H100 NVL", None), ("NVIDIA H200", "H200"), ("NVIDIA L4", "L4"),
    ("NVIDIA A10G", "A10G"), ("NVIDIA L40S", None), ("Tesla T4", None), (None, None),
    ("NVIDIA A100-SXM4-80GB", "A100"), ("NVIDIA A100-PCIE-40GB", "A100"), ("A100-SXM4-40GB", "A100"),
    # whole tokens only: an RTX A1000 is no A100 and a GH200 superchip no H200 (the table holds neither)
    ("NVIDIA RTX A1000", None), ("NVIDIA RTX A1000 Laptop GPU", None), ("NVIDIA RTX A1000 6GB Laptop GPU", None),
    ("NVIDIA GH200 480GB", None), ("NVIDIA GH200 144G HBM3e", None), ("NVIDIA H200 NVL", None),
    ("NVIDIA H100 NVL", None), ("NVIDIA A100X", None)])
def test_gpu_family_from_nvml_names(name, family):
    """Substring matching put an RTX A1000 among the A100s (a 312 TFLOP/s bf16 peak, and a paper ratio) and a
    GH200 among the H200s."""
    assert gpu_family(name) == family


@pytest.mark.parametrize("name", ["NVIDIA RTX A1000", "NVIDIA RTX A1000 Laptop GPU", "NVIDIA GH200 480GB"])
def test_a_gpu_outside_the_peak_table_has_no_datasheet_peak(name):
    peak, why = flops.peak_flops(name, "bfloat16", False)
    assert peak is None and why == f"no peak table entry for GPU {name!r}"


def test_peak_depends_on_dtype_and_tf32_and_is_null_with_reason_when_unknown():
    assert flops.peak_flops("NVIDIA A100-SXM4-40GB", "bfloat16", False)[0] == 312e12
    assert flops.peak_flops("NVIDIA A100-SXM4-40GB", "float32", False)[0] == 19.5e12
    assert flops.peak_flops("NVIDIA A100-SXM4-40GB", "float32", True)[0] == 156e12
    peak, why = flops.peak_flops("NVIDIA A10G", "bfloat16", False)
    assert peak is None and "publishes no" in why
    peak, why = flops.peak_flops(None, "float32", False)
    assert peak is None and "no peak" in why


def test_mfu_is_flops_over_time_over_peak():
    from bench.run.worker import add_mfu

    rec = Record.model_validate({"device": "gpu", "env": {"gpu": {"name": "NVIDIA H100 80GB HBM3"}},
                                 "settings": {"precision": "bfloat16", "torch_matmul_allow_tf32": False},
                                 "metrics": {"flops_per_step": 989.5e12 * 0.25, "ms_per_step_mean": 500.0}})
    add_mfu(rec)
    assert rec.metrics.mfu == pytest.approx(0.5)
    assert rec.metrics.achieved_tflops == pytest.approx(989.5 / 2)
    rec.device = "cpu"
    add_mfu(rec)
    assert rec.metrics.mfu is None and rec.metrics.peak_source


# ---- smoke runs of the real code path --------------------------------------------------------------------

def _run(stack: str, workload: str, task: str, batch: int):
    from bench.run.worker import run_cell

    return run_cell(make_cell(stack=stack, suite="paper", workload=workload, task=task, size="smoke", device="cpu",
                              batch_size=batch, variant=f"bs{batch}", steps=2))


@needs_hf
@pytest.mark.parametrize("workload,task", [("bert", "fit"), ("gemma", "fit"), ("mistral", "generate"),
                                           ("segment_anything", "predict"), ("stable_diffusion", "predict")])
def test_pytorch_smoke_cells_time_every_step(workload, task):
    rec = _run("pytorch", workload, task, 2)
    assert rec["status"] == "ok", rec.get("traceback")
    m = rec["metrics"]
    assert m["steps"] == 2 and m["ms_per_step_mean"] > 0 and m["first_step_s"] > 0
    assert m["examples_per_s"] == pytest.approx(2 / (m["ms_per_step_mean"] / 1000), rel=0.05)
    assert rec["model"]["params_total"] > 0 and m["flops_per_step"] is None  # smoke: not tabulated
    if task == "generate":
        # BOS + 5 prompt tokens, then generation to the smoke max_length (12): 6 new tokens
        assert rec["settings"]["prompt_tokens"] == 6
        assert rec["settings"]["generated_tokens"] == get_workload(workload).model.config("smoke")["max_length"] - 6
        assert m["tokens_per_s"] == pytest.approx(m["examples_per_s"] * rec["settings"]["generated_tokens"])
    # the record's config names only the shapes the task read: generate no seq_len, a causal LM's fit no max_length
    shown = rec["settings"]["model_config"]
    assert ("seq_len" in shown) == (workload in ("bert", "gemma", "mistral") and task != "generate")
    assert ("max_length" in shown) == (task == "generate")
    if workload == "gemma":
        assert 0 < rec["model"]["params_trainable"] < rec["model"]["params_total"]  # LoRA
    if task == "generate":
        assert rec["output"] is None
    else:  # predict: the model's output; fit: the loss
        assert rec["output"]["finite"] is True and rec["output"]["shapes"]
        assert rec["output"]["shapes"][0][:1] == ([2] if task == "predict" else [])


@needs_hub
@pytest.mark.parametrize("workload,task", [("bert", "predict"), ("gemma", "generate"), ("mistral", "fit")])
def test_keras_torch_backend_smoke_cells(keras_torch_backend, workload, task):
    rec = _run("keras3-torch", workload, task, 1)
    assert rec["status"] == "ok", rec.get("traceback")
    assert rec["metrics"]["steps"] == 2 and rec["metrics"]["ms_per_step_mean"] > 0
    assert rec["settings"]["jit_compile"] is False  # in effect: the source's request (or none) on Keras' torch
    if task == "predict":  # Keras predict: every step's output, the first one included, concatenated (batch 1)
        assert rec["output"]["finite"] is True and rec["output"]["shapes"][0][0] == rec["metrics"]["steps"] + 1
    if task == "generate":
        assert rec["settings"]["generated_tokens"] == 6 and rec["settings"]["prompt_tokens"] == 6
    if task == "fit":
        assert rec["settings"]["precision"] == "bfloat16"
        assert 0 < rec["model"]["params_trainable"] < rec["model"]["params_total"]



@needs_hub
@pytest.mark.parametrize("workload,task", [("bert", "predict"), ("mistral", "fit")])
def test_keras_fit_and_predict_run_verbose_1_as_the_source_with_the_bar_discarded(keras_torch_backend, monkeypatch,
                                                                                  capfd, workload, task):
    """The source called ``model.fit(dataset, epochs=1, callbacks=...)`` / ``model.predict(dataset, callbacks=...)``
    without ``verbose`` (benchmark/keras_utils.py@v0.0.5:41, 47): Keras' "auto", i.e. 1 (keras/trainers/
    trainer.py@v3.0.5:403, 668): a ``ProgbarLogger`` updated after every batch. Ours the same, the bar discarded,
    recorded as ``settings.verbose``; the old code ran ``verbose=0`` (no ProgbarLogger at all)."""
    import keras

    batches: list[int] = []
    hook = "on_train_batch_end" if task == "fit" else "on_predict_batch_end"
    real = getattr(keras.callbacks.ProgbarLogger, hook)
    monkeypatch.setattr(keras.callbacks.ProgbarLogger, hook,
                        lambda self, batch, logs=None: (batches.append(batch), real(self, batch, logs))[1])
    rec = _run("keras3-torch", workload, task, 1)
    assert rec["status"] == "ok", rec.get("traceback")
    assert rec["settings"]["verbose"] == 1
    assert len(batches) == rec["metrics"]["steps"] + 1  # every batch, the first (build) one included
    assert "/step" not in capfd.readouterr().out

def test_compile_variant_is_pytorch_only_and_other_knobs_are_refused():
    cells = plan.expand(["pytorch", "keras3-jax"], "paper", "full", "gpu", ["bert"], ["fit"],
                        variant="compile-default", settings={"compile": "default"})
    assert [c.variant for c in cells] == ["bs32-compile-default", "bs32-compile-default"]
    from bench.run.worker import run_cell

    rec = run_cell(make_cell(stack="keras3-jax", suite="paper", workload="bert", task="fit", size="smoke", device="cpu",
                             settings={"compile": "default"}))
    assert rec["status"] == "unsupported" and "not honoured" in rec["reason"]
    rec = run_cell(make_cell(stack="pytorch", suite="paper", workload="bert", task="fit", size="smoke", device="cpu",
                             settings={"data_pipeline": "tensor_dataset"}))
    assert rec["status"] == "unsupported" and "data_pipeline" in rec["reason"]


@needs_hf
@pytest.mark.skipif(not __import__("shutil").which("c++"), reason="torch.compile on CPU needs a C++ compiler")
def test_pytorch_compile_variant_runs_generate_to_fixed_length():
    from bench.run.worker import run_cell

    rec = run_cell(make_cell(stack="pytorch", suite="paper", workload="gemma", task="generate", size="smoke",
                             device="cpu", batch_size=1, steps=2, settings={"compile": "default"},
                             variant="bs1-compile-default"))
    assert rec["status"] == "ok", rec.get("traceback")
    assert rec["settings"]["compile"] == "default" and rec["settings"]["generated_tokens"] == 6


def test_outputs_are_checked_for_shape_and_finiteness():
    import numpy as np
    import torch

    from bench.models.workloads.job import check_output

    out = check_output("predict", {"masks": np.zeros((2, 3, 4)), "iou": torch.ones(2, 3), "n": 5})
    assert out == {"shapes": [[2, 3, 4], [2, 3]], "finite": True}
    assert check_output("fit", torch.tensor(0.5)) == {"shapes": [[]], "finite": True}
    assert check_output("generate", 50) is None and check_output("fit", None) is None
    with pytest.raises(RuntimeError, match="non-finite"):
        check_output("predict", (np.array([1.0, np.nan]),))
