"""The Keras 3 benchmark suite (keras.io "Keras 3 benchmarks", Table 2; code keras-benchmarks v0.0.5):
SegmentAnything, StableDiffusion, BERT, Gemma 7B, Mistral 7B, each with random weights built from the
published architecture config (``../shared/docs/workloads.md``).

Each model is one small class with the same four methods (the TorchBench idea): ``config(size)``,
``keras_job`` (keras-hub on Keras 3; keras-nlp / keras-cv 0.8.2 on Keras 2; keras-cv for SD 1.4 as in
the original), ``torch_job`` (transformers / diffusers / peft, idiomatic out-of-the-box PyTorch) and
``torch_model`` (the Hugging Face model, also used on the meta device for parameter and FLOP counts).

Method kept from the source: random inputs of the published shapes, losses (sparse categorical
cross-entropy from logits for BERT and the LLMs, MSE for the SAM and SD encoders), AdamW for BERT and
the LLMs and Adam for the encoders, ``jit_compile`` on except for Keras' torch backend, bfloat16 and
LoRA rank 4 for the LLMs, greedy generation of 5-token prompts to 50 tokens, and for SD predict the
time of one denoising step (two UNet passes, conditional and unconditional, plus the scheduler update).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.workloads import Job, StepWorkload, register

PROMPT_TOKENS = 5  # keras-benchmarks: 5-word prompts (NUM_WORDS)
LORA_RANK = 4
GUIDANCE = 7.5  # keras-cv / diffusers default unconditional_guidance_scale


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


def _llm_prompt(batch: int, max_length: int, vocab: int) -> dict[str, np.ndarray]:
    """keras-hub generate inputs without a preprocessor: the prompt in the first positions, the rest
    padding; generation fills every padded position (fixed length, no stop token)."""
    ids = np.zeros((batch, max_length), dtype=np.int32)
    ids[:, :PROMPT_TOKENS] = _tokens(batch, PROMPT_TOKENS, vocab)
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


class PaperModel:
    """What every model of the suite shares: its published cells and parameter counts, the dtype it runs in,
    and which stacks cannot run it."""

    cells: tuple[tuple[str, int], ...] = ()
    published_params: dict[str, int] = {}
    precision = "float32"

    def unsupported(self, stack) -> str | None:
        """Why ``stack`` cannot run this model (None when it can)."""
        return None


# ---- BERT base (bert_base_en) ------------------------------------------------------------------------

class Bert(PaperModel):
    cells = (("fit", 32), ("predict", 256))
    published_params = {"total": 108_311_810, "backbone": 108_310_272}

    def config(self, size: str) -> dict[str, Any]:
        if size == "full":
            return dict(vocab=28996, layers=12, heads=12, hidden=768, inter=3072, max_len=512, seq_len=512)
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


# ---- Gemma 7B and Mistral 7B: causal LMs, bfloat16, LoRA rank 4 for fit -------------------------------

class CausalLM(PaperModel):
    """Shared by Gemma and Mistral: fit (LoRA) at seq len 128, greedy generate of 5-token prompts to 50."""

    name = ""
    cells = (("fit", 8), ("generate", 32), ("generate", 1))
    precision = "bfloat16"

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
        prompt = _llm_prompt(batch, cfg["max_length"], cfg["vocab"])
        lm.compile(sampler="greedy")
        kw = {} if stack.keras_major == 2 else {"stop_token_ids": None}

        def generate(_model):
            out = lm.generate(prompt, **kw)
            return int(np.asarray(out["padding_mask"]).sum(axis=1).min()) - PROMPT_TOKENS

        return Job(model=lm, call=generate, precision=self.precision,
                   generated_tokens=cfg["max_length"] - PROMPT_TOKENS)

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
        ids = torch.from_numpy(_tokens(batch, PROMPT_TOKENS, cfg["vocab"])).long().to(dev)
        new = cfg["max_length"] - PROMPT_TOKENS

        def generate(m):
            out = m.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                             min_new_tokens=new, do_sample=False, pad_token_id=0)
            return int(out.shape[1]) - PROMPT_TOKENS

        return Job(model=model, call=generate, precision=self.precision, generated_tokens=new)


class Gemma(CausalLM):
    name = "gemma"
    published_params = {"total": 8_537_680_896}

    def config(self, size: str) -> dict[str, Any]:
        if size == "full":
            return dict(vocab=256000, layers=28, q_heads=16, kv_heads=16, hidden=3072, inter=49152, head_dim=256,
                        seq_len=128, max_length=50)
        return dict(vocab=128, layers=2, q_heads=2, kv_heads=2, hidden=16, inter=64, head_dim=8,
                    seq_len=16, max_length=12)

    def unsupported(self, stack) -> str | None:
        if stack.keras_major == 2:
            return "GemmaBackbone requires Keras 3 (keras-nlp 0.8.2 refuses tf.keras); the published table has NA"
        return None

    def keras_lm(self, nlp):
        return nlp.models.GemmaCausalLM

    def keras_backbone(self, nlp, cfg):
        # keras-hub's intermediate_dim is twice the FFN width (halved inside), see workloads.md
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
    name = "mistral"
    published_params = {"total": 7_241_732_096}

    def config(self, size: str) -> dict[str, Any]:
        if size == "full":
            return dict(vocab=32000, layers=32, q_heads=32, kv_heads=8, hidden=4096, inter=14336, window=4096,
                        seq_len=128, max_length=50)
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


# ---- SegmentAnything (SAM huge) -----------------------------------------------------------------------

class SegmentAnything(PaperModel):
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
        return _rng().random((batch, cfg["image"], cfg["image"], 3), dtype=np.float32)

    def prompts(self, cfg, batch):
        # the source's two clicks, (500, 375) and (250, 375) on a 1024 px image, scaled to the image size
        pts = np.array([[500, 375], [250, 375]], np.float32) * cfg["image"] / 1024
        return np.repeat(pts[None], batch, 0), np.ones((batch, 2), np.float32)

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
            y = _rng().random((batch, e, e, cfg["out"]), dtype=np.float32)
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
        x = torch.from_numpy(self.images(cfg, batch)).permute(0, 3, 1, 2).contiguous().to(dev)
        if task == "fit":
            e = self.embed(cfg)
            y = torch.from_numpy(_rng().random((batch, cfg["out"], e, e), dtype=np.float32)).to(dev)
            encoder = model.vision_encoder
            return Job(model=encoder, optimizer="adam",
                       call=lambda m: torch.nn.functional.mse_loss(m(pixel_values=x).last_hidden_state, y))
        points, labels = self.prompts(cfg, batch)
        pts = torch.from_numpy(points)[:, None].to(dev)  # (B, 1 prompt, 2 points, xy)
        lab = torch.from_numpy(labels).long()[:, None].to(dev)
        return Job(model=model, call=lambda m: m(pixel_values=x, input_points=pts, input_labels=lab).pred_masks)


# ---- Stable Diffusion 1.4 -----------------------------------------------------------------------------

def timestep_embedding(t: int, batch: int, dim: int = 320, max_period: float = 10000.0) -> np.ndarray:
    """SD 1.x sinusoidal timestep embedding, (batch, dim) float32, [cos | sin] as keras-cv orders it."""
    half = dim // 2
    freqs = np.exp(-np.log(max_period) * np.arange(half, dtype=np.float32) / half)
    args = t * freqs
    emb = np.concatenate([np.cos(args), np.sin(args)]).astype(np.float32)
    return np.repeat(emb[None], batch, 0)


class StableDiffusion(PaperModel):
    cells = (("fit", 8), ("predict", 13))
    published_params = {"unet": 859_520_964, "text_encoder": 123_060_480, "vae_decoder": 49_490_199,
                        "vae_encoder": 34_163_592}

    def config(self, size: str) -> dict[str, Any]:
        # keras-cv's SD 1.4 parts have a fixed architecture: at smoke size only the image shrinks there
        if size == "full":
            return dict(image=512, text_len=77, text_dim=768, tiny=False)
        return dict(image=64, text_len=77, text_dim=768, tiny=True)

    def keras_job(self, stack, keras, task, cfg, batch, settings) -> Job:
        from keras_cv.models.stable_diffusion import DiffusionModel, ImageEncoder

        img, lat = cfg["image"], cfg["image"] // 8
        if task == "fit":  # the source: the VAE encoder up to its 8-channel moments, MSE, Adam
            enc = ImageEncoder(download_weights=False)
            model = keras.Model(enc.inputs, enc.layers[-3].output)
            x = _rng().random((batch, img, img, 3), dtype=np.float32)
            y = _rng().random((batch, lat, lat, 8), dtype=np.float32)
            return Job(model=model, inputs=x, targets=y, optimizer="adam", loss="mse")
        unet = DiffusionModel(img, img, cfg["text_len"], download_weights=False)
        if settings.get("jit_compile"):
            unet.compile(jit_compile=True)
        rng = _rng()
        context = rng.standard_normal((batch, cfg["text_len"], cfg["text_dim"]), dtype=np.float32)
        uncond = rng.standard_normal((batch, cfg["text_len"], cfg["text_dim"]), dtype=np.float32)
        state = {"latent": rng.standard_normal((batch, lat, lat, 4), dtype=np.float32), "t": 981}
        alphas = np.cumprod(1.0 - np.linspace(0.00085 ** 0.5, 0.012 ** 0.5, 1000) ** 2)

        def denoise_step(_model):
            """keras-cv's generate_image loop body: unconditional + conditional UNet pass, DDIM update."""
            t = state["t"]
            emb = timestep_embedding(t, batch)
            latent = state["latent"]
            e_u = unet.predict_on_batch([latent, emb, uncond])
            e_c = unet.predict_on_batch([latent, emb, context])
            e = e_u + GUIDANCE * (e_c - e_u)
            a, a_prev = alphas[t], alphas[max(t - 20, 0)]
            pred_x0 = (latent - np.sqrt(1 - a) * e) / np.sqrt(a)
            state["latent"] = np.asarray(pred_x0 * np.sqrt(a_prev) + np.sqrt(1 - a_prev) * e, np.float32)
            state["t"] = max(t - 20, 1)
            return state["latent"]

        return Job(model=unet, call=denoise_step)

    def torch_unet(self, cfg, dev="cpu"):
        import diffusers
        import torch

        kw = dict(sample_size=cfg["image"] // 8, cross_attention_dim=cfg["text_dim"])
        if cfg["tiny"]:
            kw.update(block_out_channels=(32, 64), layers_per_block=1, norm_num_groups=8, attention_head_dim=2,
                      down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                      up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"))
        with torch.device(dev):
            return diffusers.UNet2DConditionModel(**kw)

    def torch_vae(self, cfg, dev="cpu"):
        import diffusers
        import torch

        chans = (8, 16) if cfg["tiny"] else (128, 256, 512, 512)
        with torch.device(dev):
            return diffusers.AutoencoderKL(
                in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * len(chans),
                up_block_types=("UpDecoderBlock2D",) * len(chans), block_out_channels=chans, layers_per_block=2,
                latent_channels=4, sample_size=cfg["image"], norm_num_groups=8 if cfg["tiny"] else 32)

    def torch_model(self, cfg, dtype=None, dev="cpu"):
        return self.torch_unet(cfg, dev)

    def torch_job(self, task, cfg, batch, dev, settings) -> Job:
        import diffusers
        import torch

        img, lat = cfg["image"], cfg["image"] // 8
        if task == "fit":
            enc = self.torch_vae(cfg, dev).encoder
            x = torch.from_numpy(_rng().random((batch, 3, img, img), dtype=np.float32)).to(dev)
            out_hw = img // 2 ** (len(enc.down_blocks) - 1)
            y = torch.from_numpy(_rng().random((batch, 8, out_hw, out_hw), dtype=np.float32)).to(dev)
            return Job(model=enc, optimizer="adam", call=lambda m: torch.nn.functional.mse_loss(m(x), y))
        unet = self.torch_unet(cfg, dev)
        sched = diffusers.PNDMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                                        skip_prk_steps=True, steps_offset=1)
        sched.set_timesteps(50)  # the pipeline default; the loop cycles through them
        rng = _rng()
        text = torch.from_numpy(rng.standard_normal((2 * batch, cfg["text_len"], cfg["text_dim"]),
                                                    dtype=np.float32)).to(dev)
        state = {"latent": torch.from_numpy(rng.standard_normal((batch, 4, lat, lat), dtype=np.float32)).to(dev),
                 "i": 0}

        def denoise_step(m):
            """The diffusers SD pipeline's loop body: one UNet pass over [uncond, cond], guidance, PNDM step."""
            t = sched.timesteps[state["i"] % len(sched.timesteps)]
            latent = state["latent"]
            with torch.no_grad():
                e_u, e_c = m(torch.cat([latent, latent]), t, encoder_hidden_states=text).sample.chunk(2)
            e = e_u + GUIDANCE * (e_c - e_u)
            state["latent"] = sched.step(e, t, latent).prev_sample
            state["i"] += 1
            return state["latent"]

        return Job(model=unet, call=denoise_step)


for _name, _model, _src in (
    ("segment_anything", SegmentAnything(), "SAM huge (sam_huge_sa1b): ViTDet-H image encoder, 1024x1024"),
    ("stable_diffusion", StableDiffusion(), "Stable Diffusion 1.4 (keras-cv), 512x512"),
    ("bert", Bert(), "BERT base (bert_base_en), seq len 512, 2-class head"),
    ("gemma", Gemma(), "Gemma 7B (gemma_7b_en), seq len 128, bfloat16, LoRA rank 4"),
    ("mistral", Mistral(), "Mistral 7B (mistral_7b_en), seq len 128, bfloat16, LoRA rank 4"),
):
    register(StepWorkload(name=_name, suite="paper", cells=_model.cells, model=_model,
                          source="keras.io Keras 3 benchmarks (2024), keras-benchmarks v0.0.5: " + _src))
