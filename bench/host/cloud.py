"""Cloud and Kubernetes runs: the ``sky jobs launch`` commands of ``make cloud``, the Kubernetes Job of one
comparison, and ``make cloud-collect``.

The unit of fan-out keeps comparisons honest: one job runs every stack of a comparison on one GPU (in
rounds, ``bench.core.rounds``), and jobs split by GPU type (or suite), never by stack: two stacks measured
on two machines would compare the machines. SkyPilot (``cloud/dlbench.sky.yaml``) provisions a VM on any
cloud it is configured for and runs ``cloud/setup.sh`` (Docker and the NVIDIA Container Toolkit where
missing) and ``cloud/run.sh`` (``make doctor``, ``make bench-all``) on the VM itself, so its containers get
compose's environment; managed jobs resume after a spot preemption, and the runner's resume skips the cells
already in the results bucket. Kubernetes is ``k8s_job``, not SkyPilot (a SkyPilot cluster there is a pod,
and nested containers get no GPU): one ``batch/v1`` Job per comparison, the stacks one after another as init
containers of one pod holding one GPU, with the environment and volumes compose gives every bench container
(``bench.core.stacks.CONTAINER_ENV``, ``CONTAINER_VOLUMES``), then the collector writes the CSV and report on the
volume.

``python3 -m bench.host cloud launch|k8s|collect ...`` (the Makefile's ``cloud``, ``cloud-k8s`` and
``cloud-collect`` targets).
"""

from __future__ import annotations

import argparse
import datetime as dt
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.core import atomic, price, request, rounds
from bench.core.stacks import CONTAINER_ENV, CONTAINER_VOLUMES, DEFAULT_STACKS, STACKS
from bench.host import imagetag, launch
from bench.host.request import split_pairs

TASK_YAML = "cloud/dlbench.sky.yaml"
#: How its errors name it.
PROG = "python3 -m bench.host cloud"


def launch_commands(suite: str, gpus: Sequence[str], stacks: Sequence[str], size: str, repeats: int,
                    bucket: str, run_name: str, spot: bool = False, seed: int = rounds.DEFAULT_SEED,
                    price_per_hour: float | None = None, registry: str = "",
                    inputs: dict[str, str] | None = None) -> list[list[str]]:
    """One ``sky jobs launch`` per GPU type, each running every stack of the comparison on one GPU.

    ``inputs``: the ``bench run`` inputs the user set, as Makefile variables (``bench.core.request.make_vars``,
    e.g. ``{"SET": "tf32=off"}``); each goes to the task as an env, and ``PASS_VARS`` names them for
    ``cloud/run.sh`` to hand to ``make bench-all``.

    Raises:
        ValueError: no GPU, an unknown stack, repeats < 1, an empty bucket/run name, an input that is not a
            pass-through one, or a comparison the VM's ``make bench-all`` would refuse (``_check_comparison``).
    """
    inputs = {k: v for k, v in (inputs or {}).items() if v}
    request.run_args(inputs, "gpu", suite)  # a variable that is not a pass-through input raises ValueError
    _check_comparison(suite, stacks, size, repeats, seed)
    if not gpus:
        raise ValueError("name at least one GPU type (GPUS=\"A100 H100\")")
    if not bucket or not run_name:
        raise ValueError("BUCKET and RUN_NAME must be set")
    request.check_run_name(run_name, "CLOUD_RUN")  # the VM's results folder: <bucket>/<run name>/<gpu>
    out = []
    for gpu in gpus:
        accel = gpu if ":" in gpu else f"{gpu}:1"
        envs = {"SUITE": suite, "STACKS": " ".join(stacks), "SIZE": size, "REPEATS": str(repeats),
                "SEED": str(seed), "RUN_NAME": run_name, "BUCKET": bucket,
                "PRICE_PER_HOUR": "" if price_per_hour is None else repr(float(price_per_hour)), "REGISTRY": registry,
                **inputs}
        if inputs:
            envs["PASS_VARS"] = " ".join(inputs)
        cmd = ["sky", "jobs", "launch", TASK_YAML, "--gpus", accel, "-n",
               f"dlbench-{suite}-{accel.split(':')[0].lower()}", "-y"]
        if spot:
            cmd.append("--use-spot")
        for k, v in envs.items():
            cmd += ["--env", f"{k}={v}"]
        out.append(cmd)
    return out


def _check_comparison(suite: str, stacks: Sequence[str], size: str, repeats: int, seed: int) -> None:
    """Raise ValueError for what the VM's ``make bench-all`` (or the Job's ``bench run``) would refuse only once a
    machine is paid for: the suite and size as ``make check-request`` checks them, a stack named twice."""
    request.check_loop({"SUITE": suite, "SIZE": size, "REPEATS": str(repeats), "SEED": str(seed)})
    launch.plan(stacks, repeats, seed)  # unknown stacks among what it refuses


def k8s_env(stack: str) -> list[dict[str, str]]:
    """The environment of ``stack``'s container in the Job: compose's (``CONTAINER_ENV``; a variable compose takes
    from the host gets its ``job_value``), then the stack's own (``Stack.env``, which its image sets too)."""
    env = {v.name: v.job for v in CONTAINER_ENV} | STACKS[stack].env
    return [{"name": k, "value": v} for k, v in env.items()]


def k8s_volumes(claim: str, shm_gib: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(pod volumes, bench container mounts): ``CONTAINER_VOLUMES`` (the results folder on the claim, the others
    memory of the pod: every stack of the comparison runs in it, so they share them as compose's named volumes
    are shared), and a memory-backed ``/dev/shm`` of ``shm_gib`` GiB where compose shares the host's IPC."""
    volumes, mounts = [], []
    for v in CONTAINER_VOLUMES:
        source = {"persistentVolumeClaim": {"claimName": claim}} if v.host_var else {"emptyDir": {}}
        volumes.append({"name": v.name, **source})
        mounts.append({"name": v.name, "mountPath": v.path})
    volumes.append({"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{shm_gib}Gi"}})
    mounts.append({"name": "shm", "mountPath": "/dev/shm"})
    return volumes, mounts


#: An init container's command: run its ``args`` and go on when they exit 1. ``bench run`` exits 1 when a cell did
#: not succeed (its record says why) and ``bench doctor`` when a check failed; under ``restartPolicy: Never`` a
#: failing init container fails the pod, so the later stacks, rounds and the collector would never run (every
#: retry re-running the same failing cell). A bad invocation (exit 2) or a crash still fails the pod. The shell is
#: the container's first process, which the kubelet sends SIGTERM on a pod's deletion or deadline: it passes it on
#: to ``bench`` (which records the cell as interrupted and exits 143) and waits for it, where a plain ``sh -c``
#: would leave bench to the SIGKILL after the grace period.
KEEP_GOING = ["sh", "-c", 'trap \'kill -TERM "$child"; stopped=1\' TERM; "$0" "$@" & child=$!; wait "$child"; '
              'status=$?; if [ -n "$stopped" ]; then wait "$child"; status=$?; fi; '
              'if [ "$status" -le 1 ]; then exit 0; fi; exit "$status"']


def read_digests(path: Path | None) -> dict[str, str]:
    """The registry digests ``make push`` listed in ``path`` (``results/images/<flavor>.txt``: one line per image,
    ``<registry>/<image>:<tag> <registry>/<image>@sha256:<hex>``), as {tag reference: digest reference}; {} when
    ``path`` is None. A line of the older form (the digest alone) names no tag, so it is left out: its digest may
    belong to an image whose inputs have since changed.

    Raises:
        ValueError: ``path`` named but not a file this process can read (the user asked for those digests: a Job
            pulling by tag instead would be another run than the one asked for).
    """
    if path is None:
        return {}
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        why = getattr(e, "strerror", None) or str(e)
        raise ValueError(f"--digests {path}: cannot read it: {why} (make push REGISTRY=... FLAVOR=gpu writes "
                         "results/images/gpu.txt)") from None
    pairs = (line.split() for line in text.splitlines())
    return {p[0]: p[1] for p in pairs if len(p) == 2 and "@sha256:" in p[1]}


def image_ref(ref: str, digests: Mapping[str, str]) -> tuple[str, list[dict[str, str]]]:
    """(the image a container of the Job pulls, its extra environment) for the tag reference ``ref``: its digest
    reference when ``digests`` (``read_digests``) has it, with ``BENCH_IMAGE_DIGEST`` set to it, so that a record
    names the image it ran in (``env.image_digest``) as ``make bench-all`` passes it; else ``ref`` as it is, which
    the node pulls by tag, and the records' ``env.image_digest`` is null (the pod cannot learn its image's digest)."""
    digest = digests.get(ref)
    return (digest, [{"name": "BENCH_IMAGE_DIGEST", "value": digest}]) if digest else (ref, [])


def k8s_job(suite: str, stacks: Sequence[str], registry: str, gpu_product: str, repeats: int | None = None,
            size: str | None = None, seed: int = rounds.DEFAULT_SEED, claim: str = "dlbench-results",
            name: str | None = None, shm_gib: int = 16, inputs: dict[str, str] | None = None,
            digests: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A ``batch/v1`` Job running one comparison on one GPU of a node labelled ``nvidia.com/gpu.product``
    = ``gpu_product``: per round, every stack in that round's shuffled order as an init container (init
    containers run one at a time, so the stacks never share the GPU), then the collector.

    Images: ``<registry>/<stack>:gpu-<hash>`` and ``<registry>/collector:latest-<hash>``, tagged by their
    build inputs as ``make push REGISTRY=... FLAVOR=gpu`` pushed them (``bench.host.imagetag``).
    Every bench container gets compose's environment and folders (``k8s_env``, ``k8s_volumes``): results on
    the PersistentVolumeClaim ``claim`` at /results, datasets and the CUDA JIT cache in the pod's volumes,
    and a memory-backed /dev/shm of ``shm_gib`` GiB (PyTorch's DataLoader workers and XLA use it).
    ``repeats`` and ``size`` None: the request's GPU defaults (``bench.core.request.default``); ``size`` auto: a
    GPU's (``bench.core.request.AUTO_SIZE``), also in the run's name. ``inputs``: the
    other ``bench run`` inputs the user set, as Makefile variables (``bench.core.request.run_args``). ``digests``:
    the pushed images' digests (``read_digests``): an image found there is pulled by its digest and its records name
    it (``image_ref``); the others by tag.

    Raises:
        ValueError: an unknown stack, repeats < 1, an empty registry or GPU product, an input that is not a
            pass-through one, or a comparison ``bench run`` would refuse (``_check_comparison``).
    """
    repeats = request.default("repeats", "gpu") if repeats is None else repeats
    size = size or request.default("size", "gpu")
    extra = request.run_args({k: v for k, v in (inputs or {}).items() if v}, "gpu", suite)
    _check_comparison(suite, stacks, size, repeats, seed)
    # auto as the Job's GPU resolves it: the run's folder and CSV are named after the size its cells run at
    size = request.AUTO_SIZE["gpu"] if size == "auto" else size
    if not registry or not gpu_product:
        raise ValueError("set REGISTRY (where the images were pushed) and GPU_PRODUCT (the node label value)")
    run = f"{suite}-{size}-gpu"
    volumes, mounts = k8s_volumes(claim, shm_gib)
    results = [m for m in mounts if m["mountPath"] == "/results"]
    gpu = {"limits": {"nvidia.com/gpu": 1}}

    def container(step: launch.Step, round_args: list[str]) -> dict[str, Any]:
        args = ["bench", "run", "--stack", step.stack, "--suite", suite, "--size", size, "--device", "gpu",
                "--out", f"/results/runs/{run}", *round_args, *extra]
        image, pinned = image_ref(f"{registry}/{step.stack}:{imagetag.tag(step.stack, 'gpu')}", digests or {})
        return {"name": f"r{step.round}-{step.stack}", "image": image, "command": KEEP_GOING, "args": args,
                "env": k8s_env(step.stack) + pinned, "resources": gpu, "volumeMounts": mounts}

    init: list[dict[str, Any]] = []
    launch.KubernetesJob(container, init).launch(launch.plan(stacks, repeats, seed), stacks)
    collect = collector_container(registry, run, results, digests or {})
    return job_manifest(name or f"dlbench-{suite}", gpu_product, init, [collect], volumes)


def unpinned(job: dict[str, Any]) -> list[str]:
    """The images of ``job`` (``k8s_job``) that it pulls by tag, not by digest, each once, in order."""
    pod = job["spec"]["template"]["spec"]
    refs = [c["image"] for c in pod["initContainers"] + pod["containers"]]
    return list(dict.fromkeys(r for r in refs if "@sha256:" not in r))


def collector_container(registry: str, run: str, mounts: list[dict[str, Any]],
                        digests: Mapping[str, str]) -> dict[str, Any]:
    """The Job's last container: the collector image (by digest where ``digests`` has it, ``image_ref``) merging
    run ``run``'s records on /results into ``/results/<run>.csv`` and writing the report there (``mounts``: the
    /results volume mount)."""
    image, _ = image_ref(f"{registry}/collector:{imagetag.tag('collector', 'latest')}", digests)
    return {"name": "collect", "image": image,
            "command": ["sh", "-c", f"bench collect /results/runs/{run} -o /results/{run}.csv && "
                                    "bench report /results -o /results"],
            "volumeMounts": mounts}


def job_manifest(name: str, gpu_product: str, init: list[dict[str, Any]], containers: list[dict[str, Any]],
                 volumes: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``batch/v1`` Job ``name``: one pod on a node labelled ``nvidia.com/gpu.product`` = ``gpu_product``,
    running the ``init`` containers one at a time, then ``containers``, with ``volumes``."""
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "labels": {"app": "dlbench"}},
        "spec": {
            "backoffLimit": 2,  # a retried pod resumes: finished cells are on the volume
            "template": {
                "metadata": {"labels": {"app": "dlbench"}},
                "spec": {
                    "restartPolicy": "Never",
                    # NVML lists compute processes of the caller's PID namespace only: the busy check sees others
                    "hostPID": True,
                    "nodeSelector": {"nvidia.com/gpu.product": gpu_product},
                    "securityContext": {"runAsUser": 10001, "runAsGroup": 10001, "fsGroup": 10001},
                    "initContainers": init,
                    "containers": containers,
                    "volumes": volumes,
                },
            },
        },
    }


def collect_from(source: str, dest: Path) -> list[str]:
    """The command that copies a results bucket (``s3://``, ``gs://``) or folder into ``dest``.

    Raises:
        ValueError: a URL scheme this does not know.
    """
    if source.startswith("s3://"):
        return ["aws", "s3", "sync", source, str(dest)]
    if source.startswith("gs://"):
        return ["gcloud", "storage", "rsync", "--recursive", source, str(dest)]
    if "://" in source:
        raise ValueError(f"cannot copy from {source!r}: use s3://, gs:// or a local folder (a mounted bucket)")
    return ["cp", "-r", f"{source.rstrip('/')}/.", str(dest)]


def dollars(text: str) -> float:
    """``--price-per-hour``'s type: ``bench.core.price.dollars``, as ``bench report --price-per-hour`` takes it (the
    VM's report runs after every cell: a value it refuses would fail there, on a paid machine).

    Raises:
        argparse.ArgumentTypeError: anything else (argparse prints it as one line, exit 2).
    """
    try:
        return price.dollars(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``cloud launch|k8s|collect`` (``python3 -m bench.host cloud ...``)."""
    p = sub.add_parser("cloud", help="SkyPilot jobs (launch), a Kubernetes Job (k8s), bring a cloud run home "
                       "(collect)", description=__doc__.splitlines()[0])
    cmd = p.add_subparsers(dest="cmd", required=True)
    run = argparse.ArgumentParser(add_help=False)  # what a comparison is, for both launchers
    # Defaults: the request's, as a run on a GPU resolves them (bench.core.request), never restated here.
    run.add_argument("--suite", default=request.default("suite"))
    run.add_argument("--stacks", default=" ".join(DEFAULT_STACKS))
    run.add_argument("--size", default=request.default("size", "gpu"))
    run.add_argument("--repeats", type=int, default=request.default("repeats", "gpu"))
    run.add_argument("--seed", type=int, default=request.default("seed"))
    run.add_argument("--input", dest="inputs", action="append", default=[], metavar="VAR=VALUE",
                     help="another bench run input the user set, as its Makefile variable (SET=tf32=off); repeatable")
    run.add_argument("--registry", default="", help="the images make push pushed (launch: pull instead of build)")
    la = cmd.add_parser("launch", parents=[run], help="print (--dry-run) or run the sky jobs launch commands")
    la.add_argument("--gpus", required=True, help='GPU types, space-separated: "A100 H100" (A100-80GB, L4, ...)')
    la.add_argument("--bucket", default="")
    la.add_argument("--run-name", default="")
    la.add_argument("--spot", action="store_true")
    la.add_argument("--price-per-hour", type=dollars, default=None, help="$ per GPU-hour in the report (0 or more)")
    la.add_argument("--dry-run", action="store_true")
    k8 = cmd.add_parser("k8s", parents=[run], help="print a batch/v1 Job (YAML) for one comparison")
    k8.add_argument("--gpu-product", default="")
    k8.add_argument("--claim", default="dlbench-results")
    k8.add_argument("--digests", type=Path, default=None,
                    help="make push's digest list (results/images/gpu.txt): pull those images by digest")
    co = cmd.add_parser("collect", help="copy a results bucket or folder into results/cloud/<run>")
    co.add_argument("--source", required=True)
    co.add_argument("--dest", type=Path, required=True)
    co.add_argument("--dry-run", action="store_true")
    p.set_defaults(main=main, parser=p)


def main(a: argparse.Namespace) -> int:
    """``cloud launch|k8s|collect``: exit 1 when a command it runs fails or its tool is missing, 2 for bad input."""
    try:
        inputs = split_pairs(getattr(a, "inputs", []), "--input {pair!r}: expected VAR=VALUE")
        if a.cmd == "launch":
            cmds = launch_commands(a.suite, a.gpus.split(), a.stacks.split(), a.size, a.repeats, a.bucket,
                                   a.run_name, a.spot, a.seed, a.price_per_hour, a.registry, inputs)
            _run(cmds, a.dry_run, "sky", "pip install skypilot, then `sky check` (README \"Run on the cloud\")")
        elif a.cmd == "k8s":
            digests = read_digests(a.digests)
            job = k8s_job(a.suite, a.stacks.split(), a.registry, a.gpu_product, a.repeats, a.size, a.seed, a.claim,
                          inputs=inputs, digests=digests)
            try:  # the one command that needs a package (PyYAML): imported once its input is known to be good
                import yaml
            except ImportError:
                sys.exit(f"{PROG} k8s: printing the Job needs PyYAML, which this Python lacks: pip install pyyaml")
            by_tag = unpinned(job)
            if digests:  # a list from an older push may name digests its registry has since deleted: say whose
                written = dt.datetime.fromtimestamp(a.digests.stat().st_mtime, dt.timezone.utc)
                stamp = written.isoformat(timespec="minutes")
                print(f"note: images pulled by the digests in {a.digests} (written {stamp}); delete it to pull by tag",
                      file=sys.stderr)
            if by_tag:
                listed = a.digests or "a digest list (--digests)"
                print(f"note: no digest for {', '.join(by_tag)} in {listed}: pulled by tag, and their records' "
                      "env.image_digest is null (make push REGISTRY=... FLAVOR=gpu lists them)", file=sys.stderr)
            sys.stdout.write(yaml.safe_dump(job, sort_keys=False))
        else:
            cmd = collect_from(a.source, a.dest)  # a source it cannot copy from is refused before --dest is made
            made: list[Path] = []  # the folders made for --dest: removed again while empty when the copy fails
            reason = None if a.dry_run else atomic.unwritable(a.dest, made)
            if reason:
                raise ValueError(f"cannot make --dest {a.dest}: {reason}")
            try:
                _run([cmd], a.dry_run, cmd[0], f"install the {cmd[0]} CLI, or mount the bucket and pass its folder")
            except BaseException:  # a failed sync, no CLI, Ctrl-C: an empty results/cloud/<run>/ was left behind
                atomic.remove_empty(made)
                raise
    except ValueError as e:
        a.parser.error(str(e))
    return 0


def _run(cmds: list[list[str]], dry_run: bool, tool: str, how: str) -> None:
    for cmd in cmds:
        print(shlex.join(cmd))
    if dry_run:
        return
    if not shutil.which(tool):
        sys.exit(f"{PROG}: {tool!r} is not installed: {how}")
    for cmd in cmds:
        rc = subprocess.run(cmd).returncode
        if rc:
            sys.exit(f"{PROG}: {shlex.join(cmd[:3])} ... exited with status {rc}")
