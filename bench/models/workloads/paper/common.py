"""What the paper suite's models share: the source's constants, seeded random inputs, the Keras model
libraries per Keras major, Hugging Face builders, and the ``PaperModel`` interface."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from bench.models.workloads.job import Job

#: benchmark/__init__.py@v0.0.5 NUM_WORDS: the generate prompts have 5 words (taken as one token each: common
#: English words of its get_prompts dictionary; not checkable without the presets' vocabularies).
PROMPT_WORDS = 5
#: The prompt generate is fed: the preset preprocessor's BOS, then the 5 word tokens.
PROMPT_TOKENS = 1 + PROMPT_WORDS
#: benchmark/gemma/keras/fit.py@v0.0.5 (and mistral): ``model.backbone.enable_lora(rank=4)``.
LORA_RANK = 4


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def _tokens(batch: int, length: int, vocab: int) -> np.ndarray:
    return _rng().integers(1, vocab, size=(batch, length), dtype=np.int32)


def _keras_mods(stack, keras) -> tuple[Any, Any]:
    """(text models module, vision models module): keras-hub twice on Keras 3, keras-nlp / keras-cv 0.8.2
    on Keras 2 (keras-hub needs Keras 3)."""
    if stack.keras_major == 2:
        import keras_cv
        import keras_nlp

        return keras_nlp, keras_cv
    import keras_hub

    return keras_hub, keras_hub


def prompt_ids(batch: int, vocab: int, bos: int) -> np.ndarray:
    """(batch, ``PROMPT_TOKENS``) int32 prompt ids: ``bos``, then ``PROMPT_WORDS`` random ids in [1, vocab), as
    the source's preset preprocessor fed ``generate`` (its ``generate_preprocess`` adds the start token;
    keras-nlp 0.8.2 / keras-hub 0.32.0 ``GemmaCausalLMPreprocessor``, ``MistralCausalLMPreprocessor``)."""
    ids = np.empty((batch, PROMPT_TOKENS), dtype=np.int32)
    ids[:, 0] = bos
    ids[:, 1:] = _tokens(batch, PROMPT_WORDS, vocab)
    return ids


def _llm_prompt(batch: int, max_length: int, vocab: int, bos: int) -> dict[str, np.ndarray]:
    """keras-hub generate inputs without a preprocessor, (batch, max_length) each: the prompt
    (``prompt_ids``) in the first positions, the rest padding; generation fills every padded position
    (fixed length, no stop token), ``max_length - PROMPT_TOKENS`` new tokens."""
    ids = np.zeros((batch, max_length), dtype=np.int32)
    ids[:, :PROMPT_TOKENS] = prompt_ids(batch, vocab, bos)
    mask = np.zeros((batch, max_length), dtype=bool)
    mask[:, :PROMPT_TOKENS] = True
    return {"token_ids": ids, "padding_mask": mask}


def _torch_dtype(torch, name: str):
    return {"bfloat16": torch.bfloat16, "float32": torch.float32}[name]


def _hf_build(cls, config, dtype, dev):
    """A Hugging Face model with random weights, allocated directly on ``dev`` in ``dtype``."""
    import torch

    with torch.device(dev):
        return cls._from_config(config, dtype=dtype)


class PaperModel(ABC):
    """One model of the suite: its published cells and parameter counts, the dtype it runs in, which stacks
    cannot run it, and the four methods every model implements (the engines call nothing else)."""

    cells: tuple[tuple[str, int], ...] = ()
    published_params: dict[str, int] = {}
    precision = "float32"

    def unsupported(self, stack) -> str | None:
        """Why ``stack`` cannot run this model (None when it can)."""
        return None

    @abstractmethod
    def config(self, size: str) -> dict[str, Any]:
        """The architecture and input shapes at ``size`` (``smoke``: a small config of the same
        architecture; ``full``: the published one)."""

    def reads_seq_len(self, task: str) -> bool:
        """Whether ``task``'s inputs are built from the config's ``seq_len`` (what ``--seq-len`` sets): a model whose
        config has one (not the image models), in every task unless a subclass says otherwise."""
        return "seq_len" in self.config("full")

    def task_config(self, task: str, cfg: dict[str, Any]) -> dict[str, Any]:
        """``cfg`` as ``task`` read it, for its record: without the ``seq_len`` of a task that reads none
        (``reads_seq_len``), so a record names only the shapes that ran. A subclass drops what else a task leaves
        unread."""
        return cfg if self.reads_seq_len(task) else {k: v for k, v in cfg.items() if k != "seq_len"}

    @abstractmethod
    def keras_job(self, stack, keras, task: str, cfg: dict[str, Any], batch: int, settings: dict[str, Any]) -> Job:
        """The Keras model and inputs of ``task`` (``fit``, ``predict``, ``generate``) at ``batch`` examples."""

    @abstractmethod
    def torch_job(self, task: str, cfg: dict[str, Any], batch: int, dev, settings: dict[str, Any]) -> Job:
        """The PyTorch model and the call that runs one step of ``task`` on device ``dev``."""

    @abstractmethod
    def torch_model(self, cfg: dict[str, Any], dtype=None, dev="cpu"):
        """The Hugging Face model itself (also built on the meta device for parameter and FLOP counts)."""
