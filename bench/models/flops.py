"""Model FLOPs per example for the ``paper`` suite, and MFU against the GPU's dense peak.

Method: ``torch.utils.flop_counter.FlopCounterMode`` over the Hugging Face / diffusers model of each
workload, built on the meta device (no memory, no compute), at the published shapes with batch 1:
forward + backward of the training loss for ``fit`` (LoRA: only the gradients PEFT computes), one
forward for ``predict`` (SD: one denoising step, a UNet pass on the conditional and unconditional
latent), and greedy decoding with a KV cache for ``generate`` as Hugging Face's ``generate`` runs it: a
prefill of the prompt (BOS + 5 tokens, logits of its last position only), which yields the first new
token, then one single-token decode step per further token to the fixed length (N new tokens: N forward
passes; a test checks this against ``FlopCounterMode`` around the real ``generate``). The counter counts
matrix products, convolutions and attention, not element-wise work: the usual model-FLOPs convention for
MFU. The Keras stacks run the same architectures, so the same counts apply to them (keras-hub's generate
does more work than this: its cache prefill runs over all ``max_length`` positions). ``python -m
bench.models.flops`` rewrites the committed table (``bench/core/reference/paper_flops.csv``); a test recomputes it.

Peaks (dense, no sparsity; TFLOP/s) are the vendors' datasheet values. A GPU not in the table, or one
whose vendor publishes no dense peak (A10G), gets MFU ``null`` with the reason.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from bench.core.gpus import gpu_family, is_mig_name

if TYPE_CHECKING:
    from bench.models.workloads import StepWorkload

FLOPS_CSV = Path(__file__).parents[1] / "core" / "reference" / "paper_flops.csv"
METHOD = "torch FlopCounterMode, Hugging Face model on the meta device, batch 1"

#: Dense peak TFLOP/s by GPU family (``bench.core.gpus.gpu_family``) and math mode (NVIDIA datasheets: A100
#: 40/80GB, H100 SXM5 and PCIe, H200 SXM, L4; the datasheets quote tensor peaks with sparsity, halved here).
#: ``float32`` is non-tensor FP32 (strict FP32: TF32 off); ``tf32`` the TF32 tensor peak.
PEAK_TFLOPS: dict[str, dict[str, float] | None] = {
    "A100": {"float32": 19.5, "tf32": 156.0, "bfloat16": 312.0, "float16": 312.0},
    "H100 SXM": {"float32": 67.0, "tf32": 494.5, "bfloat16": 989.5, "float16": 989.5},
    "H100 PCIe": {"float32": 51.0, "tf32": 378.0, "bfloat16": 756.5, "float16": 756.5},
    "H200": {"float32": 67.0, "tf32": 494.5, "bfloat16": 989.5, "float16": 989.5},
    "L4": {"float32": 30.3, "tf32": 60.0, "bfloat16": 121.0, "float16": 121.0},
    "A10G": None,  # AWS's A10G: NVIDIA publishes no tensor-core peak for it; the A10's does not apply
}


#: Why a MIG slice has no peak: a datasheet gives the whole GPU's, and a slice has a fraction of its SMs.
MIG_PEAK_REASON = ("a MIG slice of the GPU: no datasheet peak (the datasheet's is the whole GPU's; a slice has a "
                   "fraction of its SMs)")


def combined_peak(matmul_peak: float, conv_peak: float, conv_fraction: float) -> float:
    """The peak (FLOP/s) of work whose matmuls run at ``matmul_peak`` and whose convolutions at ``conv_peak``, with
    ``conv_fraction`` (0..1) of its FLOPs in convolutions: the rate at which its FLOPs would take the least time,
    ``1 / ((1 - c) / P_matmul + c / P_conv)``. MFU against it is the ideal time over the measured time.

    Raises:
        ValueError: a fraction outside [0, 1] or a peak that is not positive.
    """
    if not 0.0 <= conv_fraction <= 1.0 or matmul_peak <= 0 or conv_peak <= 0:
        raise ValueError(f"conv_fraction {conv_fraction} must be in [0, 1] and peaks positive")
    return 1.0 / ((1.0 - conv_fraction) / matmul_peak + conv_fraction / conv_peak)


def peak_flops(gpu_name: str | None, precision: str, tf32: bool, tf32_conv: bool | None = None,
               conv_fraction: float | None = None) -> tuple[float | None, str]:
    """Dense peak FLOP/s of ``gpu_name`` for the math in effect, and where it comes from (or why None).

    ``precision``: ``float32``, ``bfloat16`` or ``float16``. For float32 work, ``tf32``: whether its matmuls could
    use TF32, and ``tf32_conv`` whether its convolutions could (None: as the matmuls). Where the two differ
    (PyTorch's shipped default: matmuls FP32, cuDNN convolutions TF32), the peak combines the FP32 and TF32 peaks
    by ``conv_fraction``, the share of the cell's FLOPs in convolutions (``combined_peak``); None with the reason
    when that share is unknown.
    """
    if is_mig_name(gpu_name):
        return None, MIG_PEAK_REASON
    fam = gpu_family(gpu_name)
    if fam is None:
        return None, f"no peak table entry for GPU {gpu_name!r}"
    peaks = PEAK_TFLOPS[fam]
    if peaks is None:
        return None, f"{fam}: the vendor publishes no dense tensor peak"
    if precision != "float32":
        if precision not in peaks:
            return None, f"no {precision} peak for {fam}"
        return peaks[precision] * 1e12, f"{fam} dense {precision} peak {peaks[precision]:g} TFLOP/s (datasheet)"
    mm_mode = "tf32" if tf32 else "float32"
    conv_mode = mm_mode if tf32_conv is None else "tf32" if tf32_conv else "float32"
    if mm_mode == conv_mode:
        return peaks[mm_mode] * 1e12, f"{fam} dense {mm_mode} peak {peaks[mm_mode]:g} TFLOP/s (datasheet)"
    if conv_fraction is None:
        return None, (f"matmuls ran in {mm_mode} and convolutions in {conv_mode}, and this cell's share of FLOPs in "
                      "convolutions is not tabulated")
    peak = combined_peak(peaks[mm_mode], peaks[conv_mode], conv_fraction)
    return peak * 1e12, (f"{fam} dense peaks (datasheet): matmul {mm_mode} {peaks[mm_mode]:g}, convolution "
                         f"{conv_mode} {peaks[conv_mode]:g} TFLOP/s, {100 * conv_fraction:.1f} % of the FLOPs in "
                         f"convolutions: {peak:.4g} TFLOP/s")


def read_table(path: Path = FLOPS_CSV) -> dict[tuple[str, str], dict[str, Any]]:
    """(workload, task) -> row of the committed table (``flops_per_example`` as float)."""
    if not path.exists():
        return {}
    with path.open() as f:
        rows = list(csv.DictReader(f))
    return {(r["workload"], r["task"]): {**r, "flops_per_example": float(r["flops_per_example"])} for r in rows}


def conv_fraction(workload: str, task: str) -> float | None:
    """The share (0..1) of a paper cell's model FLOPs in convolutions, from the committed table (None where the
    table has no such column or row): what ``peak_flops`` weighs the convolution peak by."""
    value = (read_table().get((workload, task)) or {}).get("conv_fraction")
    return float(value) if value not in (None, "") else None


def flops_per_example(workload: str, task: str, size: str, cfg: dict[str, Any]) -> tuple[float | None, str]:
    """FLOPs per example of a cell (one sequence for generate; one image for an SD denoising step), and the
    method; None with the reason where the table does not cover the cell's shapes (smoke size, an
    overridden sequence length)."""
    if size != "full":
        return None, "FLOPs are tabulated for the full-size models only"
    row = read_table().get((workload, task))
    if row is None:
        return None, f"no FLOPs entry for {workload} {task}"
    if row["seq_len"] and "seq_len" in cfg and str(cfg["seq_len"]) != row["seq_len"]:
        return None, f"FLOPs tabulated at sequence length {row['seq_len']}, the cell used {cfg['seq_len']}"
    return row["flops_per_example"], row["method"]


def paper_workload(name: str) -> StepWorkload:
    """The registered workload ``name``, which must be one of the paper suite's (the only ones whose FLOPs are
    counted for MFU; all step-timed).

    Raises:
        KeyError: unknown workload. ValueError: it is not in the paper suite (a classic or tuning workload).
    """
    from bench.models.workloads import SUITES, get_workload

    w = get_workload(name)
    if name not in SUITES["paper"]:
        raise ValueError(f"{name} is not a paper-suite (step-timed) workload: its FLOPs are not counted")
    return cast("StepWorkload", w)


def count(workload: str, task: str, size: str = "full") -> float:
    """Count FLOPs per example of ``workload``'s ``task`` at ``size`` (default full) on the meta device (see
    module doc); generate: the whole fixed-length generation of one sequence."""
    return count_split(workload, task, size)[0]


def count_split(workload: str, task: str, size: str = "full") -> tuple[float, float]:
    """(FLOPs per example, the share of them in convolutions, 0..1) of ``workload``'s ``task`` at ``size``, from one
    ``FlopCounterMode`` pass on the meta device (``count``): the share weighs the convolution peak against the matmul
    peak in MFU where their math modes differ (``peak_flops``)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from bench.models.workloads.paper.causal_lm import CausalLM

    w = paper_workload(workload)
    cfg = w.model.config(size)
    meta = torch.device("meta")
    with FlopCounterMode(display=False) as fc:
        if task == "generate" and isinstance(w.model, CausalLM):
            _generate_greedy(w.model, cfg, meta)
        else:
            job = w.model.torch_job(task, cfg, 1, meta, {})
            if task == "fit":
                job.model.train()
                job.call(job.model).backward()
            else:  # no torch.no_grad(): FlopCounterMode's module tracker fails under it (SAM)
                job.call(job.model)
    total = float(fc.get_total_flops())
    conv = sum(n for op, n in fc.get_flop_counts().get("Global", {}).items() if "convolution" in str(op))
    return total, (conv / total if total else 0.0)


def _generate_greedy(lm, cfg: dict[str, Any], dev) -> None:
    """The forward passes of Hugging Face's greedy ``generate`` for one sequence of ``lm`` (a
    ``bench.models.workloads.paper.causal_lm.CausalLM``): prefill of the BOS + 5 prompt with ``logits_to_keep=1`` (as
    ``GenerationMixin`` passes it), then ``new_tokens - 1`` single-token steps on the KV cache."""
    import torch

    from bench.models.workloads.paper.common import prompt_ids

    model = lm.torch_model(cfg, torch.bfloat16, dev)
    ids = torch.from_numpy(prompt_ids(1, cfg["vocab"], lm.bos_id)).long().to(dev)
    out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
    for _ in range(lm.new_tokens(cfg) - 1):
        tok = out.logits[:, -1:].argmax(-1)
        out = model(input_ids=tok, past_key_values=out.past_key_values, use_cache=True, logits_to_keep=1)


def write_table(path: Path = FLOPS_CSV) -> list[dict[str, Any]]:
    """Recount every paper cell and rewrite the table; returns the rows."""
    import torch
    import transformers

    from bench.models.workloads import SUITES

    rows = []
    for name in SUITES["paper"]:
        w = paper_workload(name)
        cfg = w.model.config("full")
        for task in w.tasks:
            total, conv_share = count_split(name, task)
            # a task that reads no sequence length (generate: a fixed prompt to max_length) has none in its row
            seq_len = cfg.get("seq_len", "") if w.model.reads_seq_len(task) else ""
            rows.append({"workload": name, "task": task, "seq_len": seq_len,
                         "flops_per_example": f"{total:.6g}", "conv_fraction": f"{conv_share:.4f}",
                         "method": f"{METHOD}; torch {torch.__version__.split('+')[0]}, "
                                   f"transformers {transformers.__version__}"})
            print(f"{name:18} {task:9} {float(rows[-1]['flops_per_example']):.4g}", file=sys.stderr)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    return rows


if __name__ == "__main__":
    write_table()
