"""A run directory's records as the runner sees them: ``RunFolder`` owns their paths, loads each record once
(strictly, ``bench.results.record.load_record``), says whether one on disk was made with a cell's inputs
(``input_mismatch``), sets aside a repeat measured on another GPU and any other record a rerun replaces
(``set_aside``) and writes records atomically; what it wrote or
moved it knows without reading it back.
"""

from __future__ import annotations

import functools
import os
import shutil
import time
from pathlib import Path
from typing import Any

from bench.core.atomic import write_json_atomic
from bench.instruments import profile
from bench.instruments.environment import git_commit, gpu_info, native, package_versions, stack_pins
from bench.instruments.profile.spans import TENSORBOARD, TRACE
from bench.models.workloads import WORKLOADS
from bench.results.cell import Cell
from bench.results.record import REPEATS_DIR, RecordError, load_record, result_path
from bench.results.repeats import OTHER_GPU_NOTE
from bench.results.schema import Record
from bench.run.scenarios import scenario_of

#: Where a repeat measured on another GPU is kept when it is run again on this run's GPU (under ``repeats/``, so
#: the collector never reads it as a cell).
OTHER_GPU_DIR = "other-gpu"
#: Where any other record a rerun replaces is kept (``RunFolder.set_aside``), under ``repeats/`` for the same reason.
SUPERSEDED_DIR = "superseded"
#: The files named after a record beside it (``bench.run.runner.run_one``'s log and telemetry samples, the profile's
#: trace and TensorBoard folder), which go where it goes.
BESIDE = (".log", ".telemetry.csv", TRACE, TENSORBOARD)


class RunFolder:
    """The records of one run directory ``root`` (``<stack>/<cell_id>.json``, a repeat's under ``repeats/``).

    ``load`` reads a cell's record once and keeps it (a file that is missing or that ``load_record`` rejects is
    None, also kept); ``write`` and ``set_aside_other_gpu`` keep what they leave on disk, so the checks before a cell
    runs (``existing``, ``mismatch``, ``set_aside_other_gpu``) read each file at most once. Only this object may
    change the folder's records while it is in use.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._records: dict[Path, Record | None] = {}

    def path(self, cell: Cell) -> Path:
        """Where ``cell``'s record lives (``bench.results.record.result_path``)."""
        return result_path(self.root, cell)

    def load(self, cell: Cell) -> Record | None:
        """The valid record at ``cell``'s path, else None (no file, or one ``load_record`` rejects)."""
        path = self.path(cell)
        if path not in self._records:
            try:
                self._records[path] = load_record(path) if path.exists() else None
            except RecordError:
                self._records[path] = None
        return self._records[path]

    def write(self, cell: Cell, rec: Record) -> None:
        """Write ``rec`` atomically at ``cell``'s path as its JSON: the fields it was given
        (``model_dump(exclude_unset=True)``)."""
        path = self.path(cell)
        write_json_atomic(path, rec.model_dump(exclude_unset=True))
        self._records[path] = rec

    def forget(self, cell: Cell) -> None:
        """Drop what is kept of ``cell``'s record (a worker process wrote it: the next ``load`` reads the file)."""
        self._records.pop(self.path(cell), None)

    def existing(self, cell: Cell, repeats: int = 1, gpu: str | None = None) -> Record | None:
        """A valid record on disk for ``cell`` (aggregated over ``repeats`` repeats) and made with its inputs on this
        run's GPU ``gpu`` (``input_mismatch``), else None."""
        rec = self.load(cell)
        if rec is None:
            return None
        if repeats_n(rec) != repeats or input_mismatch(rec, cell, gpu):
            return None
        return rec

    def mismatch(self, cell: Cell, gpu: str | None = None) -> str | None:
        """``input_mismatch`` of the valid record at ``cell``'s path (None when there is none or it matches)."""
        rec = self.load(cell)
        return None if rec is None else input_mismatch(rec, cell, gpu)

    def set_aside(self, cell: Cell, why: str) -> Path | None:
        """Move ``cell``'s record and the files beside it named after it (its ``.log``, ``.telemetry.csv``, profile
        trace) to ``<stack>/repeats/superseded/<name>.<UTC time><suffix>``, with ``why`` it was replaced in a
        ``.why.txt`` beside them, before a rerun writes over it: nothing measured is lost, and the collector (which
        never reads ``repeats/``) never takes it for this run's. Returns where the record went (None: no record).
        """
        path = self.path(cell)
        if not path.exists():
            return None
        kept = self._move(cell, SUPERSEDED_DIR, _utc_stamp())
        kept.with_name(kept.name.removesuffix(".json") + ".why.txt").write_text(why + "\n")
        return kept

    def _move(self, cell: Cell, folder: str, tag: str) -> Path:
        """Move ``cell``'s record and the files ``BESIDE`` it to ``<stack>/repeats/<folder>/<name>.<tag><suffix>``
        (``<tag>.<UTC time>`` where that name is taken: a GPU that comes back, A -> B -> A -> B, sets aside a second
        record under the same tag); returns the record's new path. ``shutil.move``, which copies where a rename is
        refused: a bucket's FUSE mount (goofys, gcsfuse) renames no non-empty folder, as a profile's
        ``.tensorboard`` is."""
        path = self.path(cell)
        where = self.root / cell.stack / REPEATS_DIR / folder
        where.mkdir(parents=True, exist_ok=True)
        if any((where / f"{path.stem}.{tag}{suffix}").exists() for suffix in (".json", *BESIDE)):
            tag = f"{tag}.{_utc_stamp()}"
        for suffix in (".json", *BESIDE):
            old = path.with_name(path.stem + suffix)
            if old.exists():
                shutil.move(old, where / f"{path.stem}.{tag}{suffix}")
        self._records[path] = None
        return where / f"{path.stem}.{tag}.json"

    def set_aside_other_gpu(self, rcell: Cell, gpu: str | None) -> str | None:
        """When the valid record at ``rcell``'s path was measured on a GPU other than ``gpu``, move it (never
        delete: nothing measured is lost) to ``<stack>/repeats/other-gpu/<name>.<its uuid>.json``, the files
        ``BESIDE`` it with it, and return the note the rerun records; else None."""
        rec = self.load(rcell)
        old = record_gpu(rec) if rec is not None else None
        if not gpu or not old or old == gpu:
            return None
        kept = self._move(rcell, OTHER_GPU_DIR, old)
        return (f"{OTHER_GPU_NOTE} repeat {rcell.repeat or 1} was measured on GPU {old} and run again on this run's "
                f"GPU {gpu} (a spot VM preempted and resumed, or another host), so the cell is one GPU's "
                f"measurement; the earlier record is kept as {kept.relative_to(self.root)}")


def _utc_stamp() -> str:
    """Now, UTC, to the nanosecond, from one clock read: ``20261127T235901.123456789Z``."""
    ns = time.time_ns()
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(ns // 10**9)) + f".{ns % 10**9:09d}Z"


def repeats_n(rec: Record) -> int | None:
    """How many repeats ``rec`` aggregates (``repeats.n`` as recorded; 1 for a record without it)."""
    return rec.repeats.n if rec.repeats is not None and "n" in rec.repeats.model_fields_set else 1


def record_gpu(rec: Record) -> str | None:
    """The NVML UUID of the GPU ``rec`` was measured on (``env.gpu.uuid``; None on CPU or without NVML)."""
    return rec.env.gpu.uuid if rec.env is not None and rec.env.gpu is not None else None


def input_mismatch(rec: Record, cell: Cell, gpu: str | None = None) -> str | None:
    """Why ``rec`` was not made with ``cell``'s inputs (None when it was), so a resumed run never returns a record
    measured with others: its ``cell_id`` (which names every measurement input off its default, ``Cell.id``), its
    device and knobs, the code that made it (``env.git_commit``, when both are known: a record of older code, or of
    other edits of the same commit, ``bench.core.commit``, is measured again, never mixed into this code's run), and,
    for a record written before the id named them, the inputs it recorded as they took effect (batch size, the data
    policy, the epochs or timed steps of an ok record), and the GPU (``gpu``, this run's NVML UUID, when both are
    known: a spot VM preempted between rounds comes back on another GPU, and a cell's repeats, like the comparison,
    are one GPU's measurement) and the driver (``driver_expected``), and the software it ran on
    (``software_mismatch``: the packages, not the image's ID)."""
    w = WORKLOADS.get(cell.workload)
    given = rec.model_fields_set  # a field a record of an older schema lacks is taken as the cell's
    expected: list[tuple[str, Any, Any]] = [
        ("cell_id", rec.cell_id, cell.id), ("device", rec.device, cell.device),
        ("settings_requested", rec.settings_requested if "settings_requested" in given else dict(cell.settings),
         dict(cell.settings))]
    if w is not None and cell.inputs is not None:
        if rec.batch_size is not None:
            expected.append(("batch_size", rec.batch_size, cell.inputs.batch_size))
        expected += scenario_of(w).resume_expected(rec, cell)
    made_by, running = rec.env.git_commit if rec.env is not None else None, _this_commit()
    # other code may have run another method; an ``-unchecked`` pair is one build's rounds (the image's identity)
    if made_by and running:
        expected.append(("env.git_commit", made_by, running))
    if gpu and record_gpu(rec):
        expected.append(("env.gpu.uuid", record_gpu(rec), gpu))
    if gpu:
        expected += driver_expected(rec)
    if cell.profile and (cell.repeat or 1) == 1 and rec.status == "ok" and not profiled(rec):
        expected.append(("profile", rec.profile.reason if rec.profile else None, "a profile (--profile)"))
    wrong = [f"{name} {got!r}, not {want!r}" for name, got, want in expected if got != want]
    return "; ".join(wrong + software_mismatch(rec, cell.stack)) or None


def driver_expected(rec: Record) -> list[tuple[str, Any, Any]]:
    """``input_mismatch``'s (name, recorded, now) of a GPU run for the NVIDIA driver ``rec`` was measured under
    (``env.gpu.driver``, ``env.gpu.cuda_driver``: the CUDA version the driver supports), each only where the record
    and this host's NVML (``_this_driver``) both hold it: a resume after a driver upgrade would mix two drivers' cells
    as one run's. The CUDA runtime and libraries are packages (``software_mismatch``). A CPU run compares none."""
    held = rec.env.gpu if rec.env is not None and rec.env.gpu is not None else None
    if held is None or (held.driver is None and held.cuda_driver is None):
        return []
    now = _this_driver()
    return [(f"env.gpu.{k}", getattr(held, k), now[k]) for k in ("driver", "cuda_driver")
            if getattr(held, k) is not None and now.get(k) is not None]


#: How many differing packages a resume's line names before it counts the rest.
SHOWN = 3


def software_mismatch(rec: Record, stack: str) -> list[str]:
    """Why ``rec`` was not measured on the software a cell of ``stack`` runs on now, one entry per field (empty when
    it was): the runner's interpreter is the one its workers run (``sys.executable``, the same image or checkout).

    Compared, each only where the record holds it (a record from before the field, or whose ``env`` could not be
    captured, is taken as this software, as ``input_mismatch`` takes a missing commit): ``env.packages`` (the
    frameworks, their libraries and the GPU runtime, ``environment.package_versions``: a resume on an image rebuilt
    with a changed lock, or natively on other versions, would mix two software stacks' cells in one run),
    ``env.pins`` (a derived stack's pinned packages as installed; ``env.pins_ok`` follows from them and the stack's
    declaration, which is code) and ``env.native`` (image or checkout: the report ranks native GPU rows apart).

    Not compared: ``env.image_id`` and ``env.image_digest``. A rebuild without the build cache gives a new ID for
    the same inputs, which are named elsewhere: the base image is pinned by digest (images/Dockerfile), every
    Python package by a hashed lock (what ran is in ``env.packages``), ``bench/`` by ``env.git_commit``; rerunning
    every cell for an ID alone would re-measure the same software. The one input that is not: the C toolchain
    images/c-toolchain.sh installs with apt for torch.compile, unpinned (Debian stable's point releases)."""
    env = rec.env
    if env is None:
        return []
    given, now = env.model_fields_set, _this_software(stack)
    wrong = []
    if "native" in given and env.native is not None and env.native != now["native"]:
        wrong.append(f"env.native {env.native!r}, not {now['native']!r}")
    for field in ("packages", "pins"):
        theirs, ours = getattr(env, field), now[field]
        if field not in given or theirs == ours:
            continue
        # a version that changed first, then a package only one side holds
        keys = sorted(set(theirs) | set(ours), key=lambda k: (k not in theirs or k not in ours, k))
        changed = [f"{k} {theirs.get(k)!r}, not {ours.get(k)!r}" for k in keys if theirs.get(k) != ours.get(k)]
        more = f" (and {len(changed) - SHOWN} more)" if len(changed) > SHOWN else ""
        wrong.append(f"env.{field}: {', '.join(changed[:SHOWN])}{more}")
    return wrong


def profiled(rec: Record) -> bool:
    """Whether ``rec`` holds its profile, or why it has none from the profile itself (a profiler that failed, a
    call too long): a record with none, or one whose process ended during the profile (``profile.UNFINISHED``),
    is run again by a resumed ``--profile`` run."""
    return rec.profile is not None and not (rec.profile.reason or "").startswith(profile.UNFINISHED)


@functools.cache
def _this_software(stack: str) -> dict[str, Any]:
    """What ``software_mismatch`` compares, as a cell of ``stack`` started now would record it (``env.native``,
    ``env.packages``, ``env.pins``: ``environment.capture``'s and ``stack_pins``'), read once per process and stack."""
    return {"native": native(os.environ), "packages": _this_packages(), "pins": stack_pins(stack)["pins"]}


@functools.cache
def _this_packages() -> dict[str, str]:
    """``environment.package_versions`` of this interpreter, the same for every stack: read once per process."""
    return package_versions()


@functools.cache
def _this_driver() -> dict[str, Any]:
    """This host's NVIDIA driver as a cell records it (``environment.gpu_info``'s ``driver`` and ``cuda_driver``),
    read once per process; empty without NVML."""
    info = gpu_info()
    return {k: info[k] for k in ("driver", "cuda_driver") if info.get("available") and k in info}


@functools.cache
def _this_commit() -> str | None:
    """The commit of the code running now (``environment.git_commit``), asked once per process."""
    return git_commit()
