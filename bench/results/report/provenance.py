"""The provenance section: when, on what GPU, driver, CPU and images, which framework versions."""

from __future__ import annotations

from bench.core.stacks import STACKS
from bench.results.report.common import _num, json_list
from bench.results.schema import Env, Process, Record, Repeats, col


def run_span(df) -> str:
    """The run's date and span: the first start to the last end (UTC) of every repeat of every cell (each row's own
    times are its first repeat's; ``repeats.started_utc`` / ``finished_utc`` list every repeat's), and the cells'
    own process time, every repeat's (``repeats.process_wall_s``, else ``process.wall_s``: what the runner measured
    per process; the span also holds container starts and image checks). Rows of several repeats without the
    repeats' times (records from before them, collected without their repeats' records) are counted and named."""
    import pandas as pd

    end = _stamps(df, col(Record, "finished_utc"), col(Repeats, "finished_utc"))
    if end.empty:
        return "- Run date: n/a"
    start = _stamps(df, col(Record, "started_utc"), col(Repeats, "started_utc"))
    first, last = (start if not start.empty else end).min(), end.max()
    text = (f"- Run date (UTC): {first:%Y-%m-%d}; cells ran from {first:%H:%M:%S} to {last:%Y-%m-%d %H:%M:%S} "
            f"({(last - first).total_seconds() / 60:.1f} min")
    walls = [_process_s(r) for _, r in df.iterrows()]
    if any(w is not None for w in walls):
        text += f"; cell processes {sum(w for w in walls if w is not None) / 60:.1f} min in all, every repeat"
    n = pd.to_numeric(df[col(Repeats, "n")], errors="coerce") if col(Repeats, "n") in df else None
    listed = df[col(Repeats, "finished_utc")].map(lambda v: json_list(v) is not None) \
        if col(Repeats, "finished_utc") in df else pd.Series(False, index=df.index)
    partial = int(((n > 1) & ~listed).sum()) if n is not None else 0
    if partial:
        text += (f"; {partial} cell(s) of several repeats hold their first repeat's times only: the span may have "
                 "started earlier or ended later")
    return text + ")"


def _stamps(df, own: str, listed: str):
    """Every timestamp of ``own`` (each row's) and of the lists in ``listed`` (each repeat's), parsed (UTC), NaT
    dropped."""
    import pandas as pd

    values = list(df[own]) if own in df else []
    if listed in df:
        values += [v for cell in df[listed] for v in (json_list(cell) or [])]
    return pd.to_datetime(pd.Series(values, dtype=object), utc=True, errors="coerce").dropna()


def _process_s(row) -> float | None:
    """A row's process seconds over every repeat: the sum of ``repeats.process_wall_s``, else ``process.wall_s``."""
    walls = json_list(row.get(col(Repeats, "process_wall_s")))
    if walls:
        return float(sum(walls))
    return _num(row.get(col(Process, "wall_s")))


def provenance(df) -> list[str]:
    """Markdown lines: when, device, GPU, driver, CPU, images, commit, per-stack framework versions, and
    warnings (CPU rows, native GPU rows, MIG, PTX JIT, throttling) for the run in ``df``."""
    def uniq(col: str) -> str:
        if col not in df.columns:
            return "n/a"
        vals = sorted({str(v) for v in df[col].dropna() if str(v) not in ("", "nan")})
        return ", ".join(vals) or "n/a"

    lines = ["## Provenance", "", run_span(df),
             f"- Device: {uniq('device')}; GPU: {uniq(col(Env, 'gpu', 'name'))}; "
             f"driver: {uniq(col(Env, 'gpu', 'driver'))}",
             f"- CPU: {uniq(col(Env, 'cpu_model'))}; host: {uniq(col(Env, 'host'))}; images: {uniq(col(Env, 'image'))}",
             f"- bench git commit: {uniq(col(Env, 'git_commit'))}"]
    for sid in STACKS:
        rows = df[df["stack"] == sid]
        if not rows.empty:
            lines.append(stack_versions(sid, rows))
    if (df["device"] == "cpu").any():
        lines.append("- **CPU rows are smoke tests of the harness, not GPU benchmarks.**")
    native = _flagged(df[df["device"] == "gpu"], col(Env, "native"))
    if native:
        lines.append(f"- **{native} GPU row(s) ran natively (`env.native`: no stack image, bench from a checkout on "
                     "the machine's own Python, as the GPU window runs it): the versions above are what ran, not the "
                     "images' pins. They check the harness on a GPU; they are not published-grade rows.**")
    if _flagged(df, col(Env, "gpu", "mig_mode")):
        lines.append("- **MIG mode: the GPU was partitioned; power and energy are the whole GPU's figures and MFU "
                     "has no datasheet peak for a slice, not comparable with a full GPU's.**")
    jit = _flagged(df, col(Env, "cuda_cache", "jit_compiled"))
    if jit:
        lines.append(f"- {jit} cell(s) paid for the driver's PTX JIT compilation (the CUDA cache grew: PTX for a GPU "
                     "newer than a wheel's machine code, or runtime-compiled kernels): their first step/epoch may "
                     "include it; steady-state figures do not.")
    return lines + [""]


#: The frameworks whose versions the provenance names per stack (``env.packages``).
FRAMEWORK_PACKAGES = ("tensorflow", "tf-keras", "keras", "jax", "jaxlib", "torch")


def stack_versions(sid: str, rows) -> str:
    """The provenance line of stack ``sid``'s ``rows``: each framework's version and the Python, every distinct
    value the rows hold (`` / `` between them), and a bold warning where they differ (a run folder resumed on
    another image or checkout holds cells measured on two software stacks; it named the first row's only)."""
    def seen(column: str) -> list[str]:
        return sorted({str(v) for v in rows[column].dropna()}) if column in rows else []

    packages = col(Env, "packages") + "."
    found = {name: seen(packages + name) for name in sorted(FRAMEWORK_PACKAGES)}
    found = {name: vals for name, vals in found.items() if vals}
    python = seen(col(Env, "python"))
    versions = ", ".join(f"{name} {' / '.join(vals)}" for name, vals in found.items())
    line = f"- {sid}: {versions or 'n/a'}; Python {' / '.join(python) or 'n/a'}"
    mixed = [name for name, vals in {**found, "Python": python}.items() if len(vals) > 1]
    if mixed:
        line += (f" **(mixed: {', '.join(mixed)} differ between this stack's rows, so its cells were measured on "
                 "different software)**")
    return line


def _flagged(df, col: str) -> int:
    """How many rows have ``col`` true (0 when the column is absent)."""
    if col not in df.columns:
        return 0
    return int(df[col].map(lambda v: str(v).lower() == "true").sum())
