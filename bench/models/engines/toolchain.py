"""torch.compile's toolchain: whether this process can compile (a C++ compiler on CPU; a C compiler and Python's
headers for Triton's launcher on GPU), and the ``Unsupported`` a cell raises when it cannot."""

from __future__ import annotations

import os


def torch_compile_blocker(device: str) -> str | None:
    """Why ``torch.compile`` cannot run in this process on ``device`` (``cpu`` or ``gpu``); None when it can.

    CPU: inductor writes C++ kernels and builds them with a C++ compiler. GPU: inductor's kernels are
    Triton kernels, and Triton compiles a small C launcher for each at run time with ``$CC``, else gcc,
    else clang, against Python's headers (triton/runtime/build.py), so an image without them fails at
    the first compiled step. Checked on every device (``docs/platform.md``, "torch.compile's toolchain").
    """
    import shutil
    import sysconfig
    from pathlib import Path

    if device == "cpu":
        if any(shutil.which(c) for c in ("c++", "g++", "clang++")):
            return None
        return "torch.compile on CPU needs a C++ compiler for inductor's kernels; this image has none"
    compilers = [os.environ["CC"]] if os.environ.get("CC") else ["gcc", "clang"]
    if not any(shutil.which(c) for c in compilers):
        return ("torch.compile on GPU needs a C compiler (Triton builds its kernel launcher at run time); this "
                "image has none: install gcc and libc6-dev")
    include = sysconfig.get_paths()["include"]
    if not Path(include, "Python.h").is_file():
        return f"torch.compile on GPU needs Python's headers for Triton's launcher; {include}/Python.h is missing"
    return None


def require_torch_compile(device: str, what: str) -> None:
    """Raise ``Unsupported`` naming ``what`` (the setting that asked for torch.compile) when
    ``torch_compile_blocker(device)`` finds the toolchain missing."""
    from bench.models.engines import Unsupported

    reason = torch_compile_blocker(device)
    if reason:
        raise Unsupported(f"{what}: {reason}")
