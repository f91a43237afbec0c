"""``python3 -m bench.host COMMAND ...``: the one front door of the host's tools. Standard library only: the host's
own ``python3`` runs it before anything is installed.

Each command's parser and handler live in the module that owns it: ``add_parser(subparsers)`` registers the command
and sets its handler, ``main(args) -> int``, as the default ``main`` (and the command's parser as ``parser``, for a
handler that reports bad input with ``args.parser.error``); this program only registers them and dispatches. Exit
status: 0 ok, 1 a failure, 2 bad input (one line on stderr, never a traceback).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from bench.core import commit
from bench.host import cloud, doctor, imagetag, launch, request, rounds, stackfiles, versions

PROG = "python3 -m bench.host"
#: The commands, in the order ``--help`` lists them: each module's ``add_parser`` registers its own.
COMMANDS = (doctor, launch, rounds, stackfiles, versions, imagetag, cloud, request, commit)


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose bad input is one line on stderr (``<prog>: error: <message>``) and exit 2, for the
    program and every command (``add_subparsers`` makes its parsers of the parent's class)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def parser() -> Parser:
    """The program's parser, every command registered."""
    p = Parser(prog=PROG, description="The host's tools, one command each (standard library only).",
               epilog=f"{PROG} COMMAND --help: a command's options.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.add_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: the command line) and run its command; return its exit status."""
    args = parser().parse_args(argv)
    return int(args.main(args))


if __name__ == "__main__":
    sys.exit(main())
