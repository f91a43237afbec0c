"""The workloads' names and order, read from their folders' ``spec.py`` without importing them: standard library only,
so that the host (``python3 -m bench.host request args WORKLOADS=...``, ``make check-request``) checks a workload's
name before any image is built, and ``bench.models.workloads.discover`` finds and orders the same folders.

A workload folder (``bench/models/workloads/<folder>/``: an ``__init__.py`` and a ``spec.py``) states in its
``spec.py`` literals, read here with ``ast.literal_eval``: ``NAMES``, the tuple of the names it registers (its
``WORKLOADS`` are built from it, and ``discover`` checks that they match), ``ORDER``, a number, its place in the
registry (none: after the numbered ones), and ``TIMING``, ``"step"`` where its ``WORKLOADS`` are step-timed
(``StepWorkload``s, the paper suite; none: ``"epoch"``, ``Workload``s, which ``discover`` checks too), so that the
host refuses a step-timed ``FIDELITY_WORKLOAD`` before any container. This module knows the folder by its path; it
imports nothing of ``bench`` above ``bench.core``.
"""

from __future__ import annotations

import ast
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

#: The workload folders' home: the folder of the package ``bench.models.workloads``.
FOLDER = Path(__file__).resolve().parents[1] / "models" / "workloads"
#: A spec's ``TIMING`` values: how its workloads are timed (by epoch, a fit on a dataset; by step, the paper suite).
TIMINGS = ("epoch", "step")
#: Why ``bench fidelity`` (and ``make fidelity``'s ``FIDELITY_WORKLOAD``) refuses a step-timed workload.
STEP_TIMED = "{name} is step-timed (paper suite): fidelity times the fit loop of a classic workload"


@dataclass(frozen=True)
class SpecFolder:
    """One workload folder: its ``name`` (the folder's, a module name), ``order`` (its spec's ``ORDER``; ``math.inf``
    when it states none), ``names`` (its spec's ``NAMES``: the workloads it registers, in order) and ``timing`` (its
    spec's ``TIMING``, one of ``TIMINGS``; ``"epoch"`` when it states none)."""

    name: str
    order: float
    names: tuple[str, ...]
    timing: str = "epoch"


def _literals(spec: Path) -> dict[str, object]:
    """The module-level ``NAMES``, ``ORDER`` and ``TIMING`` assignments of ``spec``, evaluated as literals.

    Raises:
        ValueError: one of them is not a literal; OSError, SyntaxError: the file cannot be read or parsed.
    """
    found: dict[str, object] = {}
    for node in ast.parse(spec.read_text(encoding="utf-8"), str(spec)).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id in ("NAMES", "ORDER", "TIMING"):
            found[target.id] = ast.literal_eval(value)
    return found


def read_spec(folder: Path) -> SpecFolder:
    """``folder``'s ``spec.py`` as a ``SpecFolder``.

    Raises:
        ValueError: its ``NAMES`` missing or not a non-empty tuple of strings, its ``ORDER`` not a number, or its
            ``TIMING`` none of ``TIMINGS``.
    """
    spec = folder / "spec.py"
    values = _literals(spec)
    names, order, timing = values.get("NAMES"), values.get("ORDER", math.inf), values.get("TIMING", "epoch")
    if not (isinstance(names, tuple) and names and all(isinstance(n, str) for n in names)):
        raise ValueError(f"{spec}: NAMES must be a literal, non-empty tuple of the workload names it registers")
    if isinstance(order, bool) or not isinstance(order, (int, float)):
        raise ValueError(f"{spec}: ORDER must be a number, got {order!r}")
    if timing not in TIMINGS:
        raise ValueError(f"{spec}: TIMING must be one of {', '.join(TIMINGS)}, got {timing!r}")
    return SpecFolder(folder.name, float(order), names, str(timing))


def spec_folders(paths: Iterable[str | os.PathLike[str]] = (FOLDER,)) -> list[SpecFolder]:
    """Every workload folder in ``paths`` (a sub-folder holding ``__init__.py`` and ``spec.py``; a name found in two
    paths counts once, the first), ordered by ``ORDER``, then by name.

    Raises:
        ValueError: a spec whose ``NAMES`` or ``ORDER`` is not as ``read_spec`` wants.
    """
    found: dict[str, Path] = {}
    for path in paths:
        base = Path(path)
        for entry in sorted(base.iterdir()) if base.is_dir() else ():
            if (entry.name.isidentifier() and entry.name not in found and (entry / "__init__.py").is_file()
                    and (entry / "spec.py").is_file()):
                found[entry.name] = entry
    return sorted((read_spec(f) for f in found.values()), key=lambda s: (s.order, s.name))


def workload_names(paths: Iterable[str | os.PathLike[str]] = (FOLDER,)) -> list[str]:
    """Every workload's name, in the registry's order (``bench list``'s)."""
    return [n for s in spec_folders(paths) for n in s.names]


def check_workload(name: str, known: list[str] | None = None) -> None:
    """Raise ValueError naming ``name`` and the known ones when no workload folder registers ``name`` (``known``:
    the names to accept and list, by default every workload's)."""
    known = workload_names() if known is None else known
    if name not in known:
        raise ValueError(f"unknown workload {name!r}; known: {', '.join(known)}")


def check_fit_workload(name: str) -> None:
    """Raise ValueError unless ``name`` is an epoch-timed workload, one that fits on a dataset (what ``bench
    fidelity`` times): step-timed (``STEP_TIMED``), or unknown (``check_workload``'s message, naming the
    epoch-timed ones only)."""
    specs = spec_folders()
    if any(name in s.names and s.timing == "step" for s in specs):
        raise ValueError(STEP_TIMED.format(name=name))
    check_workload(name, [n for s in specs if s.timing == "epoch" for n in s.names])
