"""Preflight: every problem of the host and the images as one line each, before an hour of builds.

Two parts:

- ``host`` (``python3 -m bench.doctor host``; ``make doctor``, and ``make bench-all`` before it builds): Docker,
  Compose, BuildKit, free disk for the images still to build and, on a GPU host, the NVIDIA driver against
  every image's CUDA, the NVIDIA Container Toolkit, other processes on the GPU (a benchmark on a shared GPU
  is invalid, as optimum-benchmark's device-isolation check enforces), persistence mode, MIG, ECC, power
  limit and clocks. Reads ``nvidia-smi`` and ``docker``; the standard library only, so that it runs on the
  host's own Python before anything is installed.
- ``image`` (``bench doctor`` inside each container, run by ``make doctor``): the framework sees the GPU and
  runs a matmul on it, and the GEMM throughput it achieves in bf16 and fp32/TF32 (the "measured peak", as
  mamf-finder measures it), kept beside the datasheet peak.

Each check is ``ok`` (✓), ``fail`` (✗: a GPU run would be wrong or would not start), ``warn`` (!: numbers
are valid but less comparable; the fix says how) or ``info`` (·). Results are printed as a table and saved
as JSON with the time and host, for provenance.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.stacks import DEFAULT_STACKS, STACKS

MARKS = {"ok": "✓", "fail": "✗", "warn": "!", "info": "·"}
#: Disk an image build needs (bytes), measured with `docker system df -v` and rounded up for the wheels
#: downloaded while building: a stack's own part (0.05-2.5 GB); its shared framework layer (``Stack.layer``:
#: TensorFlow + CUDA 12.9 ~6.7 GB and torch + CUDA 13.0 ~5.2 GB on gpu, 2.4 and 1.2 GB on cpu), once for all
#: the stacks naming it; a stack without one whole (pytorch-cu12: 8.4 GB); the collector 0.75 GB.
OWN_BYTES = {"gpu": 3 * 10**9, "cpu": 3 * 10**9}
LAYER_BYTES = {"gpu": 7 * 10**9, "cpu": 3 * 10**9}
IMAGE_BYTES = {"gpu": 9 * 10**9, "cpu": 4 * 10**9, "collector": 1 * 10**9}
#: TensorFlow 2.21 carries sm_90 only as CUDA 12.5 PTX: H100/H200 JIT it, which needs a R555+ driver.
TF_PTX_MIN_DRIVER = 555
NVSMI_FIELDS = ("name", "uuid", "driver_version", "persistence_mode", "mig.mode.current", "ecc.mode.current",
                "power.limit", "power.max_limit", "clocks.sm", "clocks.max.sm", "clocks.applications.graphics",
                "clocks.default_applications.graphics")

Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


@dataclass
class Check:
    """One line of the table: what was checked, its state (ok/fail/warn/info), the value seen, and the fix."""

    name: str
    state: str
    value: str
    fix: str = ""


def run_cmd(cmd: Sequence[str], timeout_s: float = 120.0) -> subprocess.CompletedProcess[str]:
    """Run ``cmd``; a missing program or a time-out is a failed process (exit 127 / 124), never an exception."""
    try:
        return subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout_s)
    except FileNotFoundError as e:
        return subprocess.CompletedProcess(list(cmd), 127, "", str(e))
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(list(cmd), 124, "", f"timed out after {timeout_s:g} s")


def _first_line(p: subprocess.CompletedProcess[str]) -> str:
    return ((p.stdout or p.stderr).strip().splitlines() or ["no output"])[0].strip()


def docker_checks(run: Runner, docker: str, compose: Sequence[str]) -> tuple[list[Check], str | None]:
    """Docker engine, Compose and BuildKit. Returns the checks and the engine version (None: no engine)."""
    out: list[Check] = []
    p = run([docker, "version", "--format", "{{.Server.Version}}"])
    version = p.stdout.strip() if p.returncode == 0 and p.stdout.strip() else None
    out.append(Check("Docker engine", "ok" if version else "fail", version or _first_line(p),
                     "" if version else "install Docker Engine and start it (dockerd); check `docker info`"))
    c = run([*compose, "version", "--short"])
    out.append(Check("Compose", "ok" if c.returncode == 0 else "fail",
                     c.stdout.strip() if c.returncode == 0 else _first_line(c),
                     "" if c.returncode == 0 else "install Compose v2 (docker compose) or docker-compose 1.29"))
    b = run([docker, "buildx", "version"])
    if b.returncode == 0:
        out.append(Check("BuildKit", "ok", _first_line(b)))
    elif version and int(version.split(".")[0]) < 23:
        out.append(Check("BuildKit", "ok", f"built in (Docker {version}, DOCKER_BUILDKIT=1)"))
    else:
        out.append(Check("BuildKit", "fail", "no buildx plugin", "install the docker-buildx plugin"))
    return out, version


def build_bytes(variant: str, missing: Sequence[str], built: set[str]) -> int:
    """Disk the ``variant`` images of the ``missing`` stacks need (bytes): each one's own part, plus each shared
    layer they name that no ``built`` stack's image holds yet, once; a stack without a layer its whole image."""
    have = {STACKS[s].layer for s in built}
    layers = {STACKS[s].layer for s in missing if STACKS[s].layer} - have
    return (sum(OWN_BYTES[variant] if STACKS[s].layer else IMAGE_BYTES[variant] for s in missing)
            + len(layers) * LAYER_BYTES[variant])


def disk_check(run: Runner, docker: str, variant: str, stacks: Sequence[str]) -> Check:
    """Free disk under Docker's root against the images of ``stacks`` (and the collector) not yet built."""
    root = run([docker, "info", "--format", "{{.DockerRootDir}}"]).stdout.strip() or "/var/lib/docker"
    path = Path(root)
    while not path.exists() and path != path.parent:
        path = path.parent
    free = shutil.disk_usage(path).free
    built = {s.id for s in STACKS.values() if variant in s.variants
             and run([docker, "image", "inspect", s.image(variant)]).returncode == 0}
    missing = [s for s in stacks if s not in built]
    need = build_bytes(variant, missing, built)
    if run([docker, "image", "inspect", "dlbench/collector:latest"]).returncode != 0:
        need += IMAGE_BYTES["collector"]
    value = f"{free / 1e9:.0f} GB free at {path}; {len(missing)} {variant} image(s) to build need ~{need / 1e9:.0f} GB"
    ok = free >= need
    return Check("Disk for images", "ok" if ok else "fail", value,
                 "" if ok else "free disk under Docker's root (docker system prune) or move it (data-root)")


def query_gpus(run: Runner) -> list[dict[str, str]] | None:
    """One dict per GPU (``NVSMI_FIELDS``) from ``nvidia-smi``; None when there is no driver or GPU."""
    p = run(["nvidia-smi", f"--query-gpu={','.join(NVSMI_FIELDS)}", "--format=csv,noheader,nounits"])
    if p.returncode != 0 or not p.stdout.strip():
        return None
    return [dict(zip(NVSMI_FIELDS, (v.strip() for v in line.split(",")), strict=False))
            for line in p.stdout.strip().splitlines()]


def driver_checks(gpu: dict[str, str], stacks: Sequence[str]) -> list[Check]:
    """The driver against each image's CUDA (``Stack.min_driver``), and TensorFlow's PTX on Hopper GPUs."""
    driver = gpu["driver_version"]
    major = int(driver.split(".")[0])
    out = []
    for sid in stacks:
        s = STACKS[sid]
        ok = major >= s.min_driver
        fix = "" if ok else f"update the NVIDIA driver to R{s.min_driver} or newer (README, 'Drivers')"
        # the same engine and framework on an older CUDA, when a stack offers one
        alt = [t.id for t in STACKS.values() if t.id != sid and (t.engine, t.backend) == (s.engine, s.backend)
               and "gpu" in t.variants and major >= t.min_driver]
        if alt:
            fix += f", or run {' / '.join(alt)} instead (STACKS=...)"
        out.append(Check(f"Driver for {sid}", "ok" if ok else "fail",
                         f"{driver}; the image bundles CUDA {s.gpu_cuda}: needs R{s.min_driver}+", fix))
        hopper = any(h in gpu["name"] for h in ("H100", "H200", "GH200"))
        if s.backend == "tensorflow" and hopper and major < TF_PTX_MIN_DRIVER:
            out.append(Check(f"TF PTX for {sid}", "fail", f"{gpu['name']}, driver {driver}",
                             f"TensorFlow 2.21 runs on Hopper through CUDA 12.5 PTX: needs R{TF_PTX_MIN_DRIVER}+"))
    return out


def gpu_state_checks(gpu: dict[str, str], run: Runner) -> list[Check]:
    """Other processes, persistence mode, MIG, ECC, power limit and clocks of one GPU."""
    out = []
    apps = run(["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader"])
    procs = [line.strip() for line in apps.stdout.strip().splitlines() if line.strip()]
    out.append(Check("GPU not shared", "fail" if procs else "ok", "; ".join(procs) or "no other process",
                     "stop the other processes: a benchmark on a shared GPU is invalid" if procs else ""))
    pm = gpu["persistence_mode"]
    out.append(Check("Persistence mode", "ok" if pm == "Enabled" else "warn", pm,
                     "" if pm == "Enabled" else "sudo nvidia-smi -pm 1 (the driver stays loaded between cells)"))
    mig = gpu["mig.mode.current"]
    out.append(Check("MIG", "warn" if mig == "Enabled" else "ok", mig,
                     "MIG on: NVML reads the parent GPU, so MFU and energy are not comparable; "
                     "sudo nvidia-smi -mig 0" if mig == "Enabled" else ""))
    out.append(Check("ECC", "info", gpu["ecc.mode.current"]))
    limit, top = gpu["power.limit"], gpu["power.max_limit"]
    capped = _num(limit) is not None and _num(top) is not None and _num(limit) < _num(top)
    out.append(Check("Power limit", "warn" if capped else "ok", f"{limit} W of {top} W max",
                     f"sudo nvidia-smi -pl {top} (a lower cap slows the GPU)" if capped else ""))
    app, default = gpu["clocks.applications.graphics"], gpu["clocks.default_applications.graphics"]
    locked = app not in ("", "[N/A]", default)
    out.append(Check("Clocks", "info", f"SM {gpu['clocks.sm']} MHz now, max {gpu['clocks.max.sm']} MHz; "
                     f"application clocks {app} MHz ({'set' if locked else 'default'} {default} MHz)",
                     "" if locked else "optional: lock clocks (sudo nvidia-smi -lgc) for steadier numbers"))
    return out


def toolkit_check(run: Runner, docker: str, image: str) -> Check:
    """The NVIDIA Container Toolkit: a tiny container that asks for a GPU and runs nvidia-smi in it."""
    p = run([docker, "run", "--rm", "--gpus", "all", image, "nvidia-smi", "-L"])
    ok = p.returncode == 0 and "GPU" in p.stdout
    return Check("NVIDIA Container Toolkit", "ok" if ok else "fail",
                 _first_line(p) if p.returncode == 0 else f"`docker run --gpus all` failed: {_first_line(p)}",
                 "" if ok else "install nvidia-container-toolkit, then nvidia-ctk runtime configure --runtime=docker "
                               "and restart Docker")


def host_checks(device: str, variant: str, stacks: Sequence[str], docker: str = "docker",
                compose: Sequence[str] = ("docker", "compose"), toolkit_image: str = "dlbench-base:bookworm",
                run: Runner = run_cmd) -> list[Check]:
    """Every host check for a run on ``device`` (cpu/gpu/auto) with ``variant`` images of ``stacks``."""
    checks, engine = docker_checks(run, docker, compose)
    if engine:
        checks.append(disk_check(run, docker, variant, stacks))
    gpus = query_gpus(run)
    if not gpus:
        state = "fail" if device == "gpu" else "info"
        checks.append(Check("NVIDIA GPU", state, "none (nvidia-smi finds no driver or GPU)",
                            "install the NVIDIA driver" if device == "gpu" else
                            "CPU images and smoke size will be used: not GPU benchmarks"))
        return checks
    gpu = gpus[0]
    checks.append(Check("NVIDIA GPU", "ok", f"{gpu['name']} ({gpu['uuid']})" + (
        f"; {len(gpus)} GPUs, the runs use GPU 0" if len(gpus) > 1 else "")))
    checks += driver_checks(gpu, stacks)
    if engine and variant == "gpu":
        checks.append(toolkit_check(run, docker, toolkit_image))
    checks += gpu_state_checks(gpu, run)
    return checks


#: The GEMM modes measured in each image: (name, dtype, TF32 allowed).
GEMM_MODES = (("bf16", "bfloat16", False), ("fp32", "float32", False), ("tf32", "float32", True))
GEMM_CODE = """\
from bench.engines import frameworks
frameworks.import_backend({backend!r})
frameworks.set_tf32({backend!r}, {mode!r})
print("TFLOPS", frameworks.gemm_tflops({backend!r}, {dtype!r}, n={n}, device={device!r}))
"""


#: GEMM size of the measured peak: large enough to saturate an A100/H100 (1.1 TFLOP per bf16 call).
GEMM_N = 8192


def measure_gemm(stack_id: str, dtype: str, tf32: bool, device: str = "gpu", n: int = GEMM_N,
                 timeout_s: float = 600.0) -> tuple[float | None, str]:
    """Achieved TFLOP/s of n x n GEMMs of ``stack_id``'s framework in a fresh process with the environment
    a cell with that TF32 setting gets (``runner.cell_env``); (None, why) when it fails."""
    from bench.runner import cell_env

    s = STACKS[stack_id]
    mode = "on" if tf32 else "off"  # the knob values (bench.knobs.TF32_MODES): TF32 GEMMs, or strict FP32
    code = GEMM_CODE.format(backend=s.backend, mode=mode, dtype=dtype, device=device, n=n)
    try:
        p = subprocess.run([sys.executable, "-c", code], env=cell_env(s, device, {"tf32": mode}),
                           capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout_s:g} s"
    for line in p.stdout.splitlines():
        if line.startswith("TFLOPS "):
            return float(line.split()[1]), ""
    return None, ((p.stderr.strip().splitlines() or ["no output"])[-1])[:300]


def image_checks(stack_id: str, device: str = "gpu",
                 measure: Callable[[str, str, bool], tuple[float | None, str]] = measure_gemm,
                 probe: Callable[[Any], list[str]] | None = None) -> tuple[list[Check], dict[str, Any]]:
    """Inside a stack's image: the framework sees the GPU and runs a matmul on it (``runner.probe_gpus``),
    then the measured GEMM peak per mode (``GEMM_MODES``). Returns the checks and ``measured_tflops``."""
    from bench.runner import probe_gpus

    s = STACKS[stack_id]
    try:
        gpus = (probe or probe_gpus)(s)
    except RuntimeError as e:
        return [Check(f"{stack_id}: GPU", "fail", str(e), "see README, 'Drivers'")], {}
    if not gpus:
        state = "fail" if device == "gpu" else "info"
        return [Check(f"{stack_id}: GPU", state, f"the {s.backend} framework sees no GPU",
                      "start the container with a GPU (compose.gpu.yaml, the NVIDIA Container Toolkit)"
                      if device == "gpu" else "CPU run: no GPU checks in the image")], {}
    checks = [Check(f"{stack_id}: GPU", "ok", f"{gpus[0]}: a matmul ran")]
    measured: dict[str, float | None] = {}
    for name, dtype, tf32 in GEMM_MODES:
        value, why = measure(stack_id, dtype, tf32)
        measured[name] = value
        checks.append(Check(f"{stack_id}: GEMM {name}", "ok" if value else "fail",
                            f"{value:.1f} TFLOP/s measured ({GEMM_N}^3)" if value else why))
    return checks, {"stack": stack_id, "gpu": gpus[0], "measured_tflops": measured}


def gemm_mode(precision: str, tf32: bool) -> str | None:
    """The ``GEMM_MODES`` name that matches a cell's math (None for float16, which is not measured)."""
    if precision == "bfloat16":
        return "bf16"
    if precision == "float32":
        return "tf32" if tf32 else "fp32"
    return None


def measured_peak(results_dir: Path, stack_id: str, variant: str, gpu_name: str | None, precision: str,
                  tf32: bool) -> tuple[float | None, str]:
    """The GEMM FLOP/s ``make doctor`` measured for this stack's image on this GPU model and math mode,
    from ``results_dir/doctor/<stack>-<variant>.json``; (None, why) when there is none or it was measured
    on another GPU model."""
    path = results_dir / "doctor" / f"{stack_id}-{variant}.json"
    mode = gemm_mode(precision, tf32)
    if mode is None:
        return None, f"no measured peak for {precision}"
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        return None, f"no measurement: run `make doctor` on this GPU first ({path.name})"
    if not gpu_name or saved.get("gpu") != gpu_name:
        return None, f"{path.name} was measured on {saved.get('gpu')!r}, not {gpu_name!r}"
    value = (saved.get("measured_tflops") or {}).get(mode)
    if not value:
        return None, f"{path.name} has no {mode} measurement"
    return value * 1e12, f"{path.name} ({saved.get('utc')}), {mode} GEMM {GEMM_N}^3"


def _num(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def table(checks: Sequence[Check]) -> str:
    """The checks as aligned text: check, mark, value, fix."""
    w = max((len(c.name) for c in checks), default=5)
    lines = [f"{'check':<{w}}     value  [fix]"]
    for c in checks:
        lines.append(f"{c.name:<{w}}  {MARKS[c.state]}  {c.value}" + (f"  [{c.fix}]" if c.fix else ""))
    return "\n".join(lines)


def save(path: Path, part: str, checks: Sequence[Check], extra: dict[str, Any] | None = None) -> None:
    """The checks as JSON with the time and host (written atomically, like every record)."""
    import datetime as dt

    from bench.record import write_json_atomic

    write_json_atomic(path, {"part": part, "utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                             "host": socket.gethostname(), "checks": [asdict(c) for c in checks], **(extra or {})})


def main(argv: Sequence[str] | None = None) -> int:
    """``python3 -m bench.doctor host``: prints the table, saves JSON; exit 1 when a check failed."""
    ap = argparse.ArgumentParser(prog="python3 -m bench.doctor", description=__doc__.splitlines()[0])
    ap.add_argument("part", choices=["host"])
    ap.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    ap.add_argument("--variant", choices=["cpu", "gpu"], default="cpu")
    ap.add_argument("--stacks", default=" ".join(DEFAULT_STACKS), help="space-separated stack ids")
    ap.add_argument("--docker", default=os.environ.get("DOCKER", "docker"))
    ap.add_argument("--compose", default=os.environ.get("COMPOSE", "docker compose"))
    ap.add_argument("--toolkit-image", default="dlbench-base:bookworm",
                    help="a small local image to run `nvidia-smi -L` in with --gpus all")
    ap.add_argument("--out", type=Path, default=None, help="also save the checks as JSON here")
    args = ap.parse_args(argv)
    stacks = args.stacks.split()
    unknown = [s for s in stacks if s not in STACKS]
    if unknown:
        print(f"doctor: error: unknown stack(s) {', '.join(unknown)}; known: {', '.join(STACKS)}", file=sys.stderr)
        return 2
    checks = host_checks(args.device, args.variant, stacks, args.docker, args.compose.split(), args.toolkit_image)
    print(table(checks))
    if args.out:
        save(args.out, "host", checks)
    failed = [c.name for c in checks if c.state == "fail"]
    if failed:
        print(f"doctor: {len(failed)} problem(s): {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
