"""Rounds: the order in which ``make bench-all`` runs the stacks, so that drift is not confounded with a stack.

Round r runs every stack once (one repeat of each of its cells), in an order shuffled with a recorded
seed; round r+1 shuffles again. A slow drift of the machine (a GPU warming up, a neighbour's load,
clock changes) then falls on every stack instead of on whichever ran last, and the report can test for
it by comparing each stack's first and last round. The order is a pure function of (stacks, seed,
round), so a resumed run recomputes the same plan and skips the repeats already on disk.

``make compare-versions`` uses the ``abba`` rule instead (two stacks A, B: AB, BA, BA, AB, AB, BA, ...): every pair
of rounds is balanced, every four rounds each stack runs first and second twice, and a linear drift over rounds
4k+1..4k+4 adds the same total to both stacks (positions 1,2,2,1 vs 2,1,1,2). A random order balances drift only
on average over many rounds, and a comparison of two stacks has 4 to 8.

Pure functions of the plan, so both sides compute them: the host's launcher (``bench.host.launch``) and ``bench run
--round`` in an image (``bench.run.session``). ``python3 -m bench.host rounds --seed S --round R STACK...``
(``bench.host.rounds``) prints round R's order.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

# make bench-all's default SEED, declared with the request: fixed, so two runs of the same plan run in the same order
from bench.core.request import DEFAULT_SEED as DEFAULT_SEED  # the rounds' default shuffle seed, re-exported
from bench.core.request import ORDER_RULES as ORDER_RULES  # the order rules, re-exported


def order(stacks: Sequence[str], seed: int, round_: int, rule: str = ORDER_RULES[0]) -> list[str]:
    """The stacks of round ``round_`` (1-based) in the order of ``rule``: ``shuffled`` with ``seed``, or ``abba``
    (two stacks; ``seed`` unused): as given in rounds 1, 4, 5, 8, ... (round % 4 in {0, 1}), reversed in the others.

    Raises:
        ValueError: ``round_`` < 1, a stack named twice, an unknown rule, or ``abba`` without exactly two stacks.
    """
    if round_ < 1:
        raise ValueError(f"round must be at least 1, got {round_}")
    if len(set(stacks)) != len(stacks):
        raise ValueError(f"a stack is named twice in {list(stacks)}")
    if rule not in ORDER_RULES:
        raise ValueError(f"order rule {rule!r} is none of {', '.join(ORDER_RULES)}")
    out = list(stacks)
    if rule == "abba":
        if len(out) != 2:
            raise ValueError(f"the abba order takes two stacks, got {len(out)}: {out}")
        return out if round_ % 4 in (0, 1) else out[::-1]
    random.Random(f"{seed}:{round_}").shuffle(out)
    return out


def schedule(stack: str, stacks: Sequence[str], seed: int, round_: int, rounds: int,
             rule: str = ORDER_RULES[0]) -> dict[str, Any]:
    """The ``schedule`` block of a record: seed, round (1-based) of ``rounds``, the round's order, the
    stack's 1-based position in it and the order's ``rule`` (``order_rule``).

    Raises:
        ValueError: ``stack`` is not in ``stacks``, ``round_`` outside 1..``rounds``, or as ``order``.
    """
    if not 1 <= round_ <= rounds:
        raise ValueError(f"round {round_} is outside 1..{rounds}")
    seq = order(stacks, seed, round_, rule)
    if stack not in seq:
        raise ValueError(f"stack {stack!r} is not in the round's stacks {seq}")
    return {"seed": seed, "round": round_, "rounds": rounds, "order": seq, "position": seq.index(stack) + 1,
            "order_rule": rule}
