"""One comparison's plan of rounds x stacks, and the launchers that carry it out. Standard library only.

The plan (``plan``) is the one loop: round r runs every stack once, in the order ``bench.core.rounds.order`` gives
for (stacks, seed, r), and each step passes its stack the same ``bench run`` round arguments (``Step.bench_args``),
so the schedule in every record, the resume and the drift check are the same whichever launcher ran it:

- ``Compose`` (``make bench-all``): ``make bench-<stack> ROUND=<r>`` per step on this host, one after another,
  going on past a failed stack; a SkyPilot job runs ``make bench-all`` on its VM (``cloud/run.sh``), so it is
  this launcher too.
- ``KubernetesJob`` (``make cloud-k8s``, ``bench.host.cloud.k8s_job``): one init container per step, in order
  (init containers run one at a time, so the stacks never share the GPU).

``python3 -m bench.host launch compose --stacks "A B" --rounds N --seed S [--order abba]`` runs the compose launcher
(``--dry-run``: checks the plan and prints the rounds' orders, as ``make check-request`` does before any build).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.core import rounds, runlock
from bench.core.stacks import STACKS

#: The default order rule: shuffled with the seed (``make bench-all``).
SHUFFLED = rounds.ORDER_RULES[0]


@dataclass(frozen=True)
class Step:
    """One stack's turn in one round: ``round`` (1-based) of ``rounds``, the round's ``order``, ``seed``, and the
    order's ``rule`` (``bench.core.rounds.order``)."""

    round: int
    rounds: int
    stack: str
    order: tuple[str, ...]
    seed: int
    rule: str = SHUFFLED

    def bench_args(self, stacks: Sequence[str]) -> list[str]:
        """The ``bench run`` arguments that make this step's records carry the plan's schedule (``stacks``: every
        stack of the comparison, whose shuffle the round's order is)."""
        rule = ["--order", self.rule] if self.rule != SHUFFLED else []
        return ["--round", str(self.round), "--repeats", str(self.rounds), "--seed", str(self.seed),
                "--round-stacks", " ".join(stacks), *rule]


def plan(stacks: Sequence[str], n_rounds: int, seed: int = rounds.DEFAULT_SEED,
         rule: str = SHUFFLED) -> list[Step]:
    """Every step of a comparison: ``n_rounds`` rounds of every stack, each round in the order of ``rule``
    (shuffled with ``seed``, or ``abba``).

    Raises:
        ValueError: ``n_rounds`` < 1, no stack, a stack that is none of ``bench.core.stacks.STACKS``, or a stack
            named twice.
    """
    if n_rounds < 1 or not stacks:
        raise ValueError(f"a comparison needs at least one round and one stack (got {n_rounds}, {list(stacks)})")
    unknown = [s for s in stacks if s not in STACKS]
    if unknown:
        raise ValueError(f"unknown stack(s) {', '.join(unknown)}; known: {', '.join(STACKS)}")
    steps = []
    for r in range(1, n_rounds + 1):
        order = tuple(rounds.order(stacks, seed, r, rule))
        steps += [Step(r, n_rounds, s, order, seed, rule) for s in order]
    return steps


#: What the host asks ``nvidia-smi`` for the idle baseline (the doctor reads the driver the same way).
IDLE_QUERY = ["nvidia-smi", "--query-gpu=temperature.gpu,uuid", "--format=csv,noheader"]


def _ask(cmd: list[str]) -> str | None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def idle_temperature(ask: Callable[[list[str]], str | None] = _ask) -> float | None:
    """The GPU's temperature (°C) before the comparison's first stack, from ``IDLE_QUERY`` (GPU 0, the first line;
    ``ask`` returns a command's stdout or None, tests pass a fake nvidia-smi): the cooldown's idle baseline for
    every stack of every round (``bench run --idle-temp-c``), since each stack's own start follows the previous
    stack's heat. None without nvidia-smi or with an answer that is not a number."""
    out = ask(IDLE_QUERY)
    first = (out or "").strip().splitlines()[:1]
    try:
        return float(first[0].split(",")[0]) if first else None
    except ValueError:
        return None


def call(cmd: list[str]) -> int:
    """Run ``cmd``; return its exit status. On Ctrl-C (SIGINT to the terminal's whole foreground group, the child
    included) wait for the child to end before ``KeyboardInterrupt`` goes on: ``make bench-<stack>`` waits for compose,
    which stops the container, whose ``bench`` writes the interrupted cell's record. ``subprocess.call`` killed the
    child (SIGKILL) 0.25 s after the signal, so the prompt came back while the container was still stopping, and a
    rerun could start beside it. A second Ctrl-C stops the wait."""
    child = subprocess.Popen(cmd)
    try:
        return child.wait()
    except KeyboardInterrupt:
        child.wait()
        raise


@dataclass
class Compose:
    """``make bench-<stack> ROUND=<r>`` per step on this host (the Makefile's compose run of one stack), printing
    each round's order as it starts. ``run``: how a command runs (returns its exit status; tests pass a fake).
    ``idle_c``: the cooldown's idle baseline (``idle_temperature``, read once before the first step unless given or
    set as ``IDLE_TEMP_C`` in the environment), passed to every step as ``IDLE_TEMP_C``; read only for a cooldown
    (``cooldown_s`` > 0, s: ``COOLDOWN``), its one use (without one each step's ``bench run`` said it was not used),
    and never for a ``device`` ``cpu`` run, whose steps refuse it (a GPU-only input) though the host has a GPU."""

    make: str = "make"
    run: Callable[[list[str]], int] = call
    idle_c: float | None = None
    read_idle: Callable[[], float | None] = idle_temperature
    device: str | None = None
    cooldown_s: float | None = None

    def launch(self, steps: Sequence[Step], stacks: Sequence[str]) -> list[str]:
        failed = []
        if self.idle_c is None and not os.environ.get("IDLE_TEMP_C") and self.device != "cpu" and self.cooldown_s:
            self.idle_c = self.read_idle()
            if self.idle_c is not None:
                print(f"== idle GPU temperature before the first stack: {self.idle_c:g} °C (the cooldown's "
                      "baseline for every stack)", flush=True)
        idle = [f"IDLE_TEMP_C={self.idle_c:g}"] if self.idle_c is not None else []
        for step in steps:
            if step.stack == step.order[0]:
                how = f"seed {step.seed}" if step.rule == SHUFFLED else f"order {step.rule}"
                print(f"== round {step.round} of {step.rounds} ({how}): {' '.join(step.order)}", flush=True)
            rule = [f"ORDER={step.rule}"] if step.rule != SHUFFLED else []
            if self.run([self.make, "--no-print-directory", f"bench-{step.stack}", f"ROUND={step.round}", *rule,
                         *idle]):
                failed.append(f"{step.stack}(round {step.round})")
        return failed


@dataclass
class KubernetesJob:
    """One init container per step (``container(step, args)``: the container spec for the step's stack, given its
    ``bench run`` round arguments); ``launch`` appends them, in order, to ``containers`` and fails nothing: the
    Job runs them."""

    container: Callable[[Step, list[str]], dict[str, Any]]
    containers: list[dict[str, Any]]

    def launch(self, steps: Sequence[Step], stacks: Sequence[str]) -> list[str]:
        self.containers += [self.container(step, step.bench_args(stacks)) for step in steps]
        return []


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``launch compose`` (``python3 -m bench.host launch compose --stacks "A B" --rounds N [--seed S]``)."""
    p = sub.add_parser("launch", help="run a comparison's rounds x stacks through make bench-<stack> (exit 1 when a "
                       "stack failed)", description=__doc__.splitlines()[0])
    p.add_argument("launcher", choices=["compose"])
    p.add_argument("--stacks", required=True, help="space-separated stack ids")
    p.add_argument("--rounds", type=int, required=True)
    p.add_argument("--seed", type=int, default=rounds.DEFAULT_SEED)
    p.add_argument("--order", default=SHUFFLED, choices=rounds.ORDER_RULES,
                   help="shuffled (with --seed) or abba (two stacks)")
    p.add_argument("--make", default="make")
    p.add_argument("--device", choices=["cpu", "gpu"],
                   help="the run's device: cpu reads no idle GPU temperature [default: read one where nvidia-smi can]")
    p.add_argument("--cooldown", type=float, metavar="S",
                   help="the run's COOLDOWN (s): only with one (> 0) is the idle GPU temperature read and passed on")
    p.add_argument("--run-dir", type=Path, help="the run folder the steps write (RESULTS_DIR/runs/RUN): locked for "
                   "the launch, so a second make bench-all into it is refused (bench.core.runlock); with --dry-run, "
                   "only checked to be free")
    p.add_argument("--dry-run", action="store_true",
                   help="check the plan and print each round's order; run nothing (make check-request)")
    p.set_defaults(main=main, parser=p)


def main(args: argparse.Namespace) -> int:
    """``launch compose``: exit 1 when a stack failed, 2 for a plan that cannot be (``plan``), a ``--make`` that is
    no program or a ``--run-dir`` another launch holds (``bench.core.runlock``), 130 on Ctrl-C (one line, once the
    running stack has stopped); ``--dry-run``: the rounds' orders, nothing run."""
    try:
        steps = plan(args.stacks.split(), args.rounds, args.seed, args.order)
    except ValueError as e:
        args.parser.error(str(e))
    if shutil.which(args.make) is None:  # each step's Popen ended in a FileNotFoundError traceback
        args.parser.error(f"--make {args.make!r}: no such program (not on PATH, or not executable)")
    stacks = args.stacks.split()
    if args.dry_run:
        if args.run_dir:  # make bench-all's first check, before its preflight and builds: nothing made or written
            try:
                runlock.check_free(args.run_dir, runlock.ALL_LOCK, "make bench-all")
            except runlock.FolderBusy as e:
                print(f"launch: {e}", file=sys.stderr)
                return 2
        for step in steps[::len(stacks)]:
            print(f"round {step.round} of {step.rounds}: {' '.join(step.order)}")
        return 0
    try:
        with runlock.hold(args.run_dir, runlock.ALL_LOCK, "make bench-all") if args.run_dir else nullcontext():
            failed = Compose(args.make, device=args.device, cooldown_s=args.cooldown).launch(steps, stacks)
    except runlock.FolderBusy as e:
        print(f"launch: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted (Ctrl-C): the records written so far are kept, the interrupted cell's as a timeout; the "
              "same make command resumes (cells already ok are skipped); the run's CSV and report were not rewritten "
              "(what they hold is from the last collect: make collect RUN=<this run> reads what is on disk)",
              file=sys.stderr)
        return 130
    if failed:
        print(f"not all cells succeeded in: {' '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0
