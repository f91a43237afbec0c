"""What every ``bench`` command shares: one-line usage errors, the check of a folder it writes into, and the options
generated from ``Request``."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from dataclasses import Field
from pathlib import Path
from typing import Any, NoReturn, TypeVar, get_args

import click

from bench.core import runlock
from bench.core.atomic import remove_empty, unwritable
from bench.core.request import Request, cli_flag
from bench.core.words import Device

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str) -> NoReturn:
    """Raise a usage error that ``bench.cli.main`` prints as one line (exit code 2)."""
    raise click.UsageError(message)


def writable_folder(folder: Path, option: str, made: list[Path] | None = None) -> Path:
    """``folder``, made (with its parents) and proved writable (``bench.core.atomic.unwritable``, which adds the
    folders it made to ``made``). ``option`` names the option (``--out``) or default the folder comes from.

    Raises:
        click.BadParameter: the folder cannot be made or written; one line (exit code 2, ``bench.cli.main``) naming
            ``option``, the folder and the OS's reason.
    """
    reason = unwritable(folder, made)
    if reason:
        raise click.BadParameter(f"cannot write into the folder {str(folder)!r}: {reason}", param_hint=option)
    return folder


@contextlib.contextmanager
def output_folder(folder: Path, option: str) -> Iterator[Path]:
    """``writable_folder`` for the body of a command that writes into ``folder``; when the body raises (a refusal,
    ``InputError`` or a usage error, e.g. no GPU for ``--device gpu``; a signal; a crash), the folders the check made
    are removed again while still empty (``bench.core.atomic.remove_empty``; a run folder's lock file alone,
    ``bench.core.runlock.drop_alone``, counts as empty): a command that stops before writing anything leaves
    nothing it made, and a folder holding a record is never touched.

    Raises:
        click.BadParameter: as ``writable_folder``; and whatever the body raises.
    """
    made: list[Path] = []
    writable_folder(folder, option, made)
    try:
        yield folder
    except BaseException as e:
        if not isinstance(e, runlock.FolderBusy):  # another run holds the folder: its lock file is not ours
            for p in made:
                runlock.drop_alone(p)
        remove_empty(made)
        raise


@contextlib.contextmanager
def output_file(file: Path | None, option: str) -> Iterator[Path | None]:
    """``output_folder`` on the folder ``file`` goes into (nothing to check when None): a command refused before it
    writes ``file`` (a source that is no bench CSV, an empty run) leaves none of the folders the check made.

    Raises:
        click.BadParameter: as ``writable_folder``; and whatever the body raises.
    """
    if file is None:
        yield None
        return
    with output_folder(file.parent, option):
        yield file


def device_option(help: str | None = None) -> Callable[[F], F]:
    """``--device auto|cpu|gpu`` (``bench.core.words.Device``; env BENCH_DEVICE), default auto."""
    return click.option("--device", type=click.Choice(get_args(Device)), default="auto", show_default=True,
                        envvar="BENCH_DEVICE", help=help)


class FiniteFloat(click.FloatRange):
    """A ``FloatRange`` that also refuses nan and inf (``float`` reads both, and no range refuses nan): a ``--timeout
    nan`` cut every cell at once and recorded it as a timeout. The host's check refuses them the same way
    (``bench.core.request._check``)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


def _click_type(f: Field[Any]) -> Any:
    """The click type of a ``Request`` field (``bench.core.request.option``'s kind, choices and minimum)."""
    m = f.metadata
    if m["choices"]:
        return click.Choice(m["choices"])
    if m["kind"] == "int":
        return click.IntRange(min=m["minimum"], min_open=m["open_min"]) if m["minimum"] is not None else int
    if m["kind"] == "float":
        return FiniteFloat(min=m["minimum"], min_open=m["open_min"])
    if m["kind"] == "path":
        return click.Path(file_okay=False, path_type=Path)
    return None


def request_options(command: str) -> Callable[[F], F]:
    """Decorator: one click option per ``bench.core.request.Request`` field that ``command`` takes, its name, type,
    default, environment variable and help declared there (the one place they are)."""

    def decorate(f: F) -> F:
        for field_ in reversed(Request.options(command)):
            m = field_.metadata
            kw: dict[str, Any] = {"help": m["help"], "envvar": m["env"], "metavar": m["metavar"]}
            if m["kind"] == "flag":
                kw.update(is_flag=True, default=field_.default)
            elif m["multiple"]:
                kw.update(multiple=True, required=m["required"], type=_click_type(field_))
            else:
                kw.update(type=_click_type(field_), default=field_.default,
                          show_default=field_.default is not None and "[default:" not in m["help"])
            f = click.option(cli_flag(field_), field_.name, **kw)(f)
        return f

    return decorate
