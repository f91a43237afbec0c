"""The errors a command's body raises for the ``bench`` command line to print as one line (``bench.cli.main``)."""

from __future__ import annotations


class InputError(ValueError):
    """Input the user can fix (a flag, a file, a missing package): one line on stderr, exit code 2."""


class CommandFailed(RuntimeError):
    """A command that started and then failed: one line on stderr, exit code 1."""
