"""BERT base (bert_base_en): fit with a 2-class head at seq len 512, predict."""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.core.reference.keras_benchmarks import SEQ_LENGTH
from bench.models.workloads.job import Job
from bench.models.workloads.paper.common import (
    PaperModel,
    _hf_build,
    _keras_mods,
    _rng,
    _tokens,
)


class Bert(PaperModel):
    """BERT base (bert_base_en): 12 layers, hidden 768, a 2-class classifier head; (B, 512) token ids at full
    size. fit and predict as the source."""

    cells = (("fit", 32), ("predict", 256))
    published_params = {"total": 108_311_810, "backbone": 108_310_272}

    def config(self, size: str) -> dict[str, Any]:
        if size == "full":
            return dict(vocab=28996, layers=12, heads=12, hidden=768, inter=3072, max_len=512,
                        seq_len=SEQ_LENGTH["bert"])
        return dict(vocab=128, layers=2, heads=2, hidden=16, inter=32, max_len=32, seq_len=16)

    def inputs(self, cfg, batch: int) -> dict[str, np.ndarray]:
        s = cfg["seq_len"]
        return {"token_ids": _tokens(batch, s, cfg["vocab"]), "segment_ids": np.zeros((batch, s), np.int32),
                "padding_mask": np.ones((batch, s), bool)}

    def keras_job(self, stack, keras, task, cfg, batch, settings) -> Job:
        nlp, _ = _keras_mods(stack, keras)
        backbone = nlp.models.BertBackbone(
            vocabulary_size=cfg["vocab"], num_layers=cfg["layers"], num_heads=cfg["heads"],
            hidden_dim=cfg["hidden"], intermediate_dim=cfg["inter"], dropout=0.1,
            max_sequence_length=cfg["max_len"], num_segments=2)
        cls = getattr(nlp.models, "BertTextClassifier", None) or nlp.models.BertClassifier
        model = cls(backbone, num_classes=2, preprocessor=None)
        y = _rng().integers(0, 2, size=(batch,), dtype=np.int32)
        return Job(model=model, inputs=self.inputs(cfg, batch), targets=y, optimizer="adamw",
                   loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))

    def torch_model(self, cfg, dtype=None, dev="cpu"):
        import transformers as tr

        config = tr.BertConfig(vocab_size=cfg["vocab"], hidden_size=cfg["hidden"], num_hidden_layers=cfg["layers"],
                               num_attention_heads=cfg["heads"], intermediate_size=cfg["inter"],
                               max_position_embeddings=cfg["max_len"], type_vocab_size=2, num_labels=2)
        return _hf_build(tr.BertForSequenceClassification, config, dtype, dev)

    def torch_job(self, task, cfg, batch, dev, settings) -> Job:
        import torch

        model = self.torch_model(cfg, dev=dev)
        x = {k: torch.from_numpy(v).to(dev) for k, v in self.inputs(cfg, batch).items()}
        # no attention_mask: every position is real (all ones), and None is the same computation
        feed = {"input_ids": x["token_ids"].long(), "token_type_ids": x["segment_ids"].long()}
        y = torch.from_numpy(_rng().integers(0, 2, size=(batch,))).to(dev)
        if task == "fit":
            return Job(model=model, optimizer="adamw", call=lambda m: m(**feed, labels=y).loss)
        return Job(model=model, call=lambda m: m(**feed).logits)
