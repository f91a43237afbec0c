"""``bench list``, ``bench knobs`` and ``bench fields``: what there is to run and to read."""

from __future__ import annotations

import click

from bench.core.stacks import STACKS
from bench.models.workloads import SIZES, SUITES, WORKLOADS
from bench.results.record import FIELDS
from bench.run import plan as planning
from bench.run.scenarios import scenario_of
from bench.run.scenarios.epochs import EPOCHS


@click.command("list")
@click.option("--stacks", "only_stacks", is_flag=True, help="Print stack ids only.")
def list_cmd(only_stacks: bool) -> None:
    """Stacks, suites, workloads, tasks and sizes."""
    if only_stacks:
        click.echo("\n".join(STACKS))
        return
    click.echo("stacks:")
    # padded to the longest id and service: a derived stack's id (make version-stack) is 40 characters and more
    wid, wsvc = (max(len(getattr(s, k)) for s in STACKS.values()) for k in ("id", "service"))
    for s in STACKS.values():
        click.echo(f"  {s.id:<{wid}}  service {s.service:<{wsvc}}  {s.title}")
    click.echo("suites:")
    for suite, names in SUITES.items():
        click.echo(f"  {suite}: {', '.join(names)}")
    click.echo("workloads:")
    width = max(len(name) for name in WORKLOADS)
    for w in WORKLOADS.values():
        click.echo(f"  {w.name:<{width}}  {scenario_of(w).describe(w)}")
    click.echo(keras_variants_line())
    click.echo(f"tasks: {', '.join(planning.all_tasks())}")
    click.echo(f"sizes: {', '.join(SIZES)}")


def keras_variants_line() -> str:
    """The epoch suites' named one-flag Keras variants (``bench.core.knobs.FIT_VARIANTS``) as ``--set`` flags, one
    line of ``bench list`` and ``bench knobs`` that names the suites from the scenario registry."""
    from bench.core.knobs import FIT_VARIANTS

    flags = " | ".join(f"--set {k}: {v}" for k, v in FIT_VARIANTS.items())
    return f"named variants on the Keras stacks in {EPOCHS.suites_text}: {flags}"


@click.command("fields")
def fields_cmd() -> None:
    """Describe every field of a result record: meaning [unit; rule across repeats] (bench.results.schema)."""
    for name, text in FIELDS.items():
        click.echo(f"{name}: {text}")


@click.command("knobs")
def knobs_cmd() -> None:
    """The settings a cell or sweep may set, per engine, with their values."""
    from bench.core.knobs import DOCS, KNOBS
    from bench.core.settings import describe_allowed

    for engine, knobs in KNOBS.items():
        click.echo(f"{engine}:")
        for name, allowed in knobs.items():
            values = describe_allowed(allowed)
            click.echo(f"  {name:<20} {values}")
    click.echo(keras_variants_line())
    click.echo("meaning:")
    for name, text in DOCS.items():
        click.echo(f"  {name}: {text}")


COMMANDS = (list_cmd, fields_cmd, knobs_cmd)
