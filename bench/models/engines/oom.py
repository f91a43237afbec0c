"""Out-of-memory errors of any framework, told apart from other failures so the record's status says ``oom``."""

from __future__ import annotations


def is_oom(exc: BaseException) -> bool:
    """True when ``exc`` is an out-of-memory error of any framework."""
    text = f"{type(exc).__name__}: {exc}".lower()
    return isinstance(exc, MemoryError) or any(
        s in text for s in ("out of memory", "outofmemoryerror", "resource_exhausted", "resourceexhausted"))
