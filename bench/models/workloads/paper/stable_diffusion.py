"""Stable Diffusion 1.4: the VAE encoder (fit) and one denoising step (predict)."""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.models.workloads.job import Job
from bench.models.workloads.paper.common import (
    PaperModel,
    _rng,
)

GUIDANCE = 7.5  # keras-cv / diffusers default unconditional_guidance_scale


def timestep_embedding(t: int, batch: int, dim: int = 320, max_period: float = 10000.0) -> np.ndarray:
    """SD 1.x sinusoidal timestep embedding, (batch, dim) float32, [cos | sin] as keras-cv orders it."""
    half = dim // 2
    freqs = np.exp(-np.log(max_period) * np.arange(half, dtype=np.float32) / half)
    args = t * freqs
    emb = np.concatenate([np.cos(args), np.sin(args)]).astype(np.float32)
    return np.repeat(emb[None], batch, 0)


class StableDiffusion(PaperModel):
    """Stable Diffusion 1.4: fit trains the VAE encoder (MSE on its 8-channel moments); predict times one
    denoising step (two UNet passes and the scheduler update) on (B, H/8, W/8, 4) latents."""

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
            # float64, as the source's np.random.rand (benchmark/stable_diffusion/keras/fit.py@v0.0.5:12-13)
            x = _rng().random((batch, img, img, 3))
            y = _rng().random((batch, lat, lat, 8))
            return Job(model=model, inputs=x, targets=y, optimizer="adam", loss="mse")
        unet = DiffusionModel(img, img, cfg["text_len"], download_weights=False)
        self.compile_unet(unet, settings)
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

    @staticmethod
    def compile_unet(unet, settings: dict[str, Any]) -> None:
        """Compile the UNet as the cell asks. The source's ``StableDiffusion(jit_compile=use_jit())``
        (benchmark/stable_diffusion/keras/predict.py@v0.0.5) compiles it with ``jit_compile=True`` when
        asked and otherwise leaves it uncompiled, so Keras' default resolves (keras-cv 0.8.2 and 0.9.0
        ``StableDiffusion.diffusion_model``); a ``jit_compile`` knob (``settings["jit_compile_knob"]``: True,
        False or "auto") compiles with exactly that value."""
        knob = settings.get("jit_compile_knob")
        if knob is not None:
            unet.compile(jit_compile=knob)
        elif settings.get("jit_compile") is True:
            unet.compile(jit_compile=True)

    def torch_unet(self, cfg, dev="cpu"):
        """The diffusers UNet2DConditionModel of SD 1.x (a tiny one at smoke size), random weights, on ``dev``."""
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
        """The diffusers AutoencoderKL of SD 1.x (a tiny one at smoke size), random weights, on ``dev``."""
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
        # the pipeline default; the loop cycles through them. The ignore: under TYPE_CHECKING, diffusers/__init__.py
        # (0.42.1) binds PNDMScheduler to utils/dummy_pt_objects.py's placeholder class, which has no set_timesteps
        sched.set_timesteps(50)  # type: ignore[attr-defined]
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
