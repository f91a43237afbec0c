"""The paper suite's defaults pinned to its source, haifeng-jin/keras-benchmarks v0.0.5 (the code the keras.io
"Keras 3 benchmarks" page cites): batch sizes, timed steps, losses, optimizers, LoRA rank, dtype, sequence
lengths, ``jit_compile`` requested per cell and in effect, generate's prompt and new tokens, generate FLOPs,
and the report's "vs published" ratio. docs/suites/paper.md's "Method vs the sources" (and README's compact one) is
the table these tests back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.core.reference import keras_benchmarks as source
from bench.core.reference.keras_benchmarks import NOT_REQUESTED
from bench.core.stacks import STACKS, get_stack
from bench.models.engines.keras import steps as ksteps
from bench.models.workloads import SUITES, get_workload
from tests.conftest import has
from tests.helpers.tables import rows_starting

ROOT = Path(__file__).resolve().parents[3]
needs_hf = pytest.mark.skipif(not all(has(m) for m in ("torch", "transformers", "peft")),
                              reason="torch + transformers/peft not installed")
needs_hub = pytest.mark.skipif(not all(has(m) for m in ("torch", "keras", "keras_hub", "keras_cv")),
                               reason="keras + keras-hub/keras-cv + torch not installed")
KERAS_STACKS = [s.id for s in STACKS.values() if s.family == "keras"]
#: Every (workload, task) the source ran on Keras.
CELLS = [(w, t) for w in SUITES["paper"] for t in get_workload(w).tasks]


@pytest.fixture
def keras_torch_backend():
    """Keras on its torch backend in this process; the global dtype policy a job sets is restored after."""
    if os.environ.get("KERAS_BACKEND", "torch") != "torch":
        pytest.skip("needs Keras' torch backend in this process")
    yield
    import keras

    keras.config.set_dtype_policy("float32")


# ---- shapes and steps -----------------------------------------------------------------------------------

def test_batch_sizes_are_the_sources():
    """benchmark/__init__.py@v0.0.5: BERT_FIT_BATCH_SIZE 32, BERT_BATCH_SIZE 256, GEMMA/MISTRAL_FIT_BATCH_SIZE 8,
    GEMMA/MISTRAL_BATCH_SIZE 32 (generate; the page adds batch 1), SAM_FIT_BATCH_SIZE 1, SAM_BATCH_SIZE 4,
    SD_FIT_BATCH_SIZE 8, SD_BATCH_SIZE 13."""
    assert {w: get_workload(w).cells for w in SUITES["paper"]} == {
        "segment_anything": (("fit", 1), ("predict", 4)), "stable_diffusion": (("fit", 8), ("predict", 13)),
        "bert": (("fit", 32), ("predict", 256)), "gemma": (("fit", 8), ("generate", 32), ("generate", 1)),
        "mistral": (("fit", 8), ("generate", 32), ("generate", 1))}


def test_timed_steps_are_100_after_the_first():
    """benchmark/__init__.py@v0.0.5 NUM_STEPS = 100; benchmark/keras_utils.py@v0.0.5 times batches 1..100 of
    fit/predict (BenchmarkMetricsCallback(stop_batch=NUM_STEPS), batch 0 untimed) and (101 - 1) generate
    calls / 100."""
    assert all(get_workload(w).steps["full"] == 100 for w in SUITES["paper"])


def test_sequence_lengths_and_generate_max_length_are_the_sources():
    """benchmark/__init__.py@v0.0.5: BERT_SEQ_LENGTH 512, GEMMA/MISTRAL_SEQ_LENGTH 128,
    GEMMA/MISTRAL_MAX_LENGTH 50."""
    assert get_workload("bert").model.config("full")["seq_len"] == 512
    for name in ("gemma", "mistral"):
        cfg = get_workload(name).model.config("full")
        assert (cfg["seq_len"], cfg["max_length"]) == (128, 50)


def test_dtype_policy_is_the_sources():
    """benchmark/gemma/keras/fit.py@v0.0.5 (and mistral, predict): keras.config.set_dtype_policy(FLOAT_A100),
    FLOAT_A100 = "bfloat16" (benchmark/__init__.py@v0.0.5); the other models keep keras.json's float32
    (configs/*/keras.json@v0.0.5)."""
    assert {w: get_workload(w).model.precision for w in SUITES["paper"]} == {
        "segment_anything": "float32", "stable_diffusion": "float32", "bert": "float32", "gemma": "bfloat16",
        "mistral": "bfloat16"}


# ---- losses, optimizers, LoRA -----------------------------------------------------------------------------

@needs_hub
@pytest.mark.parametrize("workload,loss,optimizer", [
    ("bert", "sparse_ce_from_logits", "adamw"), ("gemma", "sparse_ce_from_logits", "adamw"),
    ("mistral", "sparse_ce_from_logits", "adamw"), ("segment_anything", "mse", "adam"),
    ("stable_diffusion", "mse", "adam")])
def test_fit_losses_and_optimizers_are_the_sources(keras_torch_backend, workload, loss, optimizer):
    """benchmark/bert/keras/fit.py@v0.0.5, benchmark/gemma|mistral/keras/fit.py@v0.0.5:
    loss=SparseCategoricalCrossentropy(from_logits=True), optimizer=keras.optimizers.AdamW();
    benchmark/sam/keras/fit.py@v0.0.5 and benchmark/stable_diffusion/keras/fit.py@v0.0.5: loss="mse",
    optimizer="adam". Keras 3.0.5's defaults (its keras/src/optimizers/adam.py, adamw.py; 3.15.1 has the
    same): lr 0.001, beta_1 0.9, beta_2 0.999, epsilon 1e-7, AdamW weight_decay 0.004."""
    import keras

    w = get_workload(workload)
    with keras.device("meta"):
        job = w.model.keras_job(get_stack("keras3-torch"), keras, "fit", w.model.config("smoke"), 1, {})
    if loss == "mse":
        assert job.loss == "mse"
    else:
        assert isinstance(job.loss, keras.losses.SparseCategoricalCrossentropy)
        assert job.loss.get_config()["from_logits"] is True
    assert job.optimizer == optimizer
    opt = ksteps._optimizer(keras, job.optimizer).get_config()
    expected = {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7, "amsgrad": False,
                "weight_decay": 0.004 if optimizer == "adamw" else None}
    assert {k: opt[k] for k in expected} == pytest.approx(expected)
    assert type(ksteps._optimizer(keras, job.optimizer)).__name__ == {"adam": "Adam", "adamw": "AdamW"}[optimizer]


@needs_hub
@pytest.mark.parametrize("workload", ["gemma", "mistral"])
def test_lora_rank_4_on_the_keras_backbone(keras_torch_backend, workload):
    """benchmark/gemma/keras/fit.py@v0.0.5 (and mistral): model.backbone.enable_lora(rank=4) before compile."""
    import keras

    w = get_workload(workload)
    with keras.device("meta"):
        job = w.model.keras_job(get_stack("keras3-torch"), keras, "fit", w.model.config("smoke"), 1, {})
    lora = [lyr for lyr in job.model.backbone._flatten_layers() if getattr(lyr, "lora_enabled", False)]
    assert lora and {lyr.lora_rank for lyr in lora} == {4}


@needs_hf
def test_lora_rank_4_on_the_pytorch_side():
    """benchmark/gemma/torch/fit.py@v0.0.5 (and mistral): peft LoraConfig(r=4), whose default targets for
    Gemma and Mistral in peft 0.9.0 are q_proj and v_proj."""
    import peft
    import torch

    m = get_workload("gemma").model
    job = m.torch_job("fit", m.config("smoke"), 1, torch.device("meta"), {})
    cfg = job.model.peft_config["default"]
    assert isinstance(cfg, peft.LoraConfig) and cfg.r == 4 and set(cfg.target_modules) == {"q_proj", "v_proj"}


# ---- jit_compile: what the source requested, and what is in effect ------------------------------------------

#: (workload, task) -> keras-benchmarks v0.0.5's request: "use_jit" (keras_utils.use_jit()) or "default".
SOURCE_REQUESTS = {
    ("bert", "fit"): "use_jit",  # benchmark/bert/keras/fit.py@v0.0.5
    ("bert", "predict"): "use_jit",  # benchmark/bert/keras/predict.py@v0.0.5
    ("gemma", "fit"): "use_jit", ("mistral", "fit"): "use_jit",  # benchmark/{gemma,mistral}/keras/fit.py@v0.0.5
    ("gemma", "generate"): "default", ("mistral", "generate"): "default",  # .../keras/predict.py: compile(sampler=)
    ("segment_anything", "fit"): "use_jit",  # benchmark/sam/keras/fit.py@v0.0.5
    ("segment_anything", "predict"): "default",  # benchmark/sam/keras/predict.py@v0.0.5: model uncompiled
    ("stable_diffusion", "fit"): "default",  # benchmark/stable_diffusion/keras/fit.py@v0.0.5: compile(loss, opt)
    ("stable_diffusion", "predict"): "use_jit",  # .../predict.py@v0.0.5: StableDiffusion(jit_compile=use_jit())
}


def test_every_keras_cell_declares_what_its_source_requested():
    assert set(source.SOURCE_JIT) == set(CELLS) == set(SOURCE_REQUESTS)
    for (w, t), decl in source.SOURCE_JIT.items():
        assert decl.uses_jit == (SOURCE_REQUESTS[(w, t)] == "use_jit")
        assert decl.cite.startswith(f"benchmark/{ {'segment_anything': 'sam'}.get(w, w)}/keras/")
        assert "@v0.0.5: " in decl.cite


@pytest.mark.parametrize("stack", KERAS_STACKS)
@pytest.mark.parametrize("workload,task", CELLS)
def test_jit_requested_per_cell_is_the_sources(stack, workload, task):
    """benchmark/keras_utils.py@v0.0.5 use_jit(): not (Keras 3 and backend torch). The cells that pass it
    request True on tf.keras, Keras 3 TensorFlow and JAX, False on Keras 3 torch; the others request nothing
    (SOURCE_REQUESTS cites each file). The old code requested ``stack.backend != "torch"`` everywhere."""
    s = get_stack(stack)
    requested, by = ksteps.jit_request(s, workload, task, None)
    if SOURCE_REQUESTS[(workload, task)] == "use_jit":
        assert requested is (s.id != "keras3-torch")
    else:
        assert requested == NOT_REQUESTED
    assert "@v0.0.5: " in by


@pytest.mark.parametrize("knob", [True, False, "auto"])
def test_a_jit_compile_knob_is_requested_in_every_cell(knob):
    for workload, task in CELLS:
        requested, by = ksteps.jit_request(get_stack("keras3-jax"), workload, task, knob)
        assert requested is knob and by == "jit_compile knob (variant)"


def test_tf_keras_unset_jit_compile_is_no_xla():
    """tf_keras 2.15 src/engine/training.py: Model._jit_compile starts None and make_train_function /
    make_predict_function build an XLA function only ``if self.jit_compile``: unset is no XLA for the model's
    functions (Keras 2's SAM predict and SD fit in the source; SD fit's Adam still applies its update under XLA on
    a GPU, the optimizer's own ``jit_compile=True``, keras/optimizers/optimizer.py@v2.15.0:49, 59-67)."""
    assert ksteps.jit_in_effect(SimpleNamespace(jit_compile=None)) is False
    assert ksteps.jit_in_effect(SimpleNamespace(jit_compile=True)) is True


@pytest.mark.parametrize("backend,jit,eager,expected", [
    ("torch", True, False, False), ("jax", False, False, True), ("tensorflow", True, False, True),
    ("tensorflow", False, False, False), ("jax", True, True, False)])
def test_generate_compiler_follows_keras_hub(backend, jit, eager, expected):
    """keras-hub 0.32.0 src/models/causal_lm.py make_generate_function: torch eager under no_grad, JAX
    jax.jit whatever jit_compile says, TensorFlow tf.function(jit_compile=model.jit_compile); run_eagerly:
    eager."""
    model = SimpleNamespace(jit_compile=jit, run_eagerly=eager, generate_function=object())
    assert ksteps.generate_compiler(backend, model)[0] is expected


@needs_hub
@pytest.mark.parametrize("workload,task", CELLS)
def test_keras3_torch_cells_have_no_xla_in_effect(keras_torch_backend, workload, task):
    """On Keras 3's torch backend the source requested False (use_jit) or nothing ("auto" resolves to False:
    keras 3.15.1 trainer.py _resolve_auto_jit_compile), so nothing is compiled; read from the model built and
    compiled as the engine does (on the meta device, no weights)."""
    import keras

    stack, w = get_stack("keras3-torch"), get_workload(workload)
    requested, _ = ksteps.jit_request(stack, workload, task, None)
    ksteps._set_precision(keras, stack, w.model.precision)
    with keras.device("meta"):
        job = w.model.keras_job(stack, keras, task, w.model.config("smoke"), 1,
                                {"jit_compile": requested, "jit_compile_knob": None})
        ksteps.compile_job(keras, job, task, requested)
    if task == "generate":
        assert ksteps.generate_compiler("torch", job.model)[0] is False
    else:
        assert ksteps.jit_in_effect(job.model) is False


def test_sd_predict_compiles_the_unet_as_keras_cv_does():
    """keras-cv 0.8.2 / 0.9.0 StableDiffusion.diffusion_model: compile(jit_compile=True) only when
    StableDiffusion(jit_compile=True); else uncompiled (Keras' default resolves). A knob compiles with its
    value. The old code compiled with True for any truthy value, "auto" included."""
    from bench.models.workloads.paper.stable_diffusion import StableDiffusion

    cases = [({"jit_compile": True, "jit_compile_knob": None}, [{"jit_compile": True}]),
             ({"jit_compile": False, "jit_compile_knob": None}, []),
             ({"jit_compile": "auto", "jit_compile_knob": "auto"}, [{"jit_compile": "auto"}]),
             ({"jit_compile": False, "jit_compile_knob": False}, [{"jit_compile": False}])]
    for settings, expected in cases:
        calls: list[dict] = []
        StableDiffusion.compile_unet(SimpleNamespace(compile=lambda calls=calls, **kw: calls.append(kw)), settings)
        assert calls == expected, settings


_EFFECT = r"""
import json, sys
import keras
import tensorflow as tf
from bench.models.engines.keras import steps as ksteps
from bench.core.stacks import get_stack
from bench.models.workloads import get_workload
from bench.models.workloads.paper.stable_diffusion import StableDiffusion

stack, out = get_stack(sys.argv[1]), {}
if sys.argv[2] == "fake-gpu":  # TensorFlow lists a GPU: Keras' "auto" takes its GPU branch
    gpu = tf.config.PhysicalDevice(name="/physical_device:GPU:0", device_type="GPU")
    tf.config.list_physical_devices = lambda device_type=None: [gpu]
for wl, task in json.loads(sys.argv[3]):
    w = get_workload(wl)
    requested, _ = ksteps.jit_request(stack, wl, task, None)
    ksteps._set_precision(keras, stack, w.model.precision)
    if (wl, task) == ("stable_diffusion", "predict"):  # keras-cv's rule, on a small stand-in for the 860M UNet
        unet = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
        StableDiffusion.compile_unet(unet, {"jit_compile": requested, "jit_compile_knob": None})
        out[f"{wl} {task}"] = [requested, ksteps.jit_in_effect(unet)]
        continue
    job = w.model.keras_job(stack, keras, task, w.model.config("smoke"), 1,
                            {"jit_compile": requested, "jit_compile_knob": None})
    ksteps.compile_job(keras, job, task, requested)
    if task == "generate":
        produced = job.call(job.model) if sys.argv[2] == "cpu" else None
        out[f"{wl} {task}"] = [requested, ksteps.generate_compiler(stack.backend, job.model)[0], produced,
                               job.recorded["prompt_tokens"]]
    else:
        out[f"{wl} {task}"] = [requested, ksteps.jit_in_effect(job.model)]
    keras.config.set_dtype_policy("float32")
print("RESULT " + json.dumps(out))
"""


def _in_effect(stack: str, mode: str, cells) -> dict:
    """Run ``_EFFECT`` in a fresh process on ``stack``'s Keras backend (one backend per process)."""
    env = {**os.environ, "KERAS_BACKEND": get_stack(stack).backend, "CUDA_VISIBLE_DEVICES": ""}
    p = subprocess.run([sys.executable, "-c", _EFFECT, stack, mode, json.dumps(cells)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=900)
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    assert p.returncode == 0 and line, p.stderr[-3000:]
    return json.loads(line[0][len("RESULT "):])


# cells cheap to build at smoke size on a CPU (SD predict runs keras-cv's rule on a stand-in UNet)
_CHEAP = [("bert", "fit"), ("bert", "predict"), ("gemma", "generate"), ("segment_anything", "fit"),
          ("segment_anything", "predict"), ("stable_diffusion", "fit"), ("stable_diffusion", "predict")]


@needs_hub
@pytest.mark.skipif(not has("jax"), reason="jax not installed")
def test_keras3_jax_in_effect_on_the_cpu():
    """Keras 3 on JAX: use_jit() requests True; "auto" (SAM predict, SD fit) resolves True (trainer.py
    _resolve_auto_jit_compile: JAX has no device check); generate is jax.jit whatever jit_compile says
    (keras-hub causal_lm.py). Generate runs once: BOS + 5 prompt tokens, 6 new to the smoke max_length 12."""
    out = _in_effect("keras3-jax", "cpu", _CHEAP)
    assert out == {
        "bert fit": [True, True], "bert predict": [True, True], "gemma generate": [NOT_REQUESTED, True, 6, 6],
        "segment_anything fit": [True, True], "segment_anything predict": [NOT_REQUESTED, True],
        "stable_diffusion fit": [NOT_REQUESTED, True], "stable_diffusion predict": [True, True]}


@needs_hub
@pytest.mark.skipif(not has("tensorflow"), reason="tensorflow not installed")
def test_keras3_tensorflow_in_effect_on_the_cpu_and_with_a_gpu_listed():
    """Keras 3 on TensorFlow: use_jit() requests True and gets it; the cells the source left to Keras' default
    resolve "auto": False on a CPU-only machine, True once TensorFlow lists a GPU (trainer.py
    _resolve_auto_jit_compile, exercised with a faked tf.config.list_physical_devices), as on the page's A100.
    Generate: tf.function with the model's jit_compile (keras-hub causal_lm.py)."""
    cpu = _in_effect("keras3-tf", "cpu", _CHEAP)
    assert cpu == {
        "bert fit": [True, True], "bert predict": [True, True], "gemma generate": [NOT_REQUESTED, False, 6, 6],
        "segment_anything fit": [True, True], "segment_anything predict": [NOT_REQUESTED, False],
        "stable_diffusion fit": [NOT_REQUESTED, False], "stable_diffusion predict": [True, True]}
    gpu = _in_effect("keras3-tf", "fake-gpu", [("segment_anything", "predict"), ("stable_diffusion", "fit"),
                                               ("gemma", "generate")])
    assert gpu == {"segment_anything predict": [NOT_REQUESTED, True], "stable_diffusion fit": [NOT_REQUESTED, True],
                   "gemma generate": [NOT_REQUESTED, True, None, 6]}


_CELL = r"""
import json, sys
from bench.run.worker import run_cell
from tests.helpers.cells import make_cell
rec = run_cell(make_cell(stack=sys.argv[1], suite="paper", workload=sys.argv[2], task=sys.argv[3], size="smoke",
                         device="cpu", batch_size=1, variant="bs1", steps=1))
print("RESULT " + json.dumps({"status": rec["status"], "reason": rec["reason"], "settings": rec["settings"]},
                             default=str))
"""


@needs_hub
@pytest.mark.skipif(not has("tensorflow"), reason="tensorflow not installed")
def test_keras3_tensorflow_sam_predict_cell_records_no_request_and_keras_default():
    """A whole cell (bench.run.worker.run_cell) of SAM predict on Keras 3 + TensorFlow: the source predicted with
    the uncompiled SegmentAnythingModel (benchmark/sam/keras/predict.py@v0.0.5), so the cell requests
    nothing and records it; Keras' "auto" resolves False on this CPU-only machine (True with a GPU, see
    above). The old code compiled it with jit_compile=True and recorded that."""
    env = {**os.environ, "KERAS_BACKEND": "tensorflow", "CUDA_VISIBLE_DEVICES": ""}
    p = subprocess.run([sys.executable, "-c", _CELL, "keras3-tf", "segment_anything", "predict"], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=900)
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    assert p.returncode == 0 and line, p.stderr[-3000:]
    rec = json.loads(line[0][len("RESULT "):])
    assert rec["status"] == "ok", rec["reason"]
    s = rec["settings"]
    assert s["jit_compile_requested"] == NOT_REQUESTED and s["jit_compile"] is False
    assert s["jit_compile_requested_by"].startswith("benchmark/sam/keras/predict.py@v0.0.5: ")


# ---- generate: prompt and new tokens ------------------------------------------------------------------------

def test_bos_ids_are_the_tokenizers():
    """The preset tokenizers' start ids: Gemma "<bos>" 2, Mistral "<s>" 1 (transformers 5.23 GemmaConfig /
    MistralConfig defaults, from google/gemma-7b and mistralai/Mistral-7B-v0.1; keras-hub reads the same
    pieces from the presets' sentencepiece protos)."""
    import transformers as tr

    assert get_workload("gemma").model.bos_id == tr.GemmaConfig().bos_token_id == 2
    assert get_workload("mistral").model.bos_id == tr.MistralConfig().bos_token_id == 1


@pytest.mark.parametrize("workload", ["gemma", "mistral"])
def test_keras_generate_prompt_is_bos_plus_5_to_max_length_50(workload):
    """benchmark/keras_utils.py@v0.0.5 generate: get_prompts(batch, NUM_WORDS=5) through the preset's
    preprocessor (start token added), model.generate(inputs, max_length=50): a prompt of BOS + 5 tokens and
    44 new ones. The old code fed 5 ids, no BOS, and made 45."""
    from bench.models.workloads.paper.common import _llm_prompt

    m = get_workload(workload).model
    cfg = m.config("full")
    x = _llm_prompt(32, cfg["max_length"], cfg["vocab"], m.bos_id)
    assert x["token_ids"].shape == x["padding_mask"].shape == (32, 50)
    assert (x["token_ids"][:, 0] == m.bos_id).all() and (x["padding_mask"].sum(axis=1) == 6).all()
    assert (x["token_ids"][:, 6:] == 0).all() and not x["padding_mask"][:, 6:].any()
    assert m.new_tokens(cfg) == 44 and m.generate_record(6) == {
        "prompt_tokens": 6, "bos_token_id": m.bos_id, "tokenization_timed": False}


@needs_hf
@pytest.mark.parametrize("workload", ["gemma", "mistral"])
def test_pytorch_generate_prompt_is_bos_plus_5_and_44_new_tokens(workload):
    import torch

    m = get_workload(workload).model
    job = m.torch_job("generate", m.config("full"), 1, torch.device("meta"), {})
    assert job.generated_tokens == 44 and job.recorded["prompt_tokens"] == 6 and job.notes


@needs_hf
@pytest.mark.parametrize("workload", ["gemma", "mistral"])
def test_pytorch_generate_runs_bos_plus_5_to_the_smoke_max_length(workload):
    """Hugging Face generate on the CPU at smoke size: input_ids = [BOS] + 5, min_new_tokens = max_new_tokens
    = 12 - 6: the output is the prompt followed by exactly 6 new tokens."""
    import torch

    m = get_workload(workload).model
    cfg = m.config("smoke")
    job = m.torch_job("generate", cfg, 2, torch.device("cpu"), {})
    seen = {}
    generate = job.model.generate

    def spy(**kw):
        seen.update(kw)
        out = generate(**kw)
        seen["out"] = out
        return out

    job.model.generate = spy
    assert job.call(job.model) == 6
    assert (seen["input_ids"][:, 0] == m.bos_id).all() and seen["input_ids"].shape == (2, 6)
    assert seen["max_new_tokens"] == seen["min_new_tokens"] == 6 and seen["out"].shape == (2, 12)
    assert torch.equal(seen["out"][:, :6], seen["input_ids"])


# ---- FLOPs of generate ----------------------------------------------------------------------------------

@needs_hf
@pytest.mark.parametrize("workload", ["gemma", "mistral"])
def test_generate_flops_equal_a_count_around_hugging_face_generate(workload):
    """``flops.count`` for generate (prefill of BOS + 5 with the last position's logits, then new_tokens - 1
    decode steps) equals FlopCounterMode around the real ``model.generate`` at smoke size on the CPU, with
    eager attention (the CPU's fused SDPA kernel is not counted by FlopCounterMode; eager attention's matmuls
    are the same work the meta count decomposes SDPA into). The old count (prefill of 5 with every
    position's logits, then 45 decode steps) does not."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from bench.models import flops

    m = get_workload(workload).model
    job = m.torch_job("generate", m.config("smoke"), 1, torch.device("cpu"), {})
    job.model.set_attn_implementation("eager")
    with FlopCounterMode(display=False) as fc:
        assert job.call(job.model) == 6
    assert flops.count(workload, "generate", "smoke") == fc.get_total_flops() > 0


# ---- the report's ratio ------------------------------------------------------------------------------------

def _paper_csv(tmp_path, variants):
    """A collected run of bert fit 32 on keras3-jax, one record per (variant name, changes) in ``variants``."""
    from bench.core.atomic import write_json_atomic
    from bench.results.collect import collect
    from bench.results.record import new_record, result_path
    from tests.helpers.cells import make_cell

    run = tmp_path / "run"
    for i, (variant, change) in enumerate(variants):
        stack = ["keras3-jax", "keras3-tf", "keras2-tf", "keras3-torch"][i]
        c = make_cell(stack=stack, suite="paper", workload="bert", task="fit", size=change.get("size", "full"),
                      device=change.get("device", "gpu"), batch_size=32, variant=variant,
                      settings=change.get("settings", {}))
        r = new_record(c)
        r.update(status="ok", finished_utc="2026-11-21T10:00:00+00:00",
                 env={"gpu": change.get("gpu", {"name": "NVIDIA A100-SXM4-40GB", "mig_mode": False})})
        r["metrics"] = {"ms_per_step_mean": 100.0, "examples_per_s": 320.0, "steps": change.get("steps", 100)}
        r["settings"]["model_config"] = {"seq_len": change.get("seq_len", 512)}
        write_json_atomic(result_path(run, c), r)
    collect(run, tmp_path / "run.csv")
    return tmp_path / "run.csv"


def test_ratio_only_where_the_cell_ran_as_the_source(tmp_path):
    """The published bert fit 32 values (keras3-jax 222.37, keras3-tf 214.49, keras2-tf 486.00, keras3-torch
    808.68): a ratio for the cell run as benchmark/__init__.py@v0.0.5 ran it (NUM_STEPS 100, BERT_SEQ_LENGTH
    512, no knob); the reason instead for a knob, other steps, another sequence length; nothing for a CPU
    smoke row. The old report gave every full-size GPU row a ratio."""
    from bench.results.report import read_bench_csv
    from bench.results.report.common import Footnotes
    from bench.results.report.paper import paper_section

    csv = _paper_csv(tmp_path, [("bs32", {}), ("bs32-jit", {"settings": {"jit_compile": False}}),
                                ("bs32", {"steps": 7, "seq_len": 128}), ("bs32", {"size": "smoke", "device": "cpu",
                                                                                  "steps": 3, "seq_len": 16})])
    text = "\n".join(paper_section(read_bench_csv(csv), Footnotes(), {}))
    row = rows_starting(text, "bert", "fit", "32")[0]  # the full cells: the published row
    assert any(c.endswith("/ 222.37 (0.45x)") for c in row)
    jit = rows_starting(text, "bert (jit)", "fit", "32")[0]  # a knob's variant: a row of its own
    assert any(c.endswith("/ 214.49 (no ratio: knob jit_compile)") for c in jit)
    assert any(c.endswith("/ 486.00 (no ratio: 7 timed steps, not 100; sequence length 128, not 512)") for c in row)
    smoke = rows_starting(text, "bert (smoke)", "fit", "32")[0]  # the run's other size: a row of its own
    assert any(c.endswith("/ 808.68") for c in smoke)  # a CPU smoke row: no ratio, no reason
    assert "only where the cell ran as the source ran it" in text



def test_a_variant_beside_the_published_cell_is_a_row_of_its_own_never_picked_for_it(tmp_path):
    """keras3-jax ran bert fit 32 as the source (bs32, 100 ms) and with jit_compile off (bs32-jit_compile-false,
    50 ms), and another 7 timed steps (70 ms): Table 2's published row holds the bs32 cell, its ratio and the Keras 3
    best from it; the others are rows of their own, named. The old table picked the first of the three rows in the
    CSV for the published row (here the jit-off variant: 50.00, the best, no ratio) and showed no other."""
    from bench.core.atomic import write_json_atomic
    from bench.results.collect import collect
    from bench.results.record import new_record, result_path
    from bench.results.report import read_bench_csv
    from bench.results.report.common import Footnotes
    from bench.results.report.paper import paper_section
    from tests.helpers.cells import make_cell

    run = tmp_path / "run"
    for variant, settings, given, ms in [("bs32-jit_compile-false", {"jit_compile": False}, {}, 50.0),
                                         ("bs32", {}, {}, 100.0), ("bs32", {}, {"steps": 7}, 70.0)]:
        c = make_cell(stack="keras3-jax", suite="paper", workload="bert", task="fit", size="full", device="gpu",
                      batch_size=32, variant=variant, settings=settings, **given)
        r = new_record(c)
        r.update(status="ok", finished_utc="2026-11-21T10:00:00+00:00",
                 env={"gpu": {"name": "NVIDIA A100-SXM4-40GB", "mig_mode": False}})
        r["metrics"] = {"ms_per_step_mean": ms, "examples_per_s": 32000 / ms, "steps": given.get("steps", 100)}
        r["settings"]["model_config"] = {"seq_len": 512}
        write_json_atomic(result_path(run, c), r)
    collect(run, tmp_path / "run.csv")
    text = "\n".join(paper_section(read_bench_csv(tmp_path / "run.csv"), Footnotes(), {}))
    published = rows_starting(text, "bert", "fit", "32")[0]  # Table 2 (the throughput table is second)
    assert "**100.00** / 222.37 (0.45x)" in published and "100.00 / 214.49" in published  # its Keras 3 best
    jit = rows_starting(text, "bert (jit_compile-false)", "fit", "32")[0]
    assert "**50.00** / 222.37 (no ratio: knob jit_compile)" in jit
    steps = rows_starting(text, "bert (steps=7)", "fit", "32")[0]
    assert "**70.00** / 222.37 (no ratio: 7 timed steps, not 100)" in steps
    c = make_cell(stack="keras3-jax", suite="paper", workload="bert", task="fit", size="smoke", device="gpu",
                  batch_size=32, variant="bs32")  # the same cell at smoke size: a row of its own, named
    r = new_record(c)
    r.update(status="ok", metrics={"ms_per_step_mean": 9.0, "steps": 3}, env={"gpu": {"name": "NVIDIA A100-SXM4-40GB"}})
    write_json_atomic(result_path(run, c), r)
    collect(run, tmp_path / "run.csv")
    text = "\n".join(paper_section(read_bench_csv(tmp_path / "run.csv"), Footnotes(), {}))
    # the full cell stays the published row (it read "not run" there, the full cell a row "bert (full)" of its own)
    assert "**100.00** / 222.37 (0.45x)" in rows_starting(text, "bert", "fit", "32")[0]
    assert not rows_starting(text, "bert (full)", "fit", "32")
    assert "**9.00** / 222.37" in rows_starting(text, "bert (smoke)", "fit", "32")[0]


SOURCE = "NVIDIA A100-SXM4-40GB"


@pytest.mark.parametrize("gpu, device, shown", [
    ({"name": "NVIDIA A100-SXM4-40GB", "mig_mode": False}, "gpu", "(0.45x)"),  # the source's GPU: the plain ratio
    ({"name": "A100-SXM4-40GB"}, "gpu", "(0.45x)"),  # an older driver's name for it
    # another whole A100: the ratio, and the variant named beside the source's (other bandwidth, power limit)
    ({"name": "NVIDIA A100-SXM4-80GB", "mig_mode": False}, "gpu",
     f"(0.45x; ran on NVIDIA A100-SXM4-80GB; the source's was an {SOURCE})"),
    ({"name": "NVIDIA A100 80GB PCIe"}, "gpu", f"(0.45x; ran on NVIDIA A100 80GB PCIe; the source's was an {SOURCE})"),
    ({"name": "NVIDIA A100-PCIE-40GB"}, "gpu", f"(0.45x; ran on NVIDIA A100-PCIE-40GB; the source's was an {SOURCE})"),
    ({"name": "NVIDIA H100 80GB HBM3", "mig_mode": False}, "gpu",
     f"(no ratio: ran on NVIDIA H100 80GB HBM3; the published figures are from one {SOURCE})"),
    ({"name": "NVIDIA RTX A1000"}, "gpu",  # no A100, whatever its name holds
     f"(no ratio: ran on NVIDIA RTX A1000; the published figures are from one {SOURCE})"),
    ({"name": "NVIDIA A100-SXM4-40GB MIG 3g.20gb", "mig_mode": True}, "gpu",
     f"(no ratio: ran on a MIG slice of NVIDIA A100-SXM4-40GB MIG 3g.20gb; the published figures are from one "
     f"{SOURCE})"),
    ({"name": "NVIDIA A100-SXM4-40GB", "mig_mode": True}, "gpu",  # a MIG UUID: NVML names the parent GPU
     f"(no ratio: ran on a MIG slice of NVIDIA A100-SXM4-40GB; the published figures are from one {SOURCE})"),
    ({}, "gpu", f"(no ratio: ran on an unrecorded GPU; the published figures are from one {SOURCE})"),
    ({"available": False, "reason": "NVML unavailable"}, "cpu", ""),  # a CPU row: no ratio, no reason
])
def test_ratio_only_on_a_whole_a100_the_sources_gpu(tmp_path, gpu, device, shown):
    """The published figures are from one A100-SXM4-40GB (keras_io_benchmarks_2024.csv's header; README.md@v0.0.5:
    a2-highgpu-1g, 1 x NVIDIA A100, 40GB): ours / published is printed only for a cell on a whole A100, plain on that
    variant, and beside the variant that ran and the source's on another (80GB, PCIe); on any other GPU, or a MIG
    slice (a fraction of the SMs), the cell says which GPU ran and that the source's was an A100-SXM4-40GB. The old
    report printed the ratio on any GPU, then a plain one on any A100."""
    from bench.results.report import read_bench_csv
    from bench.results.report.common import Footnotes
    from bench.results.report.paper import paper_section

    csv = _paper_csv(tmp_path, [("bs32", {"gpu": gpu, "device": device})])
    text = "\n".join(paper_section(read_bench_csv(csv), Footnotes(), {}))
    row = rows_starting(text, "bert", "fit", "32")[0]
    cell = next(c for c in row if "/ 222.37" in c)  # keras3-jax's
    assert cell == " ".join(["**100.00** / 222.37", *([shown] if shown else [])])


@pytest.mark.parametrize("task, seq_len, why", [("generate", None, []), ("fit", 128, []),
                                                 ("fit", 64, ["sequence length 64, not 128"]),
                                                 ("fit", None, ["sequence length not recorded, not 128"])])
def test_a_sequence_length_is_compared_only_where_the_task_read_one(task, seq_len, why):
    """A generate row records no sequence length (its config's own shaped nothing: a fixed prompt to
    ``max_length``), as the source fed it none: no reason for that, where before a generate row's missing length
    read as "sequence length n/a, not 128"; a fit row without one (an older record) is not taken as the published
    length."""
    import pandas as pd

    from bench.results.report.paper import source_mismatch
    from bench.results.schema import EffectiveSettings, Env, Metrics, col

    row = {"device": "gpu", "size": "full", "workload": "gemma", "task": task, col(Metrics, "steps"): 100,
           col(Env, "gpu", "name"): SOURCE, col(Env, "gpu", "mig_mode"): False}
    if seq_len is not None:
        row[col(EffectiveSettings, "model_config", "seq_len")] = seq_len
    assert source_mismatch(pd.Series(row)) == why
