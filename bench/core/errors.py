"""How a command's body talks to the ``bench`` command line: the errors it raises for the CLI to print as one
line (``bench.cli.main``), and the ``Echo`` callables it prints through (``print``; ``to_stderr`` for warnings)."""

from __future__ import annotations

import sys
from collections.abc import Callable

#: A line printer: ``print`` (stdout), ``to_stderr``, or ``click.echo`` from the CLI.
Echo = Callable[[str], None]


def to_stderr(message: str) -> None:
    """A warning's default printer: ``message`` on stderr."""
    print(message, file=sys.stderr)


class InputError(ValueError):
    """Input the user can fix (a flag, a file, a missing package): one line on stderr, exit code 2."""


class CommandFailed(RuntimeError):
    """A command that started and then failed: one line on stderr, exit code 1."""
