"""``python3 -m bench.host request ...``: ``bench run``'s inputs (``bench.core.request``) as the Makefile and the
host's tools ask for them, and the report's price (``bench.core.price``). Standard library only.

- ``default NAME [--device cpu|gpu] [--size smoke|full]``: one input's default as a run resolves it;
- ``vars``: the Makefile variables passed through to ``bench run`` as they are;
- ``args [--device cpu|gpu] [--suite S] VAR=VALUE...``: those variables as ``bench run`` arguments (shell-quoted);
- ``check VAR=VALUE...``: the Makefile's loop variables checked (``bench.core.request.check_loop``);
- ``price TEXT``: ``PRICE_PER_HOUR`` checked as ``bench report --price-per-hour`` checks it;
- ``run-name TEXT``: ``RUN`` checked: one folder name (``bench.core.request.check_run_name``);
- ``fit-workload TEXT``: ``FIDELITY_WORKLOAD`` checked: an epoch-timed workload's name, as ``bench fidelity`` wants
  (``bench.core.workloadnames.check_fit_workload``).

Exit 2 with one line on stderr for a value ``bench run`` (or ``bench report``) would refuse.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Iterable

from bench.core import price
from bench.core.request import LOOP_VARS, REPEATS, TIMEOUT_S, check_loop, check_run_name, default, make_vars, run_args
from bench.core.workloadnames import check_fit_workload


def split_pairs(texts: Iterable[str], bad: str = "expected VAR=VALUE, got {pair!r}") -> dict[str, str]:
    """``VAR=VALUE`` texts as a dict, split at the first ``=`` (a value may hold more: ``SET=tf32=off``); a ``VAR``
    given twice keeps its last value. The one reading of such pairs: ``request args|check`` and ``cloud --input``.

    Raises:
        ValueError: ``bad`` formatted with ``pair``, the first text without an ``=`` (a bare ``SET`` was dropped).
    """
    texts = list(texts)
    missing = [t for t in texts if "=" not in t]
    if missing:
        raise ValueError(bad.format(pair=missing[0]))
    return dict(t.partition("=")[::2] for t in texts)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``request default NAME [--device D] [--size S] | vars | args VAR=VALUE... | check VAR=VALUE... |
    price TEXT | run-name TEXT | fit-workload TEXT`` (``python3 -m bench.host request``)."""
    p = sub.add_parser("request", help="bench run's inputs: one's default, the Makefile's pass-through variables, "
                       "their bench run arguments; the report's price", description=__doc__.splitlines()[0])
    cmd = p.add_subparsers(dest="cmd", required=True)
    d = cmd.add_parser("default", help="print one input's default")
    d.add_argument("name")
    d.add_argument("--device", choices=sorted(REPEATS))
    d.add_argument("--size", choices=sorted(TIMEOUT_S))
    cmd.add_parser("vars", help="print the Makefile variables passed through to bench run")
    a = cmd.add_parser("args", help="print bench run arguments for VAR=VALUE pairs (shell-quoted)")
    a.add_argument("--device", choices=sorted(REPEATS), help="the run's device: a GPU-only input is refused on cpu")
    a.add_argument("--suite", help="the run's suite: a grid suite (tuning) refuses the variant inputs")
    a.add_argument("pairs", nargs="*", metavar="VAR=VALUE")
    c = cmd.add_parser("check", help=f"check the Makefile's {', '.join(LOOP_VARS)} as bench run would")
    c.add_argument("pairs", nargs="*", metavar="VAR=VALUE")
    pr = cmd.add_parser("price", help="check PRICE_PER_HOUR as bench report --price-per-hour would")
    pr.add_argument("text")
    rn = cmd.add_parser("run-name", help="check RUN: one folder name of results/runs")
    rn.add_argument("text")
    fw = cmd.add_parser("fit-workload", help="check FIDELITY_WORKLOAD: an epoch-timed workload (bench fidelity's)")
    fw.add_argument("text")
    p.set_defaults(main=main, parser=p)


def main(ns: argparse.Namespace) -> int:
    """``request ...`` (module docstring): exit 2 for an unknown input, a default that needs the device or size, a
    pass-through or loop value bench run would refuse, a price bench report would, or a workload bench fidelity
    would."""
    try:
        if ns.cmd == "default":
            value = default(ns.name, ns.device, ns.size)
            print(f"{value:g}" if isinstance(value, float) else ("" if value is None else value))
        elif ns.cmd == "vars":
            print(" ".join(make_vars()))
        elif ns.cmd == "price":
            price.dollars(ns.text)
        elif ns.cmd == "run-name":
            check_run_name(ns.text)
        elif ns.cmd == "fit-workload":
            check_fit_workload(ns.text)
        else:
            pairs = split_pairs(ns.pairs)
            if ns.cmd == "check":
                check_loop(pairs)
            else:
                print(shlex.join(run_args(pairs, ns.device, ns.suite)))
    except ValueError as e:
        label = {"price": "PRICE_PER_HOUR: ", "fit-workload": "FIDELITY_WORKLOAD: "}.get(ns.cmd, "")
        ns.parser.error(f"{label}{e}")
    return 0
