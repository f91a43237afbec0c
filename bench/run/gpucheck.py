"""The child process of ``bench.run.probe`` and ``bench.run.peaks``: what runs in a fresh process with a cell's
environment, so that the parent (the runner, the doctor) imports no framework. Two commands, each printing one line
the parent parses:

    python -m bench.run.gpucheck probe BACKEND
        ``IMPORTED`` once the framework imports, then ``PROBE{"gpus": [...], "warnings": [...]}``: the GPUs it
        lists and the warnings it gave meanwhile (torch reports an old driver as a warning and zero devices),
        after one matmul on the first GPU, so driver or PTX problems show here.
    python -m bench.run.gpucheck gemm BACKEND TF32_MODE DTYPE N DEVICE
        ``TFLOPS <value>``: achieved TFLOP/s of N x N GEMMs in ``DTYPE`` on ``DEVICE`` (``gpu`` or ``cpu``) with
        the ``tf32`` knob at ``TF32_MODE`` (``on`` / ``off``).

A failure is a traceback on stderr and a nonzero exit; the parent reads its last line.
"""

from __future__ import annotations

import argparse
import json
import warnings
from collections.abc import Sequence


def probe(backend: str) -> None:
    """Import ``backend``'s framework, list its GPUs and run a matmul on the first; prints the two lines above."""
    from bench.models.engines import frameworks, gemm

    frameworks.import_backend(backend)
    print("IMPORTED", flush=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gpus = frameworks.gpu_devices(backend)
        if gpus:
            gemm.gpu_matmul(backend)
    print("PROBE" + json.dumps({"gpus": gpus, "warnings": [str(w.message) for w in caught]}))


def gemm_tflops(backend: str, mode: str, dtype: str, n: int, device: str) -> None:
    """Print ``TFLOPS <value>``: ``bench.models.engines.gemm.gemm_tflops`` with the TF32 switches of ``mode``."""
    from bench.models.engines import frameworks, gemm, math_mode

    frameworks.import_backend(backend)
    math_mode.set_tf32(backend, mode)
    print("TFLOPS", gemm.gemm_tflops(backend, dtype, n=n, device=device))


def main(argv: Sequence[str] | None = None) -> None:
    """Parse ``argv`` (the command line when None) and run its command."""
    parser = argparse.ArgumentParser(prog="python -m bench.run.gpucheck", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("probe").add_argument("backend")
    g = commands.add_parser("gemm")
    for name in ("backend", "mode", "dtype"):
        g.add_argument(name)
    g.add_argument("n", type=int)
    g.add_argument("device")
    args = parser.parse_args(argv)
    if args.command == "probe":
        probe(args.backend)
    else:
        gemm_tflops(args.backend, args.mode, args.dtype, args.n, args.device)


if __name__ == "__main__":
    main()
