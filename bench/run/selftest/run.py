"""The self-test's parent: one child process per importable framework and TF32 setting (the TF32 switches are
process-wide and ``NVIDIA_TF32_OVERRIDE`` must be set before CUDA initialises; TensorFlow beside CUDA PyTorch in
one process crashes), the console table and the JSON file.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.core.families import FRAMEWORKS
from bench.run.selftest import FAIL, NA, PASS, Result, failed, na

#: import name of each framework the harness drives (``bench.core.families.FRAMEWORKS``), in the order the
#: children run: TensorFlow, which the JAX and Keras 3 images also carry (tf.data, keras-hub), last, so that the
#: first child (which also runs the energy check) is the image's own framework wherever it has another
BACKENDS = tuple(sorted(FRAMEWORKS, key=lambda b: b == "tensorflow"))
#: the time one child may take (s): the whole self-test stays within ~5 min per image on an A100/H100
CHILD_TIMEOUT_S = 240.0


def plan(backend: str, first: bool) -> list[tuple[str, list[str]]]:
    """(TF32 setting, checks) of each child of ``backend``: the default setting runs memory first (its peak must be
    the held allocation's), then barrier + MFU and the math mode; ``on`` and ``off`` the math mode and the GEMM
    peaks of their precisions (the probe's modes); the energy check in the first framework's default child only."""
    return [("default", ["memory", "barrier", "math", *(["energy"] if first else [])]),
            ("on", ["math", "gemm"]), ("off", ["math", "gemm"])]


def child_env(device: str, setting: str) -> dict[str, str]:
    """A child's environment: the cell's ``NVIDIA_TF32_OVERRIDE`` for this setting (``knobs.tf32_override``), no
    visible GPU and one OpenMP thread on a CPU run, and JAX's / TensorFlow's memory pools off so that NVML sees the
    memory check's allocation as it is made."""
    from bench.core.knobs import tf32_override

    env = {**os.environ, "PYTHONUNBUFFERED": "1", "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
           "TF_FORCE_GPU_ALLOW_GROWTH": "true"}
    if device == "cpu":
        # one intra-op thread: on shared cores a descheduled worker thread makes a step wait a scheduler tick (the
        # checks compare two timings of the same work, not the CPU's throughput)
        env.update(CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1")
    override = tf32_override({"tf32": setting})
    if override is None:
        env.pop("NVIDIA_TF32_OVERRIDE", None)
    else:
        env["NVIDIA_TF32_OVERRIDE"] = override
    return env


def run_child(backend: str, device: str, setting: str, checks: list[str],
              timeout_s: float = CHILD_TIMEOUT_S) -> tuple[str | None, list[Result]]:
    """Run ``checks`` of ``backend`` under TF32 ``setting`` in a fresh process; (framework version, results). A child
    that crashes or times out gives one failed result per check, with the last line of its stderr."""
    cmd = [sys.executable, "-m", "bench.run.selftest.checks", backend, device, setting, *checks]
    try:
        p = subprocess.run(cmd, env=child_env(device, setting), capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, [failed(c, backend, f"tf32={setting}: timed out after {timeout_s:g} s") for c in checks]
    for line in p.stdout.splitlines():
        if line.startswith("SELFTEST"):
            found = json.loads(line[len("SELFTEST"):])
            return found["version"], [Result(**r) for r in found["results"]]
    tail = (p.stderr.strip().splitlines() or [f"exit {p.returncode}, no output"])[-1][:300]
    return None, [failed(c, backend, f"tf32={setting}: the check process failed: {tail}") for c in checks]


def installed(backends: tuple[str, ...] = BACKENDS) -> list[str]:
    """The frameworks importable here, without importing them (``find_spec``)."""
    return [b for b in backends if importlib.util.find_spec(b) is not None]


def resolve_device(requested: str) -> tuple[str, dict[str, Any]]:
    """(``cpu`` or ``gpu``, NVML's view of the GPU). ``auto``: gpu when NVML finds one."""
    from bench.instruments.environment import gpu_info

    info = gpu_info() if requested != "cpu" else {"available": False, "reason": "--device cpu"}
    if requested == "auto":
        return ("gpu" if info.get("available") else "cpu"), info
    return requested, info


def selftest(device: str, backends: list[str], results: list[Result] | None = None,
             versions: dict[str, str | None] | None = None) -> tuple[list[Result], dict[str, str | None]]:
    """Every check of every framework in ``backends`` (those not importable: n/a with the reason); results and the
    frameworks' versions, added to ``results`` and ``versions`` as each child ends when given (what a self-test cut
    short by a signal keeps)."""
    results = [] if results is None else results
    versions = {} if versions is None else versions
    present = installed(tuple(backends))
    for b in backends:
        if b not in present:
            versions[b] = None
            results.append(na("all", b, f"{b} is not installed in this environment"))
    for i, b in enumerate(present):
        for setting, checks in plan(b, first=i == 0):
            version, found = run_child(b, device, setting, checks)
            versions[b] = versions.get(b) or version
            results += found
    if device == "gpu" and present and all(r.verdict == NA for r in results if r.framework in present):
        results.append(failed("gpu", None, "no installed framework sees the GPU (driver, Container Toolkit?)"))
    return results, versions


def counts(results: list[Result]) -> dict[str, int]:
    """How many checks passed, failed and were n/a."""
    return {v: sum(r.verdict == v for r in results) for v in (PASS, FAIL, NA)}


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


def table(results: list[Result]) -> str:
    """The results as a plain-text table: check, framework, measured, reference, unit, ratio, verdict, reason."""
    rows = [("check", "framework", "measured", "reference", "unit", "ratio", "verdict", "reason")]
    rows += [(r.check, r.framework or "-", _num(r.measured), _num(r.reference), r.unit, _num(r.ratio), r.verdict,
              r.reason) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(7)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row[:7], widths, strict=True)) + "  " + row[7]
                     for row in rows)


def record(results: list[Result], versions: dict[str, str | None], device: str, gpu: dict[str, Any],
           elapsed_s: float) -> dict[str, Any]:
    """The JSON the self-test writes: when, where (host, device, GPU, Python, framework versions), every result and
    the counts."""
    import platform

    from bench.instruments.environment import utc_now

    return {"kind": "selftest", "utc": utc_now(), "host": platform.node(), "device": device,
            "gpu": {k: gpu.get(k) for k in ("available", "name", "uuid", "driver", "reason") if k in gpu},
            "stack": os.environ.get("BENCH_STACK"), "python": platform.python_version(), "frameworks": versions,
            "elapsed_s": elapsed_s, "counts": counts(results), "checks": [asdict(r) for r in results]}


def main(device: str, backends: list[str], out: Path | None) -> tuple[str, int]:
    """Run the self-test; (the table plus a summary line, exit code: 1 when any check failed, else 0). Writes the
    JSON to ``out`` (atomically) when given, also when SIGTERM or SIGINT cuts it short (``bench.core.interrupt``):
    then with the results so far and a failed ``all`` check saying so, and ``Interrupted`` goes on up."""
    from bench.core import interrupt
    from bench.core.atomic import write_json_atomic

    t0 = time.perf_counter()
    dev, gpu = resolve_device(device)
    results: list[Result] = []
    versions: dict[str, str | None] = {}
    try:
        selftest(dev, backends, results, versions)
    except interrupt.Interrupted as e:  # the running child is killed (subprocess.run); the checks that ended are kept
        results.append(failed("all", None, interrupt.reason(e.signum, f"after {len(results)} results")))
        if out is not None:
            with interrupt.shielded():
                write_json_atomic(out, record(results, versions, dev, gpu, time.perf_counter() - t0))
        raise
    n = counts(results)
    text = (f"{table(results)}\nselftest on {dev} ({gpu.get('name') or gpu.get('reason')}): {n[PASS]} pass, "
            f"{n[FAIL]} fail, {n[NA]} n/a in {time.perf_counter() - t0:.0f} s")
    if out is not None:
        write_json_atomic(out, record(results, versions, dev, gpu, time.perf_counter() - t0))
        text += f"\nwrote {out}"
    return text, 1 if n[FAIL] else 0
