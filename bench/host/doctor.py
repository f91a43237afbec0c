"""Preflight: every problem of the host and the images as one line each, before an hour of builds.

Two parts:

- ``host`` (``python3 -m bench.host doctor host``; ``make doctor``, and ``make bench-all`` before it builds): Docker,
  Compose, BuildKit, free disk for the images still to build and, on a GPU host, the NVIDIA driver against
  every image's CUDA, the NVIDIA Container Toolkit, other processes on GPU 0, the GPU the runs get (a
  benchmark on a shared GPU is invalid: another process's kernels take its time, memory and power), persistence
  mode, MIG (a container then sees no CUDA device), ECC, power limit and clocks. Reads ``nvidia-smi`` and
  ``docker``; the standard library only, so that it runs on the host's own Python before anything is
  installed. Whatever nvidia-smi answers, each problem is one line, never a traceback.
- ``image`` (``bench doctor`` inside each container, run by ``make doctor``): the framework sees the GPU and
  runs a matmul on it, and the GEMM throughput it achieves in bf16 and fp32/TF32 (the "measured peak", as
  mamf-finder measures it), kept beside the datasheet peak and keyed by the GPU's NVML name and UUID, which
  a record's ``env.gpu`` is matched against (``bench.run.probe``, ``bench.run.peaks``).

Each check is ``ok`` (✓), ``fail`` (✗: a GPU run would be wrong or would not start), ``warn`` (!: numbers
are valid but less comparable; the fix says how) or ``info`` (·). Results are printed as a table and saved
as JSON with the time and host, for provenance.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import get_args

from bench.core.atomic import unwritable
from bench.core.checks import Check, save, table
from bench.core.stacks import DEFAULT_STACKS, STACKS
from bench.core.words import Device

#: Disk an image build needs (bytes), measured with `docker system df -v` and rounded up for the wheels
#: downloaded while building: a stack's own part (0.05-2.5 GB); its shared framework layer (``Stack.layer``:
#: TensorFlow + CUDA 12.9 ~6.7 GB and torch + CUDA 13.0 ~5.2 GB on gpu, 2.4 and 1.2 GB on cpu), once for all
#: the stacks naming it; a stack without one whole (pytorch-cu12: 8.4 GB); the collector 0.75 GB. A sublayer
#: (``Stack.sublayer``: jax with its CUDA plugins, <1 GB) is counted as part of each member's own part.
OWN_BYTES = {"gpu": 3 * 10**9, "cpu": 3 * 10**9}
LAYER_BYTES = {"gpu": 7 * 10**9, "cpu": 3 * 10**9}
IMAGE_BYTES = {"gpu": 9 * 10**9, "cpu": 4 * 10**9, "collector": 1 * 10**9}
#: What the host part asks ``nvidia-smi --query-gpu``: the identity the driver checks need (``ID_FIELDS``),
#: then the state checked beside it (``STATE_FIELDS``).
ID_FIELDS = ("name", "uuid", "driver_version")
STATE_FIELDS = ("persistence_mode", "mig.mode.current", "ecc.mode.current", "power.limit", "power.max_limit",
                "clocks.sm", "clocks.max.sm", "clocks.applications.graphics", "clocks.default_applications.graphics")
NVSMI_FIELDS = ID_FIELDS + STATE_FIELDS

Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


def run_cmd(cmd: Sequence[str], timeout_s: float = 120.0) -> subprocess.CompletedProcess[str]:
    """Run ``cmd``; a missing program, one that cannot be run (not executable, a folder, an empty name: ``DOCKER=``)
    or a time-out is a failed process (exit 127 / 126 / 124, as a shell gives them), never an exception."""
    try:
        return subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout_s)
    except FileNotFoundError as e:
        return subprocess.CompletedProcess(list(cmd), 127, "", str(e))
    except OSError as e:
        return subprocess.CompletedProcess(list(cmd), 126, "", str(e))
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
    out.append(buildkit_check(run, docker))
    return out, version


def buildkit_check(run: Runner, docker: str) -> Check:
    """Whether ``docker build`` (make's, under ``DOCKER_BUILDKIT=1``) can build with BuildKit: through the buildx
    plugin, or, with no plugin, a client older than Docker 23, whose BuildKit is built in. The client decides, not
    the engine: a client of 23 or newer hands BuildKit builds to buildx and fails without it, whatever engine it
    talks to (a Docker 28 client beside a Debian 20.10 engine passed this check on the engine's version, then
    ``make build`` failed)."""
    b = run([docker, "buildx", "version"])
    if b.returncode == 0:
        return Check("BuildKit", "ok", _first_line(b))
    v = run([docker, "--version"])
    if "podman" in (v.stdout or "").lower():  # Podman's docker shim builds with buildah, which reads no DOCKER_BUILDKIT
        return Check("BuildKit", "ok", f"{_first_line(v)}: builds with buildah (DOCKER_BUILDKIT is not read)")
    # the client prints its version before failing on an engine it cannot reach (exit 1): the version still counts
    printed = (run([docker, "version", "--format", "{{.Client.Version}}"]).stdout or "").split()
    client = printed[0] if printed else ""
    major = client.split(".")[0]
    if major.isdigit() and int(major) < 23:
        return Check("BuildKit", "ok", f"built in (Docker client {client}, DOCKER_BUILDKIT=1)")
    return Check("BuildKit", "fail", f"no buildx plugin (Docker client {client or 'version unknown'})",
                 "install the docker-buildx plugin, or name a client older than 23 (make DOCKER=/path/to/docker)")


def build_bytes(flavor: str, missing: Sequence[str], built: set[str]) -> int:
    """Disk the ``flavor`` images of the ``missing`` stacks need (bytes): each one's own part, plus each shared
    layer they name that no ``built`` stack's image holds yet, once; a stack without a layer its whole image."""
    have = {STACKS[s].layer for s in built}
    layers = {STACKS[s].layer for s in missing if STACKS[s].layer} - have
    return (sum(OWN_BYTES[flavor] if STACKS[s].layer else IMAGE_BYTES[flavor] for s in missing)
            + len(layers) * LAYER_BYTES[flavor])


def disk_check(run: Runner, docker: str, flavor: str, stacks: Sequence[str]) -> Check:
    """Free disk under Docker's root against the images of ``stacks`` (and the collector) not yet built."""
    root = run([docker, "info", "--format", "{{.DockerRootDir}}"]).stdout.strip() or "/var/lib/docker"
    path = Path(root)
    while not path.exists() and path != path.parent:
        path = path.parent
    free = shutil.disk_usage(path).free
    built = {s.id for s in STACKS.values() if flavor in s.flavors
             and run([docker, "image", "inspect", s.image(flavor)]).returncode == 0}
    missing = [s for s in stacks if s not in built]
    need = build_bytes(flavor, missing, built)
    if run([docker, "image", "inspect", "dlbench/collector:latest"]).returncode != 0:
        need += IMAGE_BYTES["collector"]
    value = f"{free / 1e9:.0f} GB free at {path}; {len(missing)} {flavor} image(s) to build need ~{need / 1e9:.0f} GB"
    ok = free >= need
    return Check("Disk for images", "ok" if ok else "fail", value,
                 "" if ok else "free disk under Docker's root (docker system prune) or move it (data-root)")


def known(value: str | None) -> str | None:
    """A field as nvidia-smi answered it, or None when it did not: left out, empty, or a placeholder
    (``[N/A]``, ``[Not Supported]``, ``[Unknown Error]``, ``[Insufficient Permissions]``, ...)."""
    if value is None:
        return None
    value = value.strip()
    if not value or value == "N/A" or (value.startswith("[") and value.endswith("]")):
        return None
    return value


@dataclass
class GpuQuery:
    """What ``nvidia-smi --query-gpu`` answered: one dict per GPU (field -> text, in index order), or None;
    ``problem`` says what went wrong (with ``gpus``: only ``STATE_FIELDS`` are missing); ``garbled``: it
    exited 0 but its answer was not one line of every field per GPU (a GPU is there, its answer is not)."""

    gpus: list[dict[str, str]] | None
    problem: str = ""
    garbled: bool = False


def _query(run: Runner, fields: Sequence[str]) -> GpuQuery:
    """One ``--query-gpu`` call for ``fields``."""
    p = run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"])
    lines = [line.strip() for line in p.stdout.strip().splitlines() if line.strip()]
    if p.returncode != 0 or not lines:
        return GpuQuery(None, _first_line(p))
    rows = [[v.strip() for v in line.split(",")] for line in lines]
    for line, row in zip(lines, rows, strict=True):
        if len(row) != len(fields):  # a field missing shifts the others: no value of the line can be trusted
            return GpuQuery(None, f"nvidia-smi answered {line!r} ({len(row)} of {len(fields)} fields)", True)
    return GpuQuery([dict(zip(fields, row, strict=True)) for row in rows])


def query_gpus(run: Runner) -> GpuQuery:
    """The GPUs as ``nvidia-smi`` sees them (``NVSMI_FIELDS``). When the full query fails (an old driver
    that lacks a field, an error text), the identity fields are asked alone, so that the driver checks still
    run and only the state checks are lost (``problem``); ``gpus`` is None when that fails too."""
    full = _query(run, NVSMI_FIELDS)
    if full.gpus is not None:
        return full
    ids = _query(run, ID_FIELDS)
    if ids.gpus is not None:
        return GpuQuery(ids.gpus, full.problem)
    return GpuQuery(None, ids.problem or full.problem, ids.garbled or full.garbled)


def identity_check(gpu: dict[str, str], count: int) -> Check:
    """The GPU the runs use (GPU 0): its name and UUID; ✗ when nvidia-smi did not report its name, UUID or
    driver version."""
    missing = [f"{f} {gpu.get(f, 'absent')!r}" for f in ID_FIELDS if known(gpu.get(f)) is None]
    if missing:
        return Check("NVIDIA GPU", "fail", f"nvidia-smi did not report the GPU's {', '.join(missing)}",
                     "check the driver (nvidia-smi -q shows what it reports; reinstall or update it)")
    return Check("NVIDIA GPU", "ok", f"{gpu['name']} ({gpu['uuid']})" + (
        f"; {count} GPUs, the runs use GPU 0" if count > 1 else ""))


def driver_checks(gpu: dict[str, str], stacks: Sequence[str]) -> list[Check]:
    """The driver against each image's CUDA (``Stack.min_driver``); none when nvidia-smi gave no driver version
    (``identity_check`` fails then). TensorFlow needs nothing more on H100/H200: its wheel holds sm_90 machine
    code (``bench.core.stacks.TF_FATBIN_ARCHS``), so R525+ runs it there without a PTX JIT."""
    driver = known(gpu.get("driver_version")) or ""
    if not driver.split(".")[0].isdigit():
        return []
    major = int(driver.split(".")[0])
    out = []
    for sid in stacks:
        s = STACKS[sid]
        ok = major >= s.min_driver
        fix = "" if ok else f"update the NVIDIA driver to R{s.min_driver} or newer (README, 'Drivers')"
        # the same engine and framework on an older CUDA, when a stack offers one
        alt = [t.id for t in STACKS.values() if t.id != sid and (t.family, t.backend) == (s.family, s.backend)
               and "gpu" in t.flavors and major >= t.min_driver]
        if alt:
            fix += f", or run {' / '.join(alt)} instead (STACKS=...)"
        out.append(Check(f"Driver for {sid}", "ok" if ok else "fail",
                         f"{driver}; the image bundles CUDA {s.gpu_cuda}: needs R{s.min_driver}+", fix))
    return out


def processes_check(run: Runner) -> Check:
    """Other processes on GPU 0, the GPU the runs use (compose's ``count: 1`` is ``NVIDIA_VISIBLE_DEVICES=0``):
    ✗ when there are any; ! when nvidia-smi cannot list them. Processes on other GPUs do not count."""
    p = run(["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader", "-i", "0"])
    lines = [line.strip() for line in p.stdout.strip().splitlines() if line.strip()]
    odd = [line for line in lines if len(line.split(",")) != 3]
    if p.returncode != 0 or odd:
        return Check("GPU not shared", "warn", f"could not list the processes on GPU 0: {(odd or [_first_line(p)])[0]}",
                     "check by hand (nvidia-smi): a benchmark on a shared GPU is invalid")
    return Check("GPU not shared", "fail" if lines else "ok", "; ".join(lines) or "no other process on GPU 0",
                 "stop the other processes: a benchmark on a shared GPU is invalid" if lines else "")


def mig_check(gpu: dict[str, str], device: str) -> Check:
    """MIG mode of GPU 0. A GPU run fails on it: compose's ``count: 1`` makes Docker pass
    ``NVIDIA_VISIBLE_DEVICES=0`` (moby daemon/nvidia_linux.go, countToDevices), and the Container Toolkit
    then gives the container the parent GPU only, without any MIG device's access capability (MIG devices
    are selected by ``all``, ``MIG-<UUID>`` or ``<gpu>:<mig>``: libnvidia-container src/cli/common.c,
    select_devices), so CUDA in the container finds no device to run on."""
    mig = gpu.get("mig.mode.current", "")
    if mig != "Enabled":
        return Check("MIG", "ok", mig if known(mig) else f"{mig} (no MIG on this GPU)")
    why = ("MIG on: a container given GPU 0 by index sees no CUDA device; and NVML reads the parent GPU, so MFU "
           "and energy would not be comparable")
    return Check("MIG", "fail" if device != "cpu" else "warn", "Enabled",
                 f"{why}: sudo nvidia-smi -i 0 -mig 0 (then reset the GPU or reboot), or use a GPU without MIG")


def gpu_state_checks(gpu: dict[str, str], run: Runner, device: str = "gpu") -> list[Check]:
    """Other processes, persistence mode, MIG, ECC, power limit and clocks of GPU 0; a field nvidia-smi did
    not report is a ! (or · where it is information only) with what it said."""
    out = [processes_check(run)]
    pm = gpu["persistence_mode"]
    out.append(Check("Persistence mode", "ok" if pm == "Enabled" else "warn", pm,
                     "" if pm == "Enabled" else "sudo nvidia-smi -pm 1 (the driver stays loaded between cells)"))
    out.append(mig_check(gpu, device))
    out.append(Check("ECC", "info", gpu["ecc.mode.current"]))
    limit, top = gpu["power.limit"], gpu["power.max_limit"]
    limit_w, top_w = _num(limit), _num(top)
    if limit_w is None or top_w is None:
        out.append(Check("Power limit", "warn", f"{limit} W of {top} W max: not reported by nvidia-smi",
                         "nvidia-smi -q -d POWER says why; a capped GPU runs slower"))
    else:
        capped = limit_w < top_w
        out.append(Check("Power limit", "warn" if capped else "ok", f"{limit} W of {top} W max",
                         f"sudo nvidia-smi -pl {top} (a lower cap slows the GPU)" if capped else ""))
    out.append(clocks_check(gpu))
    return out


def clocks_check(gpu: dict[str, str]) -> Check:
    """SM clock now and its max, and the application clocks against their default (MHz), as information.

    Locked clocks (``nvidia-smi -lgc``) are not readable: ``--help-query-gpu`` lists no field for them (its clock
    fields are ``clocks.current/max.*`` and ``clocks.applications/default_applications.*``, which ``-ac``/``-rac``
    set), and NVML only sets and resets them (nvidia-ml-py 13.615: ``nvmlDeviceSetGpuLockedClocks``,
    ``nvmlDeviceResetGpuLockedClocks``, no getter). So the line says it cannot see a lock and its advice says the
    line stays the same after one, rather than repeat itself as if the lock had been ignored."""
    app, default = gpu["clocks.applications.graphics"], gpu["clocks.default_applications.graphics"]
    app_set = known(app) is not None and app != default
    if known(app) is None:
        apps = f"application clocks not reported ({app})"
    elif app_set:
        apps = f"application clocks set to {app} MHz (-ac; default {default} MHz)"
    else:
        apps = f"application clocks {app} MHz (the default)"
    return Check("Clocks", "info", f"SM {gpu['clocks.sm']} MHz now, max {gpu['clocks.max.sm']} MHz; {apps}; "
                 "locked clocks (-lgc): not reported by nvidia-smi --query-gpu",
                 "" if app_set else "optional, for steadier numbers: sudo nvidia-smi -lgc MIN,MAX (MHz); no query "
                 "field names a lock, so this line reads the same after it")


def toolkit_check(run: Runner, docker: str, image: str) -> Check:
    """The NVIDIA Container Toolkit: a tiny container that asks for a GPU and runs nvidia-smi in it."""
    p = run([docker, "run", "--rm", "--gpus", "all", image, "nvidia-smi", "-L"])
    ok = p.returncode == 0 and "GPU" in p.stdout
    return Check("NVIDIA Container Toolkit", "ok" if ok else "fail",
                 _first_line(p) if p.returncode == 0 else f"`docker run --gpus all` failed: {_first_line(p)}",
                 "" if ok else "install nvidia-container-toolkit, then nvidia-ctk runtime configure --runtime=docker "
                               "and restart Docker")


def host_checks(device: str, flavor: str, stacks: Sequence[str], docker: str = "docker",
                compose: Sequence[str] = ("docker", "compose"), toolkit_image: str = "dlbench-base:bookworm",
                run: Runner = run_cmd) -> list[Check]:
    """Every host check for a run on ``device`` (cpu/gpu/auto) with ``flavor`` images of ``stacks``."""
    checks, engine = docker_checks(run, docker, compose)
    if engine:
        checks.append(disk_check(run, docker, flavor, stacks))
    query = query_gpus(run)
    if not query.gpus and query.garbled and device != "cpu":
        checks.append(Check("NVIDIA GPU", "fail", f"unreadable: {query.problem}",
                            "check the driver and the GPU (nvidia-smi -q; a GPU that fell off the bus needs a reset)"))
        return checks
    if not query.gpus:
        state = "fail" if device == "gpu" else "info"
        checks.append(Check("NVIDIA GPU", state, f"none (nvidia-smi finds no driver or GPU: {query.problem})",
                            "install the NVIDIA driver" if device == "gpu" else
                            "CPU images and smoke size will be used: not GPU benchmarks"))
        return checks
    gpu = query.gpus[0]  # nvidia-smi lists the GPUs in index order
    checks.append(identity_check(gpu, len(query.gpus)))
    checks += driver_checks(gpu, stacks)
    if engine and flavor == "gpu":
        checks.append(toolkit_check(run, docker, toolkit_image))
    if query.problem:
        checks.append(Check("GPU state", "warn", f"not checked (persistence, MIG, ECC, power, clocks): "
                            f"{query.problem}", "nvidia-smi -q shows them; an older driver may lack a field"))
        checks.append(processes_check(run))
    else:
        checks += gpu_state_checks(gpu, run, device)
    return checks


def _num(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def compose_env_check(env_file: Path = Path(".env")) -> Check | None:
    """The ``.env`` that ``docker compose run <service>`` reads (written by ``make configure``): a warning when it was
    written before the image flavor's variable was ``BENCH_FLAVOR`` (compose would then use the cpu images on a GPU
    host); None when there is no ``.env`` or it names the flavor."""
    try:
        keys = {line.split("=", 1)[0].strip() for line in env_file.read_text().splitlines() if "=" in line}
    except OSError:
        return None
    if "BENCH_FLAVOR" in keys or "BENCH_VARIANT" not in keys:
        return None
    return Check("Compose .env", "warn", f"{env_file} sets BENCH_VARIANT, not BENCH_FLAVOR: docker compose run would "
                 "use the cpu images", "make configure (make bench-all rewrites it)")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``doctor host`` (``python3 -m bench.host doctor host``)."""
    ap = sub.add_parser("doctor", help="the host preflight: Docker, disk, driver vs images, GPU not shared (exit 1 "
                        "on a problem)", description=__doc__.splitlines()[0])
    ap.add_argument("part", choices=["host"])
    ap.add_argument("--device", choices=get_args(Device), default="auto")
    ap.add_argument("--flavor", choices=["cpu", "gpu"], default="cpu")
    ap.add_argument("--stacks", default=" ".join(DEFAULT_STACKS), help="space-separated stack ids")
    ap.add_argument("--docker", default=os.environ.get("DOCKER", "docker"))
    ap.add_argument("--compose", default=os.environ.get("COMPOSE", "docker compose"))
    ap.add_argument("--toolkit-image", default="dlbench-base:bookworm",
                    help="a small local image to run `nvidia-smi -L` in with --gpus all")
    ap.add_argument("--out", type=Path, default=None, help="also save the checks as JSON here")
    ap.set_defaults(main=main)


def main(args: argparse.Namespace) -> int:
    """``doctor host``: prints the table, saves JSON; exit 1 when a check failed, 2 for an unknown stack or an
    ``--out`` whose folder cannot be made."""
    stacks = args.stacks.split()
    unknown = [s for s in stacks if s not in STACKS]
    if unknown:
        print(f"doctor: error: unknown stack(s) {', '.join(unknown)}; known: {', '.join(STACKS)}", file=sys.stderr)
        return 2
    # before the checks, so that a results folder it cannot write costs no check and no traceback
    why = unwritable(args.out.parent) if args.out else None
    if why:
        print(f"doctor: error: cannot write --out {args.out}: {why}", file=sys.stderr)
        return 2
    checks = host_checks(args.device, args.flavor, stacks, args.docker, args.compose.split(), args.toolkit_image)
    checks += [c for c in (compose_env_check(),) if c]
    print(table(checks))
    if args.out:
        save(args.out, "host", checks)
    failed = [c.name for c in checks if c.state == "fail"]
    if failed:
        print(f"doctor: {len(failed)} problem(s): {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0
