"""Where a command's messages go: the ``bench`` logger tree (each module's ``logging.getLogger(__name__)``) printed
as the command line has always printed them. INFO lines go to stdout, WARNING and above to stderr, each as its
message alone (no level name, no time), through ``click.echo`` as the commands' own lines are, so that the two
streams keep their order.

``bench.cli.cli`` attaches it for the length of one command (``attach``); the body of a command only logs. Outside the
command line (a test, a library caller) nothing is attached: INFO goes nowhere and a WARNING reaches stderr through
``logging.lastResort``, as the message alone, where the old ``to_stderr`` default put it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import click

#: The logger whose tree every module of ``bench`` logs into.
ROOT = "bench"


class EchoHandler(logging.Handler):
    """A record's message (``%(message)s``) through ``click.echo``: stdout below WARNING, stderr from WARNING up.
    ``click.echo`` looks the stream up when it prints, so a stream swapped after ``attach`` (click's ``CliRunner``,
    pytest's ``capsys``) receives the line."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            click.echo(self.format(record), err=record.levelno >= logging.WARNING)
        except Exception:  # logging's contract: a failed print is reported by handleError, never raised
            self.handleError(record)


def attach() -> Callable[[], None]:
    """Print the ``bench`` tree's INFO and above on the console (``EchoHandler``) and nowhere else: it does not
    propagate to the root logger, whose handlers (a framework's ``basicConfig``) would print it a second time with
    their own format. Returns the function that puts the logger back as it was."""
    logger = logging.getLogger(ROOT)
    handler = EchoHandler()
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False

    def detach() -> None:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate

    return detach
