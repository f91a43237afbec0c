"""The ``bench`` command line inside the images: it only parses. Each command calls the one function that does it
(``bench.run.session`` runs a request, ``bench.results.actions`` the results side) and maps that function's known
errors to one line on stderr: exit code 2 for bad input (``bench.core.errors.InputError``), 1 for a run with a cell
that did not succeed or a command that failed, 128 + the signal's number for SIGTERM or SIGINT
(``bench.core.interrupt``). Commands: ``info`` (list, knobs, fields), ``running`` (run, sweep, fidelity, doctor,
selftest), ``results`` (collect, compare, report, history). What a command's body logs (the ``bench`` logger tree)
is printed for the length of the command by ``bench.cli.console``: INFO on stdout, WARNING and above on stderr, the
message alone.
"""

from __future__ import annotations

import sys

import click

from bench.cli import console, info, results, running
from bench.core import interrupt
from bench.core.stacks import DEFAULT_STACKS, STACKS

USAGE_EXIT = 2


def _summary() -> str:
    """``bench --help``'s first line: every default stack by id and title (``bench.core.stacks``)."""
    return "Benchmark matrix of the stacks " + "; ".join(f"{sid} ({STACKS[sid].title})" for sid in DEFAULT_STACKS) + "."


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, help=_summary())
@click.pass_context
def cli(ctx: click.Context) -> None:
    ctx.call_on_close(console.attach())  # the command's log lines on the console until it ends


for _command in (*info.COMMANDS, *running.COMMANDS, *results.COMMANDS):
    cli.add_command(_command)


def main(argv: list[str] | None = None) -> None:
    """Entry point: click errors become one line on stderr with exit code 2; SIGTERM and SIGINT end a command as
    ``bench.core.interrupt`` says (its children killed, what was measured written), one line and exit 128 + the
    signal's number."""
    try:
        with interrupt.handling():
            rv = cli.main(args=argv, prog_name="bench", standalone_mode=False)
    except interrupt.Interrupted as e:
        click.echo(f"bench: {e}: stopped (what was measured is written)", err=True)
        sys.exit(e.exit_code)
    except click.UsageError as e:
        click.echo(f"bench: error: {e.format_message()}", err=True)
        sys.exit(USAGE_EXIT)
    except click.Abort:
        click.echo("bench: aborted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        click.echo(f"bench: error: {e.format_message()}", err=True)
        sys.exit(e.exit_code)
    sys.exit(rv if isinstance(rv, int) else 0)
