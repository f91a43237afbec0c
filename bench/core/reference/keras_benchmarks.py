"""What the paper suite's source requested, cell by cell: haifeng-jin/keras-benchmarks v0.0.5, the code the
keras.io "Keras 3 benchmarks" page cites. The default of every paper cell is this request; a ``jit_compile``
knob is a named variant (``bench.core.families.keras.KerasStepSettings``).

XLA (``jit_compile``) in the source is not uniform:

- ``benchmark/keras_utils.py@v0.0.5`` ``use_jit()``: True except on Keras 3's torch backend. BERT fit and
  predict, Gemma/Mistral fit and SAM fit pass ``jit_compile=use_jit()`` to ``compile``; SD predict builds
  ``keras_cv.models.StableDiffusion(jit_compile=use_jit())``, which compiles its UNet with
  ``jit_compile=True`` when asked and leaves it uncompiled otherwise (keras-cv 0.8.2
  ``stable_diffusion.py``, ``diffusion_model`` property).
- SAM predict calls ``predict`` on the uncompiled ``SegmentAnythingModel`` (only ``model.backbone``, which
  predict never calls apart, is compiled); SD fit compiles with ``loss="mse", optimizer="adam"`` and no
  ``jit_compile``; Gemma/Mistral generate compile with ``sampler="greedy"`` only. Those cells take the
  libraries' own defaults (``NOT_REQUESTED``): Keras 2 builds the model's functions without XLA (``jit_compile``
  None; keras 2.15, which the source ran, and tf_keras 2.15 ``src/engine/training.py`` build XLA functions only
  when it is truthy), though its optimizers keep their own ``jit_compile=True`` and apply each update under XLA
  when a GPU is listed (keras/optimizers/optimizer.py@v2.15.0:49, 59-67; tf_keras 2.21.0 the same): SD fit's
  Adam update; Keras 3 resolves "auto"
  (keras 3.15.1 ``keras/src/trainers/trainer.py`` ``_resolve_auto_jit_compile``, the same in 3.0.5): False on
  torch, False on TensorFlow without a GPU, else True when every layer ``supports_jit``. Generate compiles
  by keras-hub's ``CausalLM.make_generate_function`` (0.32.0; keras-nlp 0.8.2's ``GenerativeTask`` does
  the same): ``jax.jit`` on JAX whatever ``jit_compile`` says, ``tf.function(jit_compile=model.jit_compile)``
  on TensorFlow, eager under ``torch.no_grad`` on torch. keras-nlp 0.8.2's ``GenerativeTask.compile``
  defaulted to ``jit_compile=True`` (its ``Task.compile`` forced False on torch); keras-hub's passes Keras'
  "auto", which resolves the same on a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The tag every citation below refers to.
TAG = "v0.0.5"
#: ``benchmark/__init__.py@v0.0.5``: steps timed after the first (``NUM_STEPS``), and the sequence lengths
#: (``BERT_SEQ_LENGTH``, ``GEMMA_SEQ_LENGTH``, ``MISTRAL_SEQ_LENGTH``).
NUM_STEPS = 100
SEQ_LENGTH = {"bert": 512, "gemma": 128, "mistral": 128}
#: ``jit_compile_requested`` of a cell whose source passed no ``jit_compile``: the libraries' default applies.
NOT_REQUESTED = "not requested (Keras default)"
#: The GPU the keras.io page's Table 2 was measured on (the header of ``keras_io_benchmarks_2024.csv``;
#: README.md@v0.0.5: "a2-highgpu-1g", "1 x NVIDIA A100", "40GB"): a2-highgpu-1g's A100 40GB, the SXM4 board, which
#: NVML names ``SOURCE_GPU_NAME``; and its family as ``bench.core.gpus.gpu_family`` names it. A ratio of ours to a
#: published figure is given on a whole GPU of that family; on another A100 variant (80GB, PCIe: other memory
#: bandwidth and power limit) the cell names it beside the ratio.
SOURCE_GPU_NAME = "NVIDIA A100-SXM4-40GB"
SOURCE_GPU = f"one {SOURCE_GPU_NAME}"
SOURCE_GPU_FAMILY = "A100"


def use_jit(keras_major: int, backend: str) -> bool:
    """``benchmark/keras_utils.py@v0.0.5`` ``use_jit()``: XLA except on Keras 3's torch backend.

    ``keras_major``: 2 (tf.keras) or 3; ``backend``: ``tensorflow``, ``jax`` or ``torch``."""
    return not (keras_major == 3 and backend == "torch")


@dataclass(frozen=True)
class SourceJit:
    """The ``jit_compile`` one cell's source requested.

    Attributes:
        file: the source file (its path at ``TAG``).
        call: the call that sets it, as the source wrote it.
        uses_jit: True when the source passed ``use_jit()``; False when it passed nothing (``NOT_REQUESTED``).
    """

    file: str
    call: str
    uses_jit: bool

    @property
    def cite(self) -> str:
        """``file@v0.0.5: call``."""
        return f"{self.file}@{TAG}: {self.call}"

    def requested(self, keras_major: int, backend: str) -> bool | str:
        """True/False (``use_jit()`` on this stack) or ``NOT_REQUESTED``."""
        return use_jit(keras_major, backend) if self.uses_jit else NOT_REQUESTED


def _fit_llm(name: str) -> SourceJit:
    return SourceJit(f"benchmark/{name}/keras/fit.py", "model.compile(loss=SparseCategoricalCrossentropy("
                     "from_logits=True), optimizer=AdamW(), jit_compile=keras_utils.use_jit())", True)


def _generate(name: str) -> SourceJit:
    return SourceJit(f"benchmark/{name}/keras/predict.py", 'model.compile(sampler="greedy")', False)


#: (workload, task) -> what keras-benchmarks v0.0.5 requested for ``jit_compile`` in that cell.
SOURCE_JIT: dict[tuple[str, str], SourceJit] = {
    ("bert", "fit"): SourceJit("benchmark/bert/keras/fit.py", "model.compile(loss=SparseCategoricalCrossentropy("
                               "from_logits=True), optimizer=AdamW(), jit_compile=keras_utils.use_jit())", True),
    ("bert", "predict"): SourceJit("benchmark/bert/keras/predict.py",
                                   "model.compile(jit_compile=keras_utils.use_jit())", True),
    ("gemma", "fit"): _fit_llm("gemma"),
    ("gemma", "generate"): _generate("gemma"),
    ("mistral", "fit"): _fit_llm("mistral"),
    ("mistral", "generate"): _generate("mistral"),
    ("segment_anything", "fit"): SourceJit(
        "benchmark/sam/keras/fit.py",
        'backbone.compile(loss="mse", optimizer="adam", jit_compile=keras_utils.use_jit())', True),
    ("segment_anything", "predict"): SourceJit(
        "benchmark/sam/keras/predict.py",
        "model.predict on the uncompiled SegmentAnythingModel (only model.backbone.compile(jit_compile="
        "keras_utils.use_jit()), which predict does not use)", False),
    ("stable_diffusion", "fit"): SourceJit("benchmark/stable_diffusion/keras/fit.py",
                                           'backbone.compile(loss="mse", optimizer="adam")', False),
    ("stable_diffusion", "predict"): SourceJit(
        "benchmark/stable_diffusion/keras/predict.py",
        "keras_cv.models.StableDiffusion(jit_compile=keras_utils.use_jit()): the UNet compiled with "
        "jit_compile=True, else left uncompiled", True),
}


def source_jit(workload: str, task: str) -> SourceJit:
    """The declaration of one paper cell.

    Raises:
        KeyError: a (workload, task) the source did not run.
    """
    try:
        return SOURCE_JIT[(workload, task)]
    except KeyError:
        raise KeyError(f"keras-benchmarks {TAG} has no Keras cell {workload} {task}") from None
