"""PyTorch's profiler (``torch.profiler``) for the ``pytorch`` and ``keras3-torch`` stacks: CPU activities, and on a
GPU the CUDA activities too (kernels, copies, memsets through CUPTI), exported as its Chrome trace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.instruments.profile.spans import TRACE, Span, chrome_messages, from_chrome, write_chrome
from bench.instruments.profile.summary import WINDOW


class Profiler:
    """``torch.profiler.profile`` over the window, ``record_function(WINDOW)`` around the profiled steps."""

    def __init__(self, device: str, workdir: Path) -> None:
        import torch
        from torch.profiler import ProfilerActivity, profile

        self.torch, self.workdir = torch, workdir
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "gpu" else [])
        self.activities = ["cpu", "cuda"][:len(acts)]
        self.name = f"torch.profiler (torch {torch.__version__})"
        self.prof = profile(activities=acts)
        self.mark: Any = None

    def start(self) -> None:
        self.prof.start()

    def begin(self) -> None:
        self.mark = self.torch.profiler.record_function(WINDOW)
        self.mark.__enter__()

    def end(self) -> None:
        self.mark.__exit__(None, None, None)

    def stop(self) -> None:
        self.prof.stop()

    def collect(self, base: Path) -> tuple[list[Span], dict[str, Any]]:
        raw = self.workdir / "torch.trace.json"
        self.prof.export_chrome_trace(str(raw))
        trace = json.loads(raw.read_text())
        raw.unlink()
        out = base.with_name(base.name + TRACE)
        return from_chrome(trace), {"trace": out.name, "trace_bytes": write_chrome(trace, out),
                                    "warnings": chrome_messages(trace)}
