"""``python3 -m bench.host rounds --seed S --round R STACK...``: print round R's stack order (``bench.core.rounds``,
where the rounds and their orders are defined)."""

from __future__ import annotations

import argparse

from bench.core.rounds import DEFAULT_SEED, ORDER_RULES, order


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``rounds`` (``python3 -m bench.host rounds --seed S --round R STACK...``)."""
    p = sub.add_parser("rounds", help="print round R's stack order", description="Print round R's stack order.")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--round", dest="round_", type=int, required=True)
    p.add_argument("--order", default=ORDER_RULES[0], choices=ORDER_RULES)
    p.add_argument("stacks", nargs="+")
    p.set_defaults(main=main, parser=p)


def main(args: argparse.Namespace) -> int:
    """``rounds``: print the order; exit 2 for one that cannot be (``order``)."""
    try:
        print(" ".join(order(args.stacks, args.seed, args.round_, args.order)))
    except ValueError as e:
        args.parser.error(str(e))
    return 0
