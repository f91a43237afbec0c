"""The errors a command's body raises for the ``bench`` command line to print as one line (``bench.cli.main``). What
it reports on the way it logs to its module's logger, which the CLI prints (``bench.cli.console``)."""

from __future__ import annotations


class InputError(ValueError):
    """Input the user can fix (a flag, a file, a missing package): one line on stderr, exit code 2."""


class CommandFailed(RuntimeError):
    """A command that started and then failed: one line on stderr, exit code 1."""
