"""SegmentAnything (SAM huge, sam_huge_sa1b): the ViTDet-H image encoder and mask decoder."""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.models.workloads.job import Job
from bench.models.workloads.paper.common import (
    PaperModel,
    _hf_build,
    _keras_mods,
    _rng,
)


class SegmentAnything(PaperModel):
    """SAM huge: ViTDet-H image encoder (1024x1024 at full size), prompt encoder and mask decoder. fit trains the
    image encoder alone (MSE against (64, 64, 256) embeddings at full size); predict runs the whole model on
    (B, H, W, 3) images with point prompts."""

    cells = (("fit", 1), ("predict", 4))
    published_params = {"total": 641_090_864, "image_encoder": 637_026_048}

    def config(self, size: str) -> dict[str, Any]:
        if size == "full":
            return dict(image=1024, hidden=1280, layers=32, inter=5120, heads=16, global_idx=[7, 15, 23, 31],
                        window=14, out=256, dec_inter=2048, dec_heads=8, mask_in=16, iou_hidden=256)
        return dict(image=64, hidden=16, layers=2, inter=32, heads=2, global_idx=[1], window=2, out=16,
                    dec_inter=32, dec_heads=2, mask_in=4, iou_hidden=16)

    def embed(self, cfg) -> int:
        return cfg["image"] // 16

    def images(self, cfg, batch):
        """(B, H, W, 3) float64 in [0, 1): the Keras source's ``np.random.rand(1, 1024, 1024, 3)``
        (benchmark/sam/keras/fit.py@v0.0.5:12, predict.py@v0.0.5:12), float64 as NumPy makes it; the PyTorch
        jobs cast to float32, as their source's ``torch.Tensor`` (benchmark/sam/torch/*.py@v0.0.5:31)."""
        return _rng().random((batch, cfg["image"], cfg["image"], 3))

    def prompts(self, cfg, batch):
        """(points (B, 2, 2), labels (B, 2)), int64 as the Keras source's ``np.array`` of Python ints: its two
        clicks, (500, 375) and (250, 375) on a 1024 px image (scaled to the image size, rounded down), labelled
        [1, 2] (benchmark/sam/keras/predict.py@v0.0.5:16-20)."""
        pts = np.array([[500, 375], [250, 375]], np.int64) * cfg["image"] // 1024
        return np.repeat(pts[None], batch, 0), np.repeat(np.array([[1, 2]], np.int64), batch, 0)

    def _keras3(self, hub, cfg) -> dict[str, Any]:
        """keras-hub's SAM parts (image encoder, prompt encoder, mask decoder)."""
        img, e = cfg["image"], self.embed(cfg)
        return {
            "image": hub.models.ViTDetBackbone(
                hidden_size=cfg["hidden"], num_layers=cfg["layers"], intermediate_dim=cfg["inter"],
                num_heads=cfg["heads"], global_attention_layer_indices=cfg["global_idx"], patch_size=16,
                num_output_channels=cfg["out"], window_size=cfg["window"], image_shape=(img, img, 3)),
            "prompt": hub.layers.SAMPromptEncoder(hidden_size=cfg["out"], image_embedding_size=(e, e),
                                                  input_image_size=(img, img), mask_in_channels=cfg["mask_in"]),
            "mask": hub.layers.SAMMaskDecoder(
                num_layers=2, hidden_size=cfg["out"], intermediate_dim=cfg["dec_inter"], num_heads=cfg["dec_heads"],
                embedding_dim=cfg["out"], num_multimask_outputs=3, iou_head_depth=3,
                iou_head_hidden_dim=cfg["iou_hidden"]),
        }

    def _keras2(self, cv, cfg) -> dict[str, Any]:
        """The same parts from keras-cv 0.8.2 (its argument names)."""
        img, e = cfg["image"], self.embed(cfg)
        return {
            "image": cv.models.ViTDetBackbone(
                include_rescaling=False, input_shape=(img, img, 3), patch_size=16, embed_dim=cfg["hidden"],
                depth=cfg["layers"], mlp_dim=cfg["inter"], num_heads=cfg["heads"], out_chans=cfg["out"],
                window_size=cfg["window"], global_attention_indices=cfg["global_idx"]),
            "prompt": cv.models.SAMPromptEncoder(embed_dim=cfg["out"], image_embedding_size=(e, e),
                                                 input_image_size=(img, img), mask_in_chans=cfg["mask_in"]),
            "mask": cv.models.SAMMaskDecoder(
                transformer_dim=cfg["out"], num_multimask_outputs=3, iou_head_depth=3,
                iou_head_hidden_dim=cfg["iou_hidden"],
                transformer=cv.models.TwoWayTransformer(depth=2, embed_dim=cfg["out"], num_heads=cfg["dec_heads"],
                                                        mlp_dim=cfg["dec_inter"])),
        }

    def keras_job(self, stack, keras, task, cfg, batch, settings) -> Job:
        _, cv = _keras_mods(stack, keras)
        e = self.embed(cfg)
        parts = self._keras3(cv, cfg) if stack.keras_major == 3 else self._keras2(cv, cfg)
        x = self.images(cfg, batch)
        if task == "fit":  # the source trains the image encoder alone, MSE against (64, 64, 256) targets
            y = _rng().random((batch, e, e, cfg["out"]))  # float64: np.random.rand (fit.py@v0.0.5:13)
            return Job(model=parts["image"], inputs=x, targets=y, optimizer="adam", loss="mse")
        if stack.keras_major == 3:
            model = cv.models.SAMImageSegmenter(cv.models.SAMBackbone(parts["image"], parts["prompt"],
                                                                       parts["mask"]))
        else:
            model = cv.models.SegmentAnythingModel(backbone=parts["image"], prompt_encoder=parts["prompt"],
                                                   mask_decoder=parts["mask"])
        points, labels = self.prompts(cfg, batch)
        return Job(model=model, inputs={"images": x, "points": points, "labels": labels})

    def torch_model(self, cfg, dtype=None, dev="cpu"):
        import transformers as tr

        e = self.embed(cfg)
        config = tr.SamConfig(
            vision_config=dict(hidden_size=cfg["hidden"], num_hidden_layers=cfg["layers"],
                               num_attention_heads=cfg["heads"], global_attn_indexes=cfg["global_idx"],
                               mlp_dim=cfg["inter"], image_size=cfg["image"], window_size=cfg["window"],
                               output_channels=cfg["out"], num_pos_feats=cfg["out"] // 2),
            prompt_encoder_config=dict(hidden_size=cfg["out"], image_size=cfg["image"], image_embedding_size=e,
                                       mask_input_channels=cfg["mask_in"]),
            mask_decoder_config=dict(hidden_size=cfg["out"], mlp_dim=cfg["dec_inter"],
                                     num_attention_heads=cfg["dec_heads"], iou_head_hidden_dim=cfg["iou_hidden"]))
        return _hf_build(tr.SamModel, config, dtype, dev)

    def torch_job(self, task, cfg, batch, dev, settings) -> Job:
        import torch

        model = self.torch_model(cfg, dev=dev)
        x = torch.from_numpy(self.images(cfg, batch)).float().permute(0, 3, 1, 2).contiguous().to(dev)
        if task == "fit":
            e = self.embed(cfg)
            y = torch.from_numpy(_rng().random((batch, cfg["out"], e, e), dtype=np.float32)).to(dev)
            encoder = model.vision_encoder
            return Job(model=encoder, optimizer="adam",
                       call=lambda m: torch.nn.functional.mse_loss(m(pixel_values=x).last_hidden_state, y))
        points, labels = self.prompts(cfg, batch)
        pts = torch.from_numpy(points).float()[:, None].to(dev)  # (B, 1 prompt, 2 points, xy)
        lab = torch.from_numpy(labels).long()[:, None].to(dev)
        return Job(model=model, call=lambda m: m(pixel_values=x, input_points=pts, input_labels=lab).pred_masks)
