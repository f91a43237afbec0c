"""The paper suite's registration: its five models as ``StepWorkload``s, each with its published (task, batch) cells
(``bench.models.workloads.paper``)."""

from __future__ import annotations

from bench.models.workloads import StepWorkload
from bench.models.workloads.paper.bert import Bert
from bench.models.workloads.paper.causal_lm import Gemma, Mistral
from bench.models.workloads.paper.segment_anything import SegmentAnything
from bench.models.workloads.paper.stable_diffusion import StableDiffusion

#: The workloads it registers, by name, in order: a literal, which the host reads without importing this module
#: (``bench.core.workloadnames``).
NAMES = ("segment_anything", "stable_diffusion", "bert", "gemma", "mistral")
#: Its place in the registry's order (``bench.models.workloads.discover``): after the classic and tuning suites.
ORDER = 200
#: How its workloads are timed: by step (``StepWorkload``s), a literal the host reads (``FIDELITY_WORKLOAD`` refused).
TIMING = "step"

WORKLOADS = tuple(
    StepWorkload(name=name, suite="paper", cells=model.cells, model=model,
                 source="keras.io Keras 3 benchmarks (2024), keras-benchmarks v0.0.5: " + what)
    for name, (model, what) in zip(NAMES, (
        (SegmentAnything(), "SAM huge (sam_huge_sa1b): ViTDet-H image encoder, 1024x1024"),
        (StableDiffusion(), "Stable Diffusion 1.4 (keras-cv), 512x512"),
        (Bert(), "BERT base (bert_base_en), seq len 512, 2-class head"),
        (Gemma(), "Gemma 7B (gemma_7b_en), seq len 128, bfloat16, LoRA rank 4"),
        (Mistral(), "Mistral 7B (mistral_7b_en), seq len 128, bfloat16, LoRA rank 4"),
    ), strict=True))
