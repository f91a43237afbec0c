"""One ``bench run`` or ``bench sweep`` executed from its ``Request``: validate the cells, resolve the device and size,
plan the rounds, cool down, ensure the measured GEMM peak, run the cells (``bench.run.runner``) and summarise.

Bad input raises ``bench.core.errors.InputError`` before anything runs (the CLI prints it as one line, exit code 2).
Output is logged to this module's logger (``bench.run.session``): INFO for progress, WARNING for the CPU banner and
the failure count; the CLI prints them on stdout and stderr (``bench.cli.console``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.core import interrupt
from bench.core.errors import InputError
from bench.core.request import Request
from bench.core.stacks import DEFAULT_STACKS, STACKS, get_stack
from bench.core.words import Device, RunDevice, Size
from bench.run import plan as planning
from bench.run.peaks import results_root

if TYPE_CHECKING:
    from bench.instruments.gpu_state import Cooldown
    from bench.results.cell import Cell

logger = logging.getLogger(__name__)

BANNER_WIDTH = 78
#: ``cooldown.idle_source`` for a baseline given with ``--idle-temp-c``.
IDLE_GIVEN = ("--idle-temp-c (make bench-all and the SkyPilot job read it with nvidia-smi on the host before the "
              "comparison's first stack)")



def stack_list(stacks: Iterable[str]) -> list[str]:
    """The stack ids of ``--stack`` values, first mention first; ``all`` means the default stacks."""
    stacks = list(stacks)
    return list(DEFAULT_STACKS) if "all" in stacks else list(dict.fromkeys(stacks))


def runs_root() -> Path:
    """Where a run without ``--out`` puts its run directory: ``results_root() / "runs"`` (the directory itself,
    ``<suite>-<size>-<device>``, is named once the device is resolved)."""
    return results_root() / "runs"


def default_run_dir(suite: str, size: Size, dev: RunDevice, env: Mapping[str, str] | None = None) -> Path:
    """The run directory of a run without ``--out``: ``runs_root() / "<suite>-<size>-<device>"`` in a stack image,
    the folder ``make bench-all`` writes by default (``RUN``); ``native-<suite>-<size>-<device>`` for a native run
    (``environment.native``: no image), whose rows rank apart from the images' and whose packages are not the images'
    pins, so that a checkout's run from the repository root (``results/`` is ``$BENCH_RESULTS_DIR``'s default) never
    lands among, or resumes from, the containers' cells (``env``: ``os.environ`` by default)."""
    from bench.instruments.environment import native

    name = f"{suite}-{size}-{dev}"
    return runs_root() / (f"native-{name}" if native(os.environ if env is None else env) else name)


def planning_probe(stack_id: str) -> list[str]:
    """The GPUs the framework of ``stack_id`` sees (``bench.run.probe.probe_gpus``; RuntimeError when it cannot
    tell)."""
    from bench.run.probe import probe_gpus

    return probe_gpus(get_stack(stack_id))


def stack_gpus(stack_id: str) -> list[str]:
    """The GPUs the framework of ``stack_id`` sees: what ``bench doctor`` recorded on this very GPU under this software
    (``bench.run.probe.recorded_gpus``: no process started), else the probe's answer (``planning_probe``); logs
    which (INFO).

    Raises:
        RuntimeError: the probe's (a framework that cannot tell).
    """
    from bench.run.probe import recorded_gpus

    gpus, how = recorded_gpus(stack_id, results_root(), os.environ.get("BENCH_FLAVOR", "gpu"))
    if gpus is not None:
        logger.info(f"{stack_id}: GPU {gpus[0]} as bench doctor saw it, probe skipped: {how}")
        return gpus
    gpus = planning_probe(stack_id)
    logger.info(f"{stack_id}: probed the GPUs its framework sees ({how}): {', '.join(gpus) or 'none'}")
    return gpus


def resolve_device(requested: Device, stacks: list[str]) -> RunDevice:
    """``auto`` -> gpu when every selected stack's framework sees a GPU (``stack_gpus``), else cpu.

    Raises:
        InputError: ``gpu`` with no visible GPU (naming the stack that sees none), or a framework that cannot tell.
    """
    if requested == "cpu":
        return "cpu"
    for sid in stacks:
        try:
            gpus = stack_gpus(sid)
        except RuntimeError as e:
            raise InputError(str(e)) from e
        if not gpus:
            if requested == "gpu":
                raise InputError(f"--device gpu (DEVICE=gpu) but the {get_stack(sid).backend} framework of stack "
                                 f"{sid} sees no GPU; check the NVIDIA driver, the NVIDIA Container Toolkit and "
                                 f"that the container was started with a GPU")
            return "cpu"
    return "gpu"


def banner(lines: list[str]) -> None:
    """``lines`` framed by rules of ``!``, loud enough to notice in a scrolling log: one WARNING."""
    rule = "!" * BANNER_WIDTH
    logger.warning("\n".join([rule, *(f"!! {line}" for line in lines), rule]))


def round_schedules(stack_ids: list[str], round_: int | None, round_stacks: str | None, seed: int | None,
                    repeats: int, rule: str = "shuffled") -> dict[str, dict[str, Any]]:
    """Each stack's ``schedule`` block for ``--round`` (empty without it), its order by ``rule`` (``--order``).

    Raises:
        InputError: ``--round-stacks``/``--seed``/``--order`` without ``--round``, or a round the plan lacks.
    """
    from bench.core import rounds

    if round_ is None:
        if round_stacks is not None or seed is not None or rule != rounds.ORDER_RULES[0]:
            raise InputError("--round-stacks, --seed and --order go with --round")
        return {}
    stacks = round_stacks.split() if round_stacks else stack_ids
    try:
        return {s: rounds.schedule(s, stacks, rounds.DEFAULT_SEED if seed is None else seed, round_, repeats, rule)
                for s in stack_ids}
    except ValueError as e:
        raise InputError(f"--round: {e} (--repeats sets the number of rounds)") from e


def cooldown_for(req: Request, dev: RunDevice) -> Cooldown | None:
    """``req``'s cooldown (``bench.instruments.gpu_state.Cooldown``) on a GPU, None without one: its idle baseline is
    ``--idle-temp-c`` when given (read once before the comparison's first stack), else NVML's reading now. An
    ``--idle-temp-c`` without ``--cooldown`` on a GPU is logged as not used (not refused: the launcher passes it).

    Raises:
        InputError: a cooldown or an idle temperature asked of a CPU run, where no GPU warms up and so none would be
            waited for (the host's ``make check-request`` refuses ``COOLDOWN`` and ``IDLE_TEMP_C`` on a CPU host the
            same way, ``bench.core.request.run_args``).
    """
    if dev != "gpu" and req.cooldown_s:
        raise InputError(f"--cooldown {req.cooldown_s:g} (COOLDOWN) waits for the GPU to cool, and this run is on the "
                         "CPU; leave it unset (or 0)")
    if dev != "gpu" and req.idle_temp_c is not None:
        raise InputError(f"--idle-temp-c {req.idle_temp_c:g} (IDLE_TEMP_C) is the GPU's idle temperature, and this "
                         "run is on the CPU; leave it unset")
    if not req.cooldown_s:
        if req.idle_temp_c is not None:  # make bench-all passes it on every GPU host, a cooldown or not: said, kept
            logger.info(f"--idle-temp-c {req.idle_temp_c:g} (IDLE_TEMP_C) not used: it is the cooldown's baseline, and "
                        "no --cooldown (COOLDOWN) is set, so no cell waits for the GPU to cool")
        return None
    from bench.instruments.gpu_state import Cooldown

    cooldown = Cooldown(req.cooldown_s, idle_c=req.idle_temp_c, idle_source=IDLE_GIVEN)
    logger.info(f"cooldown: up to {req.cooldown_s:g} s before each cell, to {cooldown.idle_c} + 3 °C "
                f"(idle from {cooldown.idle_source})")
    return cooldown


def cell_inputs(req: Request, command: str = "run") -> dict[str, Any]:
    """``plan.expand``'s (``command`` run) or ``plan.sweep_cells``' (sweep) keyword inputs from ``req``: every option
    ``command`` takes whose name is a plan input (``plan.PLAN_INPUTS``: the scenarios' inputs and the run options),
    and for ``run`` the timing cadence (``sync``)."""
    names = (*planning.PLAN_INPUTS, "sync") if command == "run" else planning.PLAN_INPUTS
    return {f.name: getattr(req, f.name) for f in Request.options(command) if f.name in names}


def run_request(req: Request) -> int:
    """``bench run``: every cell of ``req``'s selection, each in its own process. Returns the exit code (1 when a
    cell did not succeed).

    Raises:
        InputError: a bad ``--set``, selection or device, before any cell runs.
    """
    from bench.core.settings import SettingsError

    stack_ids = stack_list(req.stacks)
    kw = cell_inputs(req)
    try:
        kw.update(req.variant_settings())
    except SettingsError as e:
        raise InputError(f"--set: {e}") from e

    def cells(size: Size, device: RunDevice) -> list[Cell]:
        def on(stacks: list[str]) -> list[Cell]:
            return planning.expand(stacks, req.suite, size, device, req.workloads, req.tasks, **kw)

        return planning.only_variants(on(stack_ids), req.variants, on(list(STACKS)) if req.variants else None)

    try:  # validate everything before probing a framework
        cells("smoke", "cpu")
    except planning.PlanError as e:
        raise InputError(str(e)) from e
    return execute(req, req.suite, cells)


def run_sweep(req: Request, grid_file: Path) -> int:
    """``bench sweep``: the YAML grid ``grid_file`` on ``req``'s stacks (invalid combinations are recorded
    ``unsupported``). Returns the exit code (1 when a cell did not succeed).

    Raises:
        InputError: a bad grid, selection or device, before any cell runs.
    """
    from bench.run import sweep

    stack_ids = stack_list(req.stacks)
    kw = cell_inputs(req, "sweep")
    try:  # validate everything before probing a framework
        grid = sweep.load(grid_file)
        planning.sweep_cells(grid, stack_ids, size="smoke", device="cpu", **kw)
    except (sweep.GridError, planning.PlanError) as e:
        raise InputError(str(e)) from e
    return execute(req, grid.name, lambda sz, dev: planning.sweep_cells(grid, stack_ids, size=sz, device=dev, **kw))


def execute(req: Request, suite: str, make_cells: Callable[[Size, RunDevice], list[Cell]]) -> int:
    """Resolve device and size of ``req``, build the cells with ``make_cells(size, device)``, run them, summarise.
    Returns the exit code: 1 when a cell's status is neither ``ok`` nor ``unsupported``, else 0.

    Raises:
        InputError: no GPU for ``--device gpu``, cells the plan refuses, bad ``--round`` inputs, ``--cooldown`` on a
            CPU (``cooldown_for``), or on a GPU a ``$BENCH_RESULTS_DIR/doctor`` (the measured peak's folder) that
            cannot be written.
        bench.core.runlock.FolderBusy: another ``bench run`` is writing into the run folder (its lock held).
    """
    stack_ids = stack_list(req.stacks)
    dev = resolve_device(req.device, stack_ids)
    size = req.size_for(dev)
    try:
        cells = make_cells(size, dev)
    except planning.PlanError as e:
        raise InputError(str(e)) from e
    repeats = req.repeats_for(dev)
    schedules = round_schedules(stack_ids, req.round_, req.round_stacks, req.seed, repeats, req.order)
    cooldown = cooldown_for(req, dev)  # before the GEMM peak probe heats the GPU
    out = req.out_dir or default_run_dir(suite, size, dev)
    from bench.core import runlock
    from bench.run.runner import run_cells

    with runlock.hold(out, runlock.RUN_LOCK, "bench run"):  # one writer per run folder, before it says anything
        if dev == "cpu":
            banner([f"CPU MODE: no GPU in use (--device {req.device}). Size: {size}.",
                    "These numbers are smoke tests of the harness, NOT GPU benchmarks.",
                    "Every result row carries device=cpu and this note."])
        logger.info(_run_line(req, len(cells), repeats, schedules.get(stack_ids[0]), out))
        gpu = _prepare_gpu(stack_ids, results_root()) if dev == "gpu" else None
        outcomes = run_cells(cells, out, force=req.force, repeats=repeats, round_=req.round_,
                             schedules=schedules, cooldown=cooldown, gpu=gpu)
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    logger.info("summary: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + f" -> {out}")
    bad = [o for o in outcomes if o.status not in ("ok", "unsupported")]
    if bad:
        logger.warning(f"{len(bad)} cell(s) did not succeed; see their records and .log files")
        return 1
    return 0


def _run_line(req: Request, n_cells: int, repeats: int, sched: dict[str, Any] | None, out: Path) -> str:
    """The ``run:`` line: cells, repeats or this round's order, and the run directory."""
    if req.round_ is None or sched is None:
        return f"run: {n_cells} cells x {repeats} repeat(s) -> {out}"
    how = f"seed {sched['seed']}" if req.order == "shuffled" else f"rule {req.order}"
    return (f"run: {n_cells} cells, round {req.round_} of {repeats} ({how}, order "
            f"{' '.join(sched['order'])}) -> {out}")


def _prepare_gpu(stack_ids: list[str], root: Path) -> str | None:
    """Before a GPU run's cells: each stack's measured GEMM peak (what ``mfu_measured`` divides by, measured in this
    image on this GPU once) and the GPU's UUID, read once so that a record from another GPU (a preempted spot VM) is
    run again, never reused.

    Raises:
        InputError: a peak to measure and ``root/doctor``, where it is saved, cannot be written
            (``bench.run.probe.ensure_measured_peak``).
    """
    from bench.instruments.gpu_state import gpu_uuid
    from bench.run.probe import ensure_measured_peak

    for sid in stack_ids:
        logger.info(ensure_measured_peak(sid, root, os.environ.get("BENCH_FLAVOR", "gpu")))
    return gpu_uuid()


def fidelity(stack_id: str, workload: str, size: Size, device: Device, epochs: int, out_file: Path | None) -> None:
    """``bench fidelity``: the harness's ms/step under each timing cadence against a free-running loop
    (``bench.run.fidelity.measure``), logged (INFO) and, with ``out_file``, written as JSON with the environment. Cut
    short by SIGTERM or SIGINT (``bench.core.interrupt``), the JSON holds the runs that ended (``runs_done``) and why
    (``interrupted``, also logged), and ``Interrupted`` goes on up.

    Raises:
        InputError: a workload or stack the plan refuses, or no GPU for ``device`` gpu.
        CommandFailed: the measurement itself failed (its first line).
        bench.core.interrupt.Interrupted: SIGTERM or SIGINT (after the JSON of the runs that ended).
    """
    from bench.core.atomic import write_json_atomic
    from bench.core.errors import CommandFailed
    from bench.instruments.environment import capture, utc_now
    from bench.models.workloads import WORKLOADS
    from bench.run.fidelity import measure

    try:
        planning.expand([stack_id], WORKLOADS[workload].suite if workload in WORKLOADS else "classic", size,
                        "cpu", [workload])
    except planning.PlanError as e:
        raise InputError(str(e)) from e
    dev = resolve_device(device, [stack_id])
    done: list[dict[str, Any]] = []
    try:
        r = measure(stack_id, workload, dev, size, epochs, done=done)
    except interrupt.Interrupted as e:  # the runs that ended are kept, with why the others are missing
        if out_file:
            with interrupt.shielded():
                why = interrupt.reason(e.signum, f"after {len(done)} of its runs; rerun it for the ratios")
                write_json_atomic(out_file, {"stack": stack_id, "workload": workload, "device": dev, "size": size,
                                             "epochs": epochs, "interrupted": why, "runs_done": done,
                                             "utc": utc_now(), "env": capture()})
            logger.info(f"wrote {out_file}: {why}")
        raise
    except Exception as e:  # one line, not a traceback wall
        raise CommandFailed(f"fidelity run failed: {type(e).__name__}: {e}".splitlines()[0]) from e
    logger.info(f"{stack_id} {workload} ({size}, {dev}), order {', '.join(r['order'])}: free-running loop "
                f"{r['handloop_ms_per_step']:.3f} ms/step")
    for cadence, c in r["cadences"].items():
        logger.info(f"  sync={cadence:<8} {c['ms_per_step']:.3f} ms/step, ratio {c['ratio']:.4f} "
                    f"({c['overhead_pct']:+.2f} %)")
    if out_file:
        write_json_atomic(out_file, {**r, "utc": utc_now(), "env": capture()})
