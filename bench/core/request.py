"""One request: every input a ``bench run`` (or ``bench sweep``) takes, each with its one default. Standard library
only.

``Request`` declares each input once (``option``: default, help, CLI option, environment variable, Makefile
variable); the ``bench`` command generates its options from it (``bench.cli.common``), and the host side (the Makefile,
``bench.host.cloud``'s SkyPilot task and Kubernetes Job, ``cloud/run.sh``) passes on only what the user set and takes
every default from here instead of restating it:

- ``python3 -m bench.host request default NAME [--device cpu|gpu]``: the default of one input as a run resolves it
  (``size``, ``repeats`` and ``timeout_s`` depend on the device or size);
- ``python3 -m bench.host request vars``: the Makefile variables that pass through to ``bench run`` as they are;
- ``python3 -m bench.host request args [--device cpu|gpu] [--suite S] VAR=VALUE...``: those variables as ``bench run``
  arguments (shell-quoted); an empty value is unset; on ``--device cpu`` a GPU-only input is refused, for a grid
  suite a variant input;
- ``python3 -m bench.host request check VAR=VALUE...``: the Makefile's loop variables checked (``check_loop``).

The ``request`` command is defined in ``bench.host.request`` and run by the host's front door, ``bench.host``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import MISSING, Field, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, get_args

from bench.core.stacks import STACKS
from bench.core.words import DEFAULT_GRIDS, Device, RunDevice, Size, Suite
from bench.core.workloadnames import check_workload

#: ``make bench-all``'s rounds shuffle with this seed unless ``SEED``/``--seed`` says otherwise (``bench.core.rounds``).
DEFAULT_SEED = 1
#: How a round orders its stacks (``bench.core.rounds.order``): ``shuffled`` with the seed (make bench-all), or
#: ``abba`` for two stacks (make compare-versions): A first in rounds 1, 4, 5, 8, ..., B first in 2, 3, 6, 7, ...
ORDER_RULES = ("shuffled", "abba")
#: Per-cell process time limit by size (s) unless ``--timeout`` says otherwise; ``timeout_for`` resolves it.
TIMEOUT_S = {"smoke": 600.0, "full": 3600.0}
#: Independent repeats per cell by device unless ``--repeats`` says otherwise: GPU timings vary run to run, and CPU
#: runs are smoke tests of the harness.
REPEATS: dict[RunDevice, int] = {"gpu": 3, "cpu": 1}
#: ``size`` auto: the published sizes on a GPU, smoke on a CPU.
AUTO_SIZE: dict[RunDevice, Size] = {"gpu": "full", "cpu": "smoke"}
RUN, SWEEP = "run", "sweep"


def option(default: Any, help: str, *, flag: str | None = None, env: str | None = None, make: str | None = None,
           kind: str = "str", choices: tuple[str, ...] = (), minimum: float | None = None, open_min: bool = False,
           multiple: bool = False, required: bool = False, metavar: str | None = None,
           commands: tuple[str, ...] = (RUN, SWEEP), check: Callable[[str], object] | None = None,
           gpu_only: bool = False) -> Any:
    """A ``Request`` field: its one ``default`` and ``help``, its CLI option (``flag``; default ``--<name>`` with
    dashes), environment variable (``env``), Makefile variable passed through as it is (``make``), value ``kind``
    (``str``, ``int``, ``float``, ``path``, ``flag``: a boolean switch), ``choices``, ``minimum`` (exclusive with
    ``open_min``), whether it repeats (``multiple``: a tuple; a Makefile value is split on spaces), the
    ``commands`` (``run``, ``sweep``) that take it, ``check``: a standard-library function that raises
    ValueError for a value (each word of a repeatable one) ``bench run`` would refuse, which ``run_args`` calls on
    the host, and ``gpu_only``: refused for a CPU run when set to other than its default (0 off; a None default: any
    value) by ``run_args``, as ``bench run`` refuses it (``bench.run.session.cooldown_for``)."""
    meta = {"help": help, "flag": flag, "env": env, "make": make, "kind": kind, "choices": choices,
            "minimum": minimum, "open_min": open_min, "multiple": multiple, "required": required,
            "metavar": metavar, "commands": commands, "check": check, "gpu_only": gpu_only}
    return field(default=default, metadata=meta)


def check_knob(assignment: str) -> None:
    """Check one ``--set`` word, ``KNOB=VALUE``, against the knobs' registry (``bench.core.knobs.parse_assignment``,
    standard library only). Raises SettingsError (a ValueError): no ``=``, a knob no engine has, or a value no engine
    allows for it."""
    from bench.core.knobs import parse_assignment  # imported when a knob is checked: the request module stays small

    parse_assignment(assignment)


def check_sync(text: str) -> None:
    """Raise ValueError when ``text`` is no timing cadence (``bench.core.cadence.Cadence.parse``: ``epoch``, ``step``,
    ``every:N``), as ``bench run --sync`` refuses it."""
    from bench.core.cadence import Cadence  # standard library only, imported when a cadence is checked

    Cadence.parse(text)


def check_run_name(name: str, var: str = "RUN") -> None:
    """Raise ValueError, naming the Makefile variable ``var``, when ``name`` is not one folder name of
    ``results/runs`` (a space split bench run's --out; '' wrote into runs/ itself; '/', '..' or a quote left it; a
    leading . or - hid it or read as an option; a comma, colon or % is make's own syntax)."""
    if not re.fullmatch(r"[A-Za-z0-9_@][A-Za-z0-9._+=@~-]*", name):
        raise ValueError(f"{var} must be one folder name: a letter, digit, _ or @, then letters, digits and "
                         f". _ + = @ ~ - (got '{name}')")


def check_suite(name: str) -> None:
    """Raise ValueError, listing them, when ``name`` is none of the suites (``bench.core.words.Suite``)."""
    if name not in get_args(Suite):
        raise ValueError(f"unknown suite {name!r}; known: {', '.join(get_args(Suite))}")


def cli_flag(f: Field) -> str:
    """The CLI option of a ``Request`` field (``--batch-size``)."""
    return f.metadata["flag"] or "--" + f.name.replace("_", "-")


#: The ``Request`` fields that name a variant (``Request.variant_settings``): a grid suite (``DEFAULT_GRIDS``) takes
#: none.
VARIANT_INPUTS = ("compile_mode", "assignments", "no_augment")


def grid_refusal(suite: str, given: str, pick: str) -> str:
    """Why a grid suite (``DEFAULT_GRIDS``) refuses the variant inputs ``given`` (``--set``, or the Makefile's
    ``SET``): one message for ``bench.run.plan.expand`` and the host's ``run_args``; ``pick``: how its variants are
    picked instead (``--variant``, ``VARIANTS``)."""
    return (f"the {suite} suite runs the variants of its own grid (bench/run/sweeps/{DEFAULT_GRIDS[suite]}), which "
            f"{given} would not change: pick its variants with {pick}, or run a grid of your own with bench sweep")


@dataclass(frozen=True)
class Request:
    """Every input of one ``bench run``/``bench sweep`` invocation, each with its default (``option``). None means
    "resolved when the run starts" (``resolved``: the device decides size and repeats, the size the time limit)."""

    stacks: tuple[str, ...] = option(
        (), f"Stack id ({', '.join(STACKS)}) or 'all' (the default stacks); repeatable [default: this image's, "
            "$BENCH_STACK].",
        flag="--stack", env="BENCH_STACK", multiple=True, required=True, metavar="STACK")
    suite: Suite = option("classic", "Suite to run (tuning = the default sweep).", make="SUITE", commands=(RUN,),
                          check=check_suite)
    workloads: tuple[str, ...] = option((), "Only these workloads (`bench list` names them); repeatable.",
                                        flag="--workload", multiple=True, make="WORKLOADS", commands=(RUN,),
                                        check=check_workload)
    tasks: tuple[str, ...] = option(
        (), "Only these tasks (fit, ...); repeatable. The workloads' tasks are known inside an image only, so a task "
            "is checked there, not by make's check-request.", flag="--task", multiple=True, make="TASKS",
        commands=(RUN,))
    variants: tuple[str, ...] = option(
        (), "Only the cells of these variants, as the plan names them (default, bs2, jit_compile=false, ...: a "
            "record's variant); repeatable. Each must name a cell of the suite's selection on some stack; a stack "
            "with none of them runs nothing ('run: 0 cells'). Checked against the plan inside an image, not by "
            "make's check-request.",
        flag="--variant", multiple=True, make="VARIANTS", commands=(RUN,))
    size: Size | Literal["auto"] = option(
        "auto", "smoke: tiny and fast; full: published sizes. auto: full on GPU, smoke on CPU.",
        choices=("auto", *get_args(Size)))
    device: Device = option("auto", "gpu makes a missing GPU an error.", env="BENCH_DEVICE", choices=get_args(Device))
    out_dir: Path | None = option(None, "Run directory [default: $BENCH_RESULTS_DIR/runs/<suite>-<size>-<device> in "
                                 "an image, .../native-<suite>-<size>-<device> outside one].", flag="--out",
                                 kind="path")
    force: bool = option(False, "Run cells again even when a result exists.", kind="flag")
    repeats: int | None = option(
        None, "Independent runs per cell, each in its own process; the record is their median "
              f"[default: {REPEATS['gpu']} on GPU, {REPEATS['cpu']} on CPU].",
        env="BENCH_REPEATS", kind="int", minimum=1)
    batch_size: int | None = option(None, "Override batch size (a record of its own: the cell id names it).",
                                    kind="int", minimum=1, make="BATCH_SIZE")
    epochs: int | None = option(None, "Override epochs, epoch suites (a record of its own: the cell id names it).",
                                kind="int", minimum=1, make="EPOCHS")
    samples: int | None = option(
        None, "epoch suites: train on the first N training examples (validation: a quarter as many, or the workload's "
              "held-out share of them): the same model and batch, fewer steps per epoch (a record of its own: the "
              "cell id names it; N at or above the dataset's training examples, where the size trains on all of "
              "them, is the default cell) [default: the size's, all of the dataset at full].",
        kind="int", minimum=1, make="SAMPLES")
    steps: int | None = option(None, "paper suite: timed steps after the first [default: 100 full, 3 smoke].",
                               kind="int", minimum=1, make="STEPS", commands=(RUN,))
    seq_len: int | None = option(
        None, "paper suite: sequence length of the tasks whose inputs have one (`bench list` names them, '--seq-len: "
              "...'); the other cells neither take nor name it, and a selection of none of those tasks is refused "
              "[default: each model's published one].",
        kind="int", minimum=1, make="SEQ_LEN", commands=(RUN,))
    timeout_s: float | None = option(
        None, f"Per-cell time limit in seconds [default: {TIMEOUT_S['smoke']:g} smoke, {TIMEOUT_S['full']:g} full].",
        flag="--timeout", kind="float", minimum=0, open_min=True, make="TIMEOUT")
    telemetry_samples: bool = option(
        False, "Also write each cell's raw GPU telemetry samples to <cell>.telemetry.csv.", kind="flag",
        make="TELEMETRY_SAMPLES")
    profile: bool = option(
        False, "After each cell's timed measurement, profile a few steady steps with the framework's own profiler: "
               "a trace beside the record and a 'profile' block (where the time goes; docs/profile.md). Repeat 1 "
               "only; the timed numbers are not affected.", kind="flag", make="PROFILE")
    round_: int | None = option(
        None, "Rounds (make bench-all): run only repeat ROUND of each cell; the cell's record is written once all "
              "--repeats rounds are on disk.", flag="--round", kind="int", minimum=1)
    round_stacks: str | None = option(
        None, "With --round: every stack of the run (space-separated), shuffled per round with --seed; each record "
              "keeps the round's order and this stack's position [default: --stack].")
    seed: int | None = option(None, f"With --round: the shuffle's seed [default: {DEFAULT_SEED}].", kind="int")
    order: str = option(
        ORDER_RULES[0], "With --round: how each round orders --round-stacks: shuffled (with --seed), or abba (two "
                        "stacks: A first in rounds 1, 4, 5, 8, ..., B first in 2, 3, 6, 7, ...); recorded in "
                        "schedule.order_rule.", choices=ORDER_RULES)
    data: str = option(
        "auto", "Fit suites' data: auto = the real dataset, falling back to a synthetic one of the same shapes only "
                "at smoke size (a full-size cell fails when it cannot read the real data); real = always required; "
                "synthetic = as asked. Recorded in data.source/data.requested.",
        env="BENCH_DATA", choices=("auto", "real", "synthetic"), make="DATA")
    cooldown_s: float = option(
        0.0, "GPU: before each cell, wait up to this many seconds for the GPU to be back within 3 °C of its "
             "temperature at the run's start; recorded per row; refused on a CPU run [default: 0, off].",
        flag="--cooldown", env="BENCH_COOLDOWN", kind="float", minimum=0, make="COOLDOWN", gpu_only=True)
    idle_temp_c: float | None = option(
        None, "GPU, with --cooldown: the GPU's idle temperature (°C) the cooldown waits for, read once before the "
              "comparison's first stack (make bench-all reads it with nvidia-smi); without it, the temperature as "
              "this bench run starts (after any stack before it heated the GPU); refused on a CPU run.",
        flag="--idle-temp-c", env="BENCH_IDLE_TEMP_C", kind="float", make="IDLE_TEMP_C", gpu_only=True)
    compile_mode: str | None = option(
        None, "plain PyTorch: run under torch.compile in this mode (variant compile-<mode>; other stacks record "
              "the cell as unsupported).", flag="--compile", choices=("default", "reduce-overhead", "max-autotune"),
        make="COMPILE", commands=(RUN,))
    assignments: tuple[str, ...] = option(
        (), "Set a knob for every cell (`bench knobs` lists them), e.g. --set tf32=off (strict FP32); repeatable. "
            "The cells' variant is named after what is set (tf32=off); a knob a stack's engine lacks makes that "
            "cell 'unsupported' with the reason.",
        flag="--set", env="BENCH_SET", multiple=True, metavar="KNOB=VALUE", make="SET", commands=(RUN,),
        check=check_knob)
    sync: str | None = option(
        None, "classic and tuning suites: timing cadence, a device barrier and clock read at epoch edges only "
              "('epoch'), every N steps ('every:N') or every step ('step') [default: epoch; the paper suite always "
              "times steps]. A cadence other than epoch adds 'sync-<cadence>' to the variant.",
        env="BENCH_SYNC", make="SYNC", commands=(RUN,), check=check_sync)
    no_augment: bool = option(
        False, "classic suite: train on the stored images, without the source's real-time augmentation "
               "(cifar10_cnn's shifts and flips): the knob augment=false, variant 'augment=false'.",
        kind="flag", make="NO_AUGMENT", commands=(RUN,))

    @classmethod
    def options(cls, command: str = RUN) -> list[Field]:
        """The fields ``command`` (``run`` or ``sweep``) takes, in declaration order."""
        return [f for f in fields(cls) if command in f.metadata["commands"]]

    def size_for(self, device: RunDevice) -> Size:
        """``size`` as a run on ``device`` (``cpu``/``gpu``) resolves it (``auto``: ``AUTO_SIZE``)."""
        return AUTO_SIZE[device] if self.size == "auto" else self.size

    def repeats_for(self, device: RunDevice) -> int:
        """``repeats`` as a run on ``device`` resolves it (``REPEATS`` unless set)."""
        return self.repeats or REPEATS[device]

    def variant_settings(self) -> dict[str, Any]:
        """``plan.expand``'s ``settings`` and ``variant`` for the variant inputs (empty: the default): ``--set
        KNOB=VALUE`` (named after what is set, e.g. ``tf32=off``), ``--compile MODE`` (``compile-<mode>``) and
        ``--no-augment`` (``augment=false``).

        Raises:
            SettingsError: a ``--set`` that names no knob or a value no engine allows (``knobs.parse_assignment``).
        """
        from bench.core.knobs import parse_assignment, variant_name

        settings = dict(parse_assignment(a) for a in self.assignments)
        names = [variant_name(settings)] if settings else []
        if self.compile_mode:
            settings["compile"] = self.compile_mode
            names.insert(0, f"compile-{self.compile_mode}")
        if self.no_augment:
            settings["augment"] = False
            names.append("augment=false")
        return {"settings": settings, "variant": "+".join(names)} if names else {}


def timeout_for(size: str, timeout_s: float | None = None) -> float:
    """A cell's process time limit (s) at ``size``: ``timeout_s`` (``--timeout``) where given, else ``TIMEOUT_S``'s.
    The one place that resolves it: ``bench.run.plan`` (every cell of ``bench run`` and ``bench sweep``) and
    ``default`` (the host's ``request default timeout_s``) call it.

    Raises:
        KeyError: ``size`` is not one of ``TIMEOUT_S``' sizes and ``timeout_s`` is not given.
    """
    return timeout_s or TIMEOUT_S[size]


def default(name: str, device: str | None = None, size: str | None = None) -> Any:
    """The default of ``Request`` field ``name`` as a run resolves it: ``size`` and ``repeats`` on ``device``,
    ``timeout_s`` at ``size``, ``seed`` the rounds' ``DEFAULT_SEED``; other fields their declared default.

    Raises:
        ValueError: no such field, or ``device``/``size`` missing where the default depends on it.
    """
    known = {f.name: f for f in fields(Request)}
    if name not in known:
        raise ValueError(f"no request input {name!r}; known: {', '.join(known)}")
    request = Request()
    if name in ("size", "repeats"):
        if device not in REPEATS:
            raise ValueError(f"the default {name} depends on the device: give --device cpu or gpu")
        return request.size_for(device) if name == "size" else request.repeats_for(device)
    if name == "timeout_s":
        if size not in TIMEOUT_S:
            raise ValueError("the default timeout depends on the size: give --size smoke or full")
        return timeout_for(size, request.timeout_s)
    if name == "seed":
        return DEFAULT_SEED
    f = known[name]
    return f.default if f.default is not MISSING else None


#: The Makefile's own variables that shape its loop and the run's name (not passed through): their ``Request`` fields.
LOOP_VARS = {"SUITE": "suite", "SIZE": "size", "REPEATS": "repeats", "SEED": "seed", "ORDER": "order",
             "ROUND": "round_"}


def make_vars() -> dict[str, Field]:
    """Makefile variable -> ``Request`` field, for the inputs the Makefile passes through to ``bench run`` as they
    are (the ones it does not consume itself: stacks, suite, size, device, repeats and seed shape its loop)."""
    return {f.metadata["make"]: f for f in fields(Request) if f.metadata["make"] not in (None, *LOOP_VARS)}


def check_loop(values: dict[str, str]) -> None:
    """Check the Makefile's loop variables (``LOOP_VARS``) on the host as ``bench run`` checks their options
    (``make check-request``). Raises ValueError naming the variable: none of ``LOOP_VARS``, empty (make would pass
    an option without its value), a value ``bench run`` would refuse (``_check``), or a ROUND past REPEATS."""
    known = {f.name: f for f in fields(Request)}
    for var, value in values.items():
        if var not in LOOP_VARS:
            raise ValueError(f"not a loop variable: {var}; known: {', '.join(LOOP_VARS)}")
        if not value.strip():
            raise ValueError(f"{var} is empty: give it a value or leave it unset")
        _check(known[LOOP_VARS[var]], var, value.strip())
    round_, repeats = values.get("ROUND", "").strip(), values.get("REPEATS", "").strip()
    if round_ and repeats and int(round_) > int(repeats):
        raise ValueError(f"ROUND: {round_} is past the last of REPEATS={repeats} rounds")


TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


def run_args(values: dict[str, str], device: RunDevice | None = None, suite: str | None = None) -> list[str]:
    """``bench run`` arguments for Makefile variables (``make_vars``) set to non-empty ``values``: a flag for a
    switch set to 1 (``TRUE_WORDS``; 0 and ``FALSE_WORDS`` leave it off), one option per space-separated word of a
    repeatable input, else the option and the value. ``device``: the run's (``cpu``, ``gpu``; None: not known);
    ``suite``: the run's (None: not known).

    Raises:
        ValueError: a variable that is not a pass-through input, a switch set to neither 1 nor 0, a value
            ``bench run`` would refuse (``_check``: a choice, a number and its minimum, ``--set`` of a knob or value
            the knobs' registry lacks), on ``device`` cpu a GPU-only input (``option``'s ``gpu_only``) set to other
            than its default, or for a grid ``suite`` a variant input (``VARIANT_INPUTS``, ``grid_refusal``).
    """
    known = make_vars()
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ValueError(f"not a pass-through input: {', '.join(unknown)}; known: {', '.join(known)}")
    out: list[str] = []
    for var, f in known.items():
        value = values.get(var, "").strip()
        if not value:
            continue
        if f.metadata["kind"] == "flag":
            if value.lower() in FALSE_WORDS:
                continue
            if value.lower() not in TRUE_WORDS:
                raise ValueError(f"{var}={value!r}: a switch takes 1 (on) or 0 (off)")
            out.append(cli_flag(f))
        elif f.metadata["multiple"]:
            for word in value.split():
                _check(f, var, word)
                out += [cli_flag(f), word]
        else:
            _check(f, var, value)
            if device == "cpu" and f.metadata["gpu_only"] and (f.default is None or float(value) != f.default):
                raise ValueError(f"{var}={value}: a GPU-only input, and this run is on the CPU (DEVICE=cpu, or "
                                 "no NVIDIA GPU found); leave it unset")
            out += [cli_flag(f), value]
    given = [var for var, f in known.items() if f.name in VARIANT_INPUTS and cli_flag(f) in out]
    if suite in DEFAULT_GRIDS and given:
        raise ValueError(grid_refusal(suite, " and ".join(given), "VARIANTS"))
    return out


def _check(f: Field, var: str, value: str) -> None:
    """Raise ValueError, naming the Makefile variable ``var``, when ``value`` is not what ``bench run``'s option
    takes: none of ``f``'s ``choices``, not a finite number of its ``kind`` (``int``, ``float``) or below its
    ``minimum`` (as click's ``Choice``, ``IntRange`` and ``bench.cli.common.FiniteFloat`` would refuse it in the
    image), or refused by its ``check``."""
    meta = f.metadata
    if meta["choices"] and value not in meta["choices"]:
        raise ValueError(f"{var}: {value!r} is none of {', '.join(meta['choices'])}")
    if meta["kind"] in ("int", "float"):
        try:
            number = int(value) if meta["kind"] == "int" else float(value)
        except ValueError:
            raise ValueError(f"{var}: {value!r} is not {'an integer' if meta['kind'] == 'int' else 'a number'}") \
                from None
        if not math.isfinite(number):
            raise ValueError(f"{var}: {value!r} is not a finite number")
        low = meta["minimum"]
        if low is not None and (number <= low if meta["open_min"] else number < low):
            raise ValueError(f"{var}: {value} is not {'above' if meta['open_min'] else 'at least'} {low:g}")
    if meta["check"] is not None:
        try:
            f.metadata["check"](value)
        except ValueError as e:
            raise ValueError(f"{var}: {e}") from None

