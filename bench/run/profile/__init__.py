"""Where the time goes: a cell's profile (``bench run --profile``), taken after its timed measurement and apart
from it, with the framework's own profiler.

The engine trains (or steps) and times the cell as always; its telemetry window closes after its last barrier and
its metrics are computed before it returns. Then, when the cell asks for a profile, the worker runs the steps the
engine handed back (``rerun.ProfileRun``: the same model, optimizer state, data and step) under the framework's
profiler (``window.profiler_for``): ``rerun.WARMUP`` untraced steps, then ``STEPS`` steps inside the window
(``window.Window``: a barrier at each edge). The trace goes to the worker's scratch folder (``<run_id>.trace.json.gz``,
a Chrome trace; the XPlane profilers' TensorBoard directory too), which the runner moves beside the record once the
worker has ended (``place``), and ``summary.summarise`` turns it into the record's
``profile`` block, the same categories on every stack (``bench.core.opcategories``). A profile that fails leaves
the cell ``ok`` with its timed numbers, the block saying why (``reason``).

Modules: ``rerun`` (the steps), ``window`` (the window, the profiler lookup), ``torch_profiler``,
``jax_profiler``, ``tensorflow_profiler`` (one per framework), ``xspace`` (reading XSpace and HLO protobufs),
``spans`` (one timeline from either trace format; the Chrome trace written), ``summary`` (the block).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bench.results.schema import Record
from bench.run.profile.rerun import WARMUP, ProfileRun
from bench.run.profile.summary import summarise
from bench.run.profile.window import Window, profiler_for
from bench.run.timing import clock

__all__ = ["STEPS", "WARMUP", "ProfileRun", "capture", "place"]

#: Steps inside the profiled window: a few steady steps, enough to see every op of a step several times while the
#: trace stays small (a smoke cell's trace is tens to hundreds of kB).
STEPS = 5


def capture(run: ProfileRun, backend: str, device: str, base: Path, barrier: Any,
            steps: int = STEPS) -> dict[str, Any]:
    """Profile ``steps`` steps of ``run`` with framework ``backend``'s profiler on ``device`` and return the
    ``profile`` block (``bench.results.schema.Profile``); its files are ``base`` + ``.trace.json.gz`` (and
    ``.tensorboard``). ``barrier``: the framework's device barrier. Never raises for a profile that fails: the block
    then holds ``reason`` (and whatever was measured before the failure is discarded with the profiler)."""
    start = clock()
    base.parent.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="dlbench-profile-"))
    window: Window | None = None
    try:
        profiler = profiler_for(backend, device, workdir)
        window = Window(profiler, barrier)
        held = run(window, steps)
        if not window.stopped:
            raise RuntimeError("the steps ended before the profile window closed")
        spans, files = profiler.collect(base)
        block = summarise(spans, held)
        block.update(profiler=profiler.name, activities=profiler.activities, warmup_steps=WARMUP,
                     wall_ms=1000.0 * (window.wall_s or 0.0), **files)
    except Exception as e:  # the timed numbers stand; the profile says why it is missing
        if window is not None:
            with contextlib.suppress(Exception):
                window.abandon()
        block = {"reason": f"{type(e).__name__}: {e}".splitlines()[0][:500]}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    block["cost_s"] = clock() - start
    return block


def place(rec: Record, work: Path, final: Path, out_dir: Path) -> None:
    """Move a profile's files (``profile.trace``, ``profile.tensorboard``: names in the worker's scratch folder
    ``work``) beside the record at ``final``, their paths in the block then relative to the run directory
    ``out_dir`` (``pytorch/<cell_id>.trace.json.gz``; a repeat's under ``repeats/``), so that the cell's record,
    which takes repeat 1's block, points at them too. A file the worker did not leave is named null."""
    block = rec.profile
    if block is None:
        return
    for key in ("trace", "tensorboard"):
        name = getattr(block, key)
        if not name:
            continue
        src, dst = work / name, final.parent / name
        if not src.exists():
            setattr(block, key, None)
            continue
        if dst.is_dir():
            shutil.rmtree(dst)
        shutil.move(str(src), str(dst))
        setattr(block, key, dst.relative_to(out_dir).as_posix())
