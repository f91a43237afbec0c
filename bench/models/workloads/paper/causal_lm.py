"""Gemma 7B and Mistral 7B: causal LMs in bfloat16, fit with LoRA rank 4, greedy generate."""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.core.reference.keras_benchmarks import NOT_REQUESTED, SEQ_LENGTH
from bench.models.workloads.job import Job
from bench.models.workloads.paper.common import (
    LORA_RANK,
    PROMPT_TOKENS,
    PaperModel,
    _hf_build,
    _keras_mods,
    _llm_prompt,
    _tokens,
    _torch_dtype,
    prompt_ids,
)

#: Why a generate record's time has no tokenizer in it (the record's note; docs/suites/paper.md, "Method vs the
#: sources").
TOKENIZATION_NOTE = (
    "generate: tokenization and detokenization are outside the timed call (settings.tokenization_timed false): "
    "the prompt is fed as BOS + 5 token ids; the source (benchmark/keras_utils.py@v0.0.5 generate) passed 5-word "
    "strings through the preset's preprocessor, so its time includes tokenizing the prompt and detokenizing the "
    "output")


class CausalLM(PaperModel):
    """Shared by Gemma and Mistral: fit (LoRA) at seq len 128; greedy generate of BOS + 5-token prompts to
    ``max_length`` 50 (44 new tokens), without the tokenizer (``TOKENIZATION_NOTE``)."""

    name = ""
    cells = (("fit", 8), ("generate", 32), ("generate", 1))
    precision = "bfloat16"
    #: The preset tokenizer's start (BOS) id, which its preprocessor puts before every prompt.
    bos_id = 0

    def reads_seq_len(self, task: str) -> bool:
        """fit only: generate feeds a fixed prompt and runs to ``max_length`` (``_llm_prompt``, ``prompt_ids``), as
        the source's ``model.generate(prompts, max_length=50)`` (benchmark/keras_utils.py@v0.0.5)."""
        return task == "fit" and super().reads_seq_len(task)

    def task_config(self, task: str, cfg: dict[str, Any]) -> dict[str, Any]:
        """As the base's, and fit, which generates nothing, without ``max_length``."""
        cfg = super().task_config(task, cfg)
        return cfg if task != "fit" else {k: v for k, v in cfg.items() if k != "max_length"}

    def new_tokens(self, cfg) -> int:
        """Tokens each generate call adds per sequence: to ``max_length``, as the source's
        ``model.generate(prompts, max_length=50)`` (benchmark/keras_utils.py@v0.0.5)."""
        return cfg["max_length"] - PROMPT_TOKENS

    def generate_record(self, prompt_len: int) -> dict[str, Any]:
        """The generate settings a record carries: the prompt length fed (``prompt_len``, tokens, BOS
        included), the BOS id, and that tokenization is outside the timed call."""
        return {"prompt_tokens": prompt_len, "bos_token_id": self.bos_id, "tokenization_timed": False}

    def keras_backbone(self, nlp, cfg):
        raise NotImplementedError

    def keras_lm(self, nlp):
        raise NotImplementedError

    def hf(self, cfg):
        raise NotImplementedError

    def keras_job(self, stack, keras, task, cfg, batch, settings) -> Job:
        nlp, _ = _keras_mods(stack, keras)
        lm = self.keras_lm(nlp)(self.keras_backbone(nlp, cfg), preprocessor=None)
        if task == "fit":
            lm.backbone.enable_lora(rank=LORA_RANK)
            ids = _tokens(batch, cfg["seq_len"], cfg["vocab"])
            x = {"token_ids": ids, "padding_mask": np.ones_like(ids, dtype=bool)}
            return Job(model=lm, inputs=x, targets=ids, optimizer="adamw", precision=self.precision,
                       loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        prompt = _llm_prompt(batch, cfg["max_length"], cfg["vocab"], self.bos_id)
        prompt_len = int(prompt["padding_mask"].sum(axis=1).min())
        jit = settings.get("jit_compile", NOT_REQUESTED)
        # the source: model.compile(sampler="greedy"), no jit_compile (benchmark/*/keras/predict.py@v0.0.5)
        lm.compile(sampler="greedy", **({} if jit == NOT_REQUESTED else {"jit_compile": jit}))
        kw = {} if stack.keras_major == 2 else {"stop_token_ids": None}

        def generate(_model):
            out = lm.generate(prompt, **kw)
            return int(np.asarray(out["padding_mask"]).sum(axis=1).min()) - prompt_len

        return Job(model=lm, call=generate, precision=self.precision, generated_tokens=self.new_tokens(cfg),
                   recorded=self.generate_record(prompt_len), notes=(TOKENIZATION_NOTE,))

    def torch_model(self, cfg, dtype=None, dev="cpu"):
        cls, config = self.hf(cfg)
        return _hf_build(cls, config, dtype, dev)

    def torch_job(self, task, cfg, batch, dev, settings) -> Job:
        import torch

        model = self.torch_model(cfg, _torch_dtype(torch, self.precision), dev)
        if task == "fit":
            import peft

            model = peft.get_peft_model(model, peft.LoraConfig(r=LORA_RANK, target_modules=["q_proj", "v_proj"]))
            ids = torch.from_numpy(_tokens(batch, cfg["seq_len"], cfg["vocab"])).long().to(dev)
            return Job(model=model, optimizer="adamw", precision=self.precision,
                       call=lambda m: m(input_ids=ids, labels=ids).loss)
        ids = torch.from_numpy(prompt_ids(batch, cfg["vocab"], self.bos_id)).long().to(dev)
        new = self.new_tokens(cfg)

        def generate(m):
            out = m.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                             min_new_tokens=new, do_sample=False, pad_token_id=0)
            return int(out.shape[1]) - int(ids.shape[1])

        return Job(model=model, call=generate, precision=self.precision, generated_tokens=new,
                   recorded=self.generate_record(int(ids.shape[1])), notes=(TOKENIZATION_NOTE,))


class Gemma(CausalLM):
    """Gemma 7B (gemma_7b_en): 28 layers, hidden 3072, bfloat16; keras-hub only on Keras 3."""

    name = "gemma"
    published_params = {"total": 8_537_680_896}
    bos_id = 2  # "<bos>" in gemma_7b_en's vocabulary; transformers 5.23 GemmaConfig().bos_token_id

    def config(self, size: str) -> dict[str, Any]:
        if size == "full":
            return dict(vocab=256000, layers=28, q_heads=16, kv_heads=16, hidden=3072, inter=49152, head_dim=256,
                        seq_len=SEQ_LENGTH[self.name], max_length=50)
        return dict(vocab=128, layers=2, q_heads=2, kv_heads=2, hidden=16, inter=64, head_dim=8,
                    seq_len=16, max_length=12)

    def unsupported(self, stack) -> str | None:
        if stack.keras_major == 2:
            return "GemmaBackbone requires Keras 3 (keras-nlp 0.8.2 refuses tf.keras); the published table has NA"
        return None

    def keras_lm(self, nlp):
        return nlp.models.GemmaCausalLM

    def keras_backbone(self, nlp, cfg):
        # keras-hub's intermediate_dim is twice the FFN width (halved inside), see docs/suites/paper.md
        return nlp.models.GemmaBackbone(
            vocabulary_size=cfg["vocab"], num_layers=cfg["layers"], num_query_heads=cfg["q_heads"],
            num_key_value_heads=cfg["kv_heads"], hidden_dim=cfg["hidden"], intermediate_dim=cfg["inter"],
            head_dim=cfg["head_dim"], layer_norm_epsilon=1e-6, dropout=0)

    def hf(self, cfg):
        import transformers as tr

        return tr.GemmaForCausalLM, tr.GemmaConfig(
            vocab_size=cfg["vocab"], hidden_size=cfg["hidden"], intermediate_size=cfg["inter"] // 2,
            num_hidden_layers=cfg["layers"], num_attention_heads=cfg["q_heads"],
            num_key_value_heads=cfg["kv_heads"], head_dim=cfg["head_dim"], rms_norm_eps=1e-6)


class Mistral(CausalLM):
    """Mistral 7B (mistral_7b_en): 32 layers, hidden 4096, bfloat16; keras-hub only on Keras 3."""

    name = "mistral"
    published_params = {"total": 7_241_732_096}
    bos_id = 1  # "<s>" in mistral_7b_en's vocabulary; transformers 5.23 MistralConfig().bos_token_id

    def config(self, size: str) -> dict[str, Any]:
        if size == "full":
            return dict(vocab=32000, layers=32, q_heads=32, kv_heads=8, hidden=4096, inter=14336, window=4096,
                        seq_len=SEQ_LENGTH[self.name], max_length=50)
        return dict(vocab=128, layers=2, q_heads=4, kv_heads=2, hidden=16, inter=32, window=4096,
                    seq_len=16, max_length=12)

    def unsupported(self, stack) -> str | None:
        if stack.keras_major == 2 and self.precision == "bfloat16":
            return ("Mistral in bfloat16 fails on Keras 2 (keras-nlp 0.8.2 RotaryEmbedding); the published table "
                    "has NA")
        return None

    def keras_lm(self, nlp):
        return nlp.models.MistralCausalLM

    def keras_backbone(self, nlp, cfg):
        return nlp.models.MistralBackbone(
            vocabulary_size=cfg["vocab"], num_layers=cfg["layers"], num_query_heads=cfg["q_heads"],
            num_key_value_heads=cfg["kv_heads"], hidden_dim=cfg["hidden"], intermediate_dim=cfg["inter"],
            rope_max_wavelength=10000, sliding_window=cfg["window"], dropout=0)

    def hf(self, cfg):
        import transformers as tr

        return tr.MistralForCausalLM, tr.MistralConfig(
            vocab_size=cfg["vocab"], hidden_size=cfg["hidden"], intermediate_size=cfg["inter"],
            num_hidden_layers=cfg["layers"], num_attention_heads=cfg["q_heads"],
            num_key_value_heads=cfg["kv_heads"], sliding_window=cfg["window"], rope_theta=10000.0)
