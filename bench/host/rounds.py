"""Rounds: the order in which ``make bench-all`` runs the stacks, so that drift is not confounded with a stack.

Round r runs every stack once (one repeat of each of its cells), in an order shuffled with a recorded
seed; round r+1 shuffles again. A slow drift of the machine (a GPU warming up, a neighbour's load,
clock changes) then falls on every stack instead of on whichever ran last, and the report can test for
it by comparing each stack's first and last round. The order is a pure function of (stacks, seed,
round), so a resumed run recomputes the same plan and skips the repeats already on disk.

``python -m bench.host.rounds --seed S --round R STACK...`` prints round R's order (the Makefile's loop).
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence
from typing import Any

# make bench-all's default SEED, declared with the request: fixed, so two runs of the same plan run in the same order
from bench.core.request import DEFAULT_SEED as DEFAULT_SEED  # the rounds' default shuffle seed, re-exported


def order(stacks: Sequence[str], seed: int, round_: int) -> list[str]:
    """The stacks of round ``round_`` (1-based) in their shuffled order.

    Raises:
        ValueError: ``round_`` < 1, or a stack named twice.
    """
    if round_ < 1:
        raise ValueError(f"round must be at least 1, got {round_}")
    if len(set(stacks)) != len(stacks):
        raise ValueError(f"a stack is named twice in {list(stacks)}")
    out = list(stacks)
    random.Random(f"{seed}:{round_}").shuffle(out)
    return out


def schedule(stack: str, stacks: Sequence[str], seed: int, round_: int, rounds: int) -> dict[str, Any]:
    """The ``schedule`` block of a record: seed, round (1-based) of ``rounds``, the round's order and the
    stack's 1-based position in it.

    Raises:
        ValueError: ``stack`` is not in ``stacks``, ``round_`` outside 1..``rounds``, or as ``order``.
    """
    if not 1 <= round_ <= rounds:
        raise ValueError(f"round {round_} is outside 1..{rounds}")
    seq = order(stacks, seed, round_)
    if stack not in seq:
        raise ValueError(f"stack {stack!r} is not in the round's stacks {seq}")
    return {"seed": seed, "round": round_, "rounds": rounds, "order": seq, "position": seq.index(stack) + 1}


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.host.rounds", description="Print round R's stack order.")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--round", dest="round_", type=int, required=True)
    p.add_argument("stacks", nargs="+")
    args = p.parse_args(argv)
    try:
        print(" ".join(order(args.stacks, args.seed, args.round_)))
    except ValueError as e:
        p.error(str(e))


if __name__ == "__main__":
    main()
