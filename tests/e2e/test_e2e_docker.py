"""End to end through Docker: build the images on a local base image, run `make bench-all`
at smoke size on CPU, check the CSV; then `docker compose run jax-bench` and the GPU images' checks.

Two scopes (BENCH_E2E_SCOPE, set by make's TEST_SCOPE; docs/ci.md). ``full`` (`make test-full`): both image flavors,
every cell of every suite in every CPU image, the GPU images' cells and checks. ``cover`` (`make test`): the CPU
images, and in them each suite's covering selection: every stack runs each suite, through the same checks, on fewer
cells (``COVER``); the GPU images are left to ``full``.

Needs a running Docker engine (BuildKit-capable client) and debootstrap, or an existing base image.
Skipped without Docker unless BENCH_REQUIRE_DOCKER=1 (CI), where a missing engine is a failure.

`make test` builds its scope's images first (``FLAVORS``) beside the unit tests (`test_base_image`, then
`test_images_build`, a parallel make job: builds wait on the network and the disk as much as on the CPU), then
runs this whole module with BENCH_E2E_PREPARED=1, where those builds are cache hits. The cells
themselves always run one at a time: they are CPU-bound (two at once took as long as one after the other).
"""

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from bench.core.stacks import DEFAULT_STACKS
from bench.core.stacks import STACKS as ALL_STACKS
from bench.host import stackfiles
from bench.results.report.method import correctness_flags

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
DOCKER = os.environ.get("DOCKER", "docker")
COMPOSE = os.environ.get("COMPOSE", "docker-compose")
BASE = os.environ.get("BENCH_BASE_IMAGE", "dlbench-base:bookworm")
STACKS = list(DEFAULT_STACKS)
#: The GPU image stage also builds and runs the gpu-only stacks (pytorch-cu12).
GPU_STACKS = [s.id for s in ALL_STACKS.values() if s.default or s.flavors == ("gpu",)]
#: The stacks with a step engine: the paper suite's (the plain-JAX stack records its paper cells unsupported).
PAPER_STACKS = [s for s in STACKS if ALL_STACKS[s].family != "jax"]
WORKLOADS = ["mnist_mlp", "mnist_cnn", "mnist_hierarchical_rnn", "cifar10_cnn", "babi_rnn"]
#: A smoke cell tests a code path: every one must finish within this, imports included, on any x86-64 CPU
#: (process.wall_s). Measured on a 2-core AMD EPYC: the slowest cell of each suite is listed by -s.
SMOKE_CELL_LIMIT_S = 60
#: What the GPU images run on the CPU: a convolution and an embedding + LSTM, through the CUDA builds of each
#: framework (the CPU images run all five classic workloads; all five here cost CI ~3.5 more minutes)
GPU_IMAGE_WORKLOADS = ("mnist_cnn", "babi_rnn")
#: keras-cv's SD 1.4 parts have a fixed architecture (an 860M-parameter UNet, the 34M VAE encoder), kept at
#: smoke size: building and XLA-compiling them on a CPU took 35-64 s (2-core EPYC). Their own bound.
FIXED_ARCH_LIMIT_S = 120
#: The runner kills a cell past this (a `timeout` record), so one slow path cannot eat the CI budget.
CELL_TIMEOUT_S = 180
#: Free disk the whole run wants: both flavors' images, ~34 GB in all now that the stacks on one framework
#: share its layer (images/layers/), plus a build's largest layer again while it is written.
E2E_BYTES = 45 * 10**9
SCOPE = os.environ.get("BENCH_E2E_SCOPE", "full")
if SCOPE not in ("cover", "full"):
    raise ValueError(f"BENCH_E2E_SCOPE is cover or full, not {SCOPE!r}")
FULL = SCOPE == "full"


def _baselines(suite: str) -> list[str]:
    """Each stack's baseline variant of ``suite``'s default grid (``Cell.baseline``), by name."""
    from bench.run.plan import expand

    return sorted({c.variant for c in expand(STACKS, suite, "smoke", "cpu") if c.baseline})


#: The cover scope's selection, per suite (make inputs). classic: the 2017 MNIST CNN, profiled after its timed window
#: (every stack's own profiler; the full scope profiles it in the GPU images), and a CNN on the 2017 script's real-time
#: augmentation. tuning: each stack's baseline and, per engine family, variants of the knobs that change the math and
#: the execution (precision, steps_per_execution, jit_compile, a preloaded or device-resident pipeline; Keras'
#: steps_per_execution is unsupported on its PyTorch backend: a record with the reason). paper: one decoder LLM's fit
#: and generate, unsupported on Keras 2 (its record and the report's footnote).
COVER = {
    "classic": {"WORKLOADS": "mnist_cnn cifar10_cnn"},
    "tuning": {"VARIANTS": " ".join((
        *_baselines("tuning"), "jit_compile=false+precision=mixed_float16", "jit_compile=false+steps_per_execution=512",
        "data_pipeline=tensor_dataset+grad_scaler=true+precision=float16_autocast+preload=true",
        "data_pipeline=device_put_once+precision=bfloat16"))},
    "paper": {"WORKLOADS": "gemma", "VARIANTS": "bs2"},
}


def selection(suite: str) -> list[str]:
    """``make`` inputs that narrow ``suite`` to this scope's cells: none in ``full``, ``COVER``'s in ``cover``."""
    return [] if FULL else [f"{k}={v}" for k, v in COVER[suite].items()]


def planned(suite: str, stacks: list[str]) -> list:
    """The cells this scope runs of ``suite`` on ``stacks`` at smoke size on the CPU, as the plan makes them."""
    from bench.run.plan import expand, only_variants

    inputs = dict(COVER[suite]) if not FULL else {}
    cells = expand(stacks, suite, "smoke", "cpu", inputs.get("WORKLOADS", "").split())
    return only_variants(cells, inputs.get("VARIANTS", "").split())


CLASSIC_WORKLOADS = WORKLOADS if FULL else COVER["classic"]["WORKLOADS"].split()
#: The image flavors this scope builds, each with its stacks.
FLAVORS = {"cpu": STACKS, "gpu": GPU_STACKS} if FULL else {"cpu": STACKS}
#: Set by `make test` after `test_base_image` made room: the module's later runs must not prune what the
#: parallel image build made.
PREPARED = os.environ.get("BENCH_E2E_PREPARED") == "1"


def sh(cmd, timeout=3600, env=None, check=True):
    p = subprocess.run(cmd, cwd=ROOT, text=True, capture_output=True, timeout=timeout,
                       env={**os.environ, **(env or {})})
    print(p.stdout[-6000:], p.stderr[-6000:], sep="\n")
    if check:
        assert p.returncode == 0, f"{cmd} exited {p.returncode}"
    return p


@pytest.fixture(scope="module")
def make_args(tmp_path_factory):
    if subprocess.run([DOCKER, "info"], capture_output=True).returncode != 0:
        if os.environ.get("BENCH_REQUIRE_DOCKER") == "1":
            pytest.fail("BENCH_REQUIRE_DOCKER=1 but no Docker engine answers")
        pytest.skip("no Docker engine")
    if not PREPARED and docker_free_bytes() < E2E_BYTES:  # earlier runs' images and cache: rebuilding beats a full disk
        sh([DOCKER, "builder", "prune", "-af"])
        sh([DOCKER, "image", "prune", "-af"])
    sh(["tests/e2e/base-image.sh", BASE], timeout=900)
    args = [f"DOCKER={DOCKER}", f"COMPOSE={COMPOSE}", f"BASE_IMAGE={BASE}", "DEVICE=auto"]
    ca = os.environ.get("BENCH_CA_BUNDLE", "/etc/ssl/certs/ca-certificates.crt")
    if Path(ca).is_file():
        args.append(f"CA_BUNDLE={ca}")
    results = tmp_path_factory.mktemp("results")
    args += [f"RESULTS_DIR={results}", f"TIMEOUT={CELL_TIMEOUT_S}"]
    return args, results


def copy_if_changed(src: Path, dst: Path) -> None:
    """Copy ``src`` to ``dst`` unless it is there already, atomically: a parallel image build may be reading it."""
    if dst.exists() and dst.stat().st_size == src.stat().st_size:
        return
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}")
    shutil.copy(src, tmp)
    os.replace(tmp, dst)


def images_present(flavor: str, stacks: list[str]) -> bool:
    """Whether ``dlbench/<stack>:<flavor>`` exists for every stack."""
    return all(subprocess.run([DOCKER, "image", "inspect", f"dlbench/{s}:{flavor}"],
                              capture_output=True).returncode == 0 for s in stacks)


def docker_free_bytes() -> int:
    """Free disk under the Docker engine's root directory (bytes)."""
    return shutil.disk_usage(sh([DOCKER, "info", "--format", "{{.DockerRootDir}}"]).stdout.strip()).free


def check_cell_times(df: pd.DataFrame, suite: str) -> None:
    """Every smoke cell within its limit (SMOKE_CELL_LIMIT_S; FIXED_ARCH_LIMIT_S for keras-cv's SD 1.4);
    the failure names each slow cell. Prints the slowest."""
    cols = ["stack", "workload", "task", "variant", "status", "process.wall_s"]
    slowest = df.sort_values("process.wall_s", ascending=False)[cols]
    print(f"slowest {suite} smoke cells (s):\n{slowest.head(5).to_string(index=False)}")
    keras = slowest["stack"].map(lambda s: ALL_STACKS[s].family == "keras")
    fixed = (slowest["workload"] == "stable_diffusion") & keras
    limit = fixed.map({True: FIXED_ARCH_LIMIT_S, False: SMOKE_CELL_LIMIT_S})
    slow = slowest[slowest["process.wall_s"] > limit]
    assert slow.empty, f"{suite} smoke cells over their limit ({SMOKE_CELL_LIMIT_S} s; keras-cv SD " \
                       f"{FIXED_ARCH_LIMIT_S} s):\n{slow.to_string(index=False)}"


def test_base_image(make_args):
    """Docker answers, the disk has room and the local base image exists (the first step of `make test`)."""
    assert subprocess.run([DOCKER, "image", "inspect", BASE], capture_output=True).returncode == 0


def test_images_build(make_args):
    """Every stack image builds from its lock, the cpu flavor of the default stacks and the gpu flavor of
    those and of the gpu-only stacks, with the collector; each build imports its framework and fails on a
    module without bytecode (images/imports.py). `make test` runs this beside the unit tests. The stacks that
    name one shared layer (images/layers/) build it once: their images share it on disk."""
    args, _ = make_args
    for flavor, stacks in FLAVORS.items():
        start = time.monotonic()
        sh(["make", "build", f"FLAVOR={flavor}", f"STACKS={' '.join(stacks)}", *args], timeout=3600)
        print(f"{flavor} images built in {time.monotonic() - start:.0f} s")  # CI's log: what each flavor costs
    assert all(images_present(flavor, stacks) for flavor, stacks in FLAVORS.items())
    # the framework layer is stored once: without it a stack image shared only the base, toolchain and uv
    # layers (<0.6 GB); measured with it: 1.7 GB (torch, cpu) to 7.0 GB (TensorFlow + CUDA 12.9, gpu)
    shared = shared_bytes()
    for name, flavor, members in (x for x in stackfiles.layers() if x[1] in FLAVORS):
        for s in members:
            assert shared[s.image(flavor)] > 1.2e9, (s.image(flavor), shared)
        if members[0].sublayer == name:
            check_sublayer_shared(flavor, members)


def test_a_changed_layer_lock_rebuilds_only_the_images_that_install_it(make_args, tmp_path):
    """Each layer step copies only its own lock, so its cache key is that lock: with the jax sublayer's lock
    changed, keras3-tf (tensorflow layer, no sublayer) rebuilds from cache into the very same filesystem layers."""
    args, _ = make_args
    for rel in ("pyproject.toml", "README.md", ".dockerignore", "images", "bench"):
        src = ROOT / rel
        if src.is_dir():
            shutil.copytree(src, tmp_path / rel, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(src, tmp_path / rel)
    with open(tmp_path / "images" / "layers" / "jax-cpu.lock", "a") as f:
        f.write("# changed\n")
    stack, make = ALL_STACKS["keras3-tf"], dict(a.split("=", 1) for a in args)
    build = [DOCKER, "build", "-f", "images/Dockerfile", "--build-arg", "FLAVOR=cpu",
             "--build-arg", f"BASE_IMAGE={make['BASE_IMAGE']}", "-t", "dlbench-cache-check:cpu", "."]
    for k, v in stack.build_args().items():
        build[2:2] = ["--build-arg", f"{k}={v}"]
    if "CA_BUNDLE" in make:
        build[2:2] = ["--secret", f"id=ca_bundle,src={make['CA_BUNDLE']}"]
    p = subprocess.run(build, cwd=tmp_path, capture_output=True, text=True, timeout=900,
                       env={**os.environ, "DOCKER_BUILDKIT": "1"})
    try:
        assert p.returncode == 0, p.stderr[-3000:]
        assert rootfs("dlbench-cache-check:cpu") == rootfs(stack.image("cpu")), p.stderr[-3000:]
    finally:
        subprocess.run([DOCKER, "image", "rm", "dlbench-cache-check:cpu"], capture_output=True)


def check_sublayer_shared(flavor: str, members: list) -> None:
    """The sublayer's members share a bottom filesystem layer beyond those that every image on their layer shares
    (diff ids). That the layer below stays one layer for all of them is
    tests/core/test_stacks.py::test_no_argument_that_differs_between_stacks_on_a_layer_is_declared_above_its_step."""
    ids = {s.id: rootfs(s.image(flavor)) for s in stackfiles.layer_members(members[0].layer)}
    every = set(bottom_shared(list(ids.values())))
    assert set(bottom_shared([ids[s.id] for s in members])) - every, (flavor, "sublayer not shared")


def rootfs(image: str) -> list[str]:
    """The diff ids of ``image``'s filesystem layers, bottom first (``docker image inspect``)."""
    return json.loads(sh([DOCKER, "image", "inspect", "--format", "{{json .RootFS.Layers}}", image]).stdout)


def bottom_shared(images: list[list[str]]) -> list[str]:
    """The bottom layers (diff ids) that all ``images`` have in the same places."""
    out = []
    for ids in zip(*images, strict=False):
        if len(set(ids)) > 1:
            break
        out.append(ids[0])
    return out


def shared_bytes() -> dict[str, float]:
    """Per local image (``repo:tag``): bytes of its layers that another image also uses (``docker system df -v``)."""
    units = {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
    out = sh([DOCKER, "system", "df", "-v", "--format", "{{json .Images}}"]).stdout
    sizes = {}
    for image in json.loads(out.strip().splitlines()[0]):
        m = re.fullmatch(r"([0-9.]+)\s*([kMGT]?B)", image["SharedSize"])
        sizes[f"{image['Repository']}:{image['Tag']}"] = float(m[1]) * units[m[2]] if m else 0.0
    return sizes


@pytest.fixture(scope="module")
def bench_all(make_args):
    args, results = make_args
    if FULL:
        return sh(["make", "bench-all", *args], check=False), results
    profiled, *rest = CLASSIC_WORKLOADS
    p = sh(["make", "bench-all", "PROFILE=1", f"WORKLOADS={profiled}", *args], check=False)
    q = sh(["make", "bench-all", f"WORKLOADS={' '.join(rest)}", *args], check=False)
    return (p if p.returncode else q), results


def test_bench_all_cpu_smoke_matrix(bench_all):
    p, results = bench_all
    df = pd.read_csv(results / "classic-smoke-cpu.csv")
    check_cell_times(df, "classic")
    assert p.returncode == 0
    assert "CPU MODE" in p.stdout + p.stderr
    assert len(df) == len(CLASSIC_WORKLOADS) * len(STACKS)
    assert sorted(zip(df["stack"], df["workload"], strict=True)) == sorted(
        (s, w) for s in STACKS for w in CLASSIC_WORKLOADS)
    assert (df.status == "ok").all(), df[df.status != "ok"][["stack", "workload", "reason"]]
    for col in ("metrics.ms_per_step_mean", "metrics.first_epoch_s",
                "metrics.steady_epoch_s", "metrics.samples_per_s", "process.wall_s", "metrics.fit_call_s_per_epoch",
                "metrics.fit_epoch_s_mean"):
        assert (df[col] > 0).all(), col
    # cifar10_cnn trains on its 2017 script's real-time augmentation in every image, on the host
    cifar = df[df["workload"] == "cifar10_cnn"]
    assert (cifar["settings.augment"] == True).all() and (cifar["settings.data_pipeline"] == "host_augmentation").all()  # noqa: E712
    # the Keras cells report progress as the 2017 notebooks did: verbose=0 and a per-batch callback reading the logs
    keras_cells = df[df["stack"].str.startswith("keras")]
    assert (keras_cells["settings.progress"] == "keras_tqdm").all() and (keras_cells["settings.verbose"] == 0).all()
    # default cadence: a barrier and a clock read at the 2 epochs' edges only; no spread from one steady epoch
    assert (df["settings.sync"] == "epoch").all() and (df["metrics.clock_reads"] == 4).all()
    assert df["metrics.ms_per_step_p50"].isna().all() and (df["metrics.ms_per_step_basis"] == "epoch").all()
    # rounds: one on CPU, every record knows its place; and every stack's model learned (its loss fell)
    assert (df["schedule.rounds"] == 1).all() and (df["schedule.seed"] == 1).all()
    assert sorted(df["schedule.position"].unique()) == list(range(1, len(STACKS) + 1))
    assert correctness_flags(df) == []
    if not FULL:  # each of the six stacks profiled its first cell with its framework's profiler, in its CPU image
        check_profiles(df[df["workload"] == CLASSIC_WORKLOADS[0]], results / "runs" / "classic-smoke-cpu")
        assert "## Where the time goes" in (results / "report.md").read_text()
    assert (df.device == "cpu").all() and (df["size"] == "smoke").all()
    assert df.notes.str.contains("CPU run").all()
    for col in ("env.python", "env.cpu_model", "env.host", "env.image", "env.git_commit",
                "env.packages.numpy", "env.gpu.reason", "data.source"):
        assert df[col].notna().all() and (df[col].astype(str) != "").all(), col
    assert (df["env.image"] == df["stack"].map(lambda s: f"dlbench/{s}:cpu")).all()
    assert df["env.image_digest"].str.startswith("sha256:").all()  # built here: the local image ID
    assert df["env.git_commit"].str.fullmatch(r"[0-9a-f]{40}(-dirty\.[0-9a-f]{12})?").all()  # bench/ changed
    keras2 = df[df["stack"] == "keras2-tf"]
    assert keras2["env.packages.tf-keras"].notna().all()
    # PyPI's torch (a CUDA 13.0 build that runs on a CPU) in the cpu images too: PyPI has no CPU torchvision
    assert (df[df["stack"] == "pytorch"]["env.packages.torch"] == "2.13.0").all()
    # one architecture on every stack
    params = df.pivot_table(index="workload", columns="stack", values="model.params_total")
    assert (params.nunique(axis=1) <= 2).all()  # torch LSTMs count a second bias: see test_workloads


def test_compose_run_service_resumes(bench_all, make_args):
    args, results = make_args
    env = {"BENCH_RESULTS": str(results), "BENCH_FLAVOR": "cpu", "BENCH_UID": str(os.getuid()),
           "BENCH_GID": str(os.getgid()), "BENCH_DEVICE": "auto"}
    # the service as a user runs it (its own command: every classic workload); the cover scope names its workloads,
    # or the ones it left out would run here
    cover = [] if FULL else ["bench", "run", "--stack", "keras3-jax",
                             *(f"--workload={w}" for w in CLASSIC_WORKLOADS)]
    p = sh([COMPOSE, "-f", "compose.yaml", "run", "--rm", "-T", "jax-bench", *cover], env=env, timeout=900)
    assert p.stdout.count("already ok, skipped") == len(CLASSIC_WORKLOADS)


def test_device_gpu_without_gpu_is_a_clear_error(bench_all, make_args):
    args, results = make_args
    env = {"BENCH_RESULTS": str(results), "BENCH_FLAVOR": "cpu", "BENCH_UID": str(os.getuid()),
           "BENCH_GID": str(os.getgid())}
    p = sh([COMPOSE, "-f", "compose.yaml", "run", "--rm", "-T", "jax-bench", "bench", "run", "--stack",
            "keras3-jax", "--device", "gpu"], env=env, check=False, timeout=900)
    assert p.returncode == 2
    assert "sees no GPU" in p.stderr and "Traceback" not in p.stderr
    if not shutil.which("nvidia-smi"):
        m = sh(["make", "bench-pytorch", "DEVICE=gpu"], check=False)
        assert m.returncode != 0 and "DEVICE=gpu but nvidia-smi finds no NVIDIA GPU" in m.stderr


def test_tuning_sweep_in_every_image(bench_all, make_args):
    """The tuning suite's default grid at smoke size on CPU in all six images, then its report."""
    args, results = make_args
    p = sh(["make", "bench-all", "SUITE=tuning", *selection("tuning"), *args], check=False)
    df = pd.read_csv(results / "tuning-smoke-cpu.csv")
    check_cell_times(df, "tuning")
    bad = df[~df.status.isin(["ok", "unsupported"])]
    assert p.returncode == 0 and bad.empty, bad[["stack", "variant", "status", "reason"]].to_string()
    assert set(df["stack"]) == set(STACKS)
    assert (df.groupby("stack")["baseline"].sum() == 1).all()
    assert df[df.status == "unsupported"]["reason"].notna().all()
    ok = df[df.status == "ok"]
    assert sorted(zip(df["stack"], df["variant"], strict=True)) == sorted((c.stack, c.variant)
                                                                          for c in planned("tuning", STACKS))
    # every stack ran its baseline and several knobs (cover: its baseline and one of its family's variants)
    assert ok.groupby("stack").size().min() >= (4 if FULL else 2)
    assert (ok["metrics.total_train_s"] > 0).all()
    # telemetry fields are present on every ok row: null with the reason on CPU
    assert (ok["telemetry.available"] == False).all()  # noqa: E712
    assert (ok["telemetry.reason"] == "CPU run: no GPU telemetry").all()
    assert ok["metrics.j_per_step"].isna().all() and (ok["telemetry.cpu_util_pct"] > 0).all()
    # make report: one results/report.md with a section per collected run so far
    report = (results / "report.md").read_text()
    assert "## Run classic-smoke-cpu" in report and "## Run tuning-smoke-cpu" in report
    assert "### Tuning study" in report and "CPU rows are smoke tests" in report
    assert "](plots/tuning-smoke-cpu/tuning_time.png)" in report
    assert (results / "plots" / "tuning-smoke-cpu" / "tuning_time.png").exists()


#: The profiler each stack's framework brings (docs/profile.md), by the record's profile.profiler.
PROFILERS = {"torch": "torch.profiler", "jax": "jax.profiler", "tensorflow": "tf.profiler"}


def check_profiles(df: pd.DataFrame, run_dir: Path) -> None:
    """Every ok cell carries a profile from its framework's own profiler (no reason), on the CPU, of 5 steps, whose
    categories sum to its op time; its Chrome trace (and on the XPlane profilers the XSpace) lies beside the
    record, named in the row but never read into the CSV."""
    assert (df.status == "ok").all() and "profile.reason" not in df.columns, df.get("profile.reason")
    for _, row in df.iterrows():
        backend = ALL_STACKS[row["stack"]].backend
        assert str(row["profile.profiler"]).startswith(PROFILERS[backend]), (row["stack"], row["profile.profiler"])
        assert row["profile.device"] == "cpu" and row["profile.steps"] == 5, row["stack"]
        cats = sum(row[c] for c in df.columns if c.startswith("profile.categories."))
        assert abs(cats - row["profile.op_ms"]) <= 1e-6 * max(1.0, row["profile.op_ms"]), row["stack"]
        assert 0 < row["profile.device_busy_fraction"] <= 1 and row["profile.categories.matmul_conv"] > 0
        trace = run_dir / row["profile.trace"]
        assert trace.is_file() and trace.stat().st_size == row["profile.trace_bytes"], trace
        if backend != "torch":
            assert list((run_dir / row["profile.tensorboard"]).rglob("*.xplane.pb")), row["stack"]
    assert {ALL_STACKS[s].backend for s in df["stack"]} == set(PROFILERS)


def test_paper_suite_in_every_image(bench_all, make_args):
    """The Keras 3 benchmark suite at smoke size in all five images: every cell ok, except the ones the
    source could not run on Keras 2, which are unsupported with a reason; then its report."""
    args, results = make_args
    p = sh(["make", "bench-all", "SUITE=paper", f"STACKS={' '.join(PAPER_STACKS)}", *selection("paper"), *args],
           check=False)
    df = pd.read_csv(results / "paper-smoke-cpu.csv")
    check_cell_times(df, "paper")
    assert p.returncode == 0, df[df.status != "ok"][["stack", "workload", "task", "reason"]].to_string()
    cells = planned("paper", PAPER_STACKS)
    assert len(df) == len(cells) == (5 * 12 if FULL else 5 * 2) and set(df["stack"]) == set(PAPER_STACKS)
    unsupported = df[df.status == "unsupported"]
    llms = {"gemma", "mistral"} & {c.workload for c in cells}
    assert set(zip(unsupported["stack"], unsupported["workload"], strict=True)) == {("keras2-tf", w) for w in llms}
    assert unsupported["reason"].str.len().gt(10).all()
    ok = df[df.status == "ok"]
    assert len(ok) == len(cells) - sum(c.stack == "keras2-tf" and c.workload in llms for c in cells)
    assert len(ok) == (60 - 6 if FULL else 10 - 2)
    for col in ("metrics.ms_per_step_mean", "metrics.ms_per_step_p90", "metrics.first_step_s",
                "metrics.examples_per_s", "model.params_total"):
        assert (ok[col] > 0).all(), col
    assert (ok["metrics.steps"] == 3).all()
    gen = ok[ok.task == "generate"]
    # BOS + 5 prompt, to max_length 12
    assert len(gen) == (4 * 4 if FULL else 4) and (gen["settings.generated_tokens"] == 6).all()
    assert (gen["settings.prompt_tokens"] == 6).all() and gen["settings.tokenization_timed"].eq(False).all()
    # one architecture on every stack: SAM's and the SD encoder's counts agree across Keras 2, 3 and PyTorch
    ran = {(c.workload, c.task) for c in cells}
    for wl, task in (x for x in (("segment_anything", "predict"), ("segment_anything", "fit"), ("bert", "fit"))
                     if FULL or x in ran):
        counts = ok[(ok.workload == wl) & (ok.task == task)]["model.params_total"]
        assert counts.nunique() == 1, (wl, task, counts.tolist())
    # keras-cv's SD 1.4 parts keep their full architecture at smoke size: the published counts, on every Keras stack
    keras_sd = ok[(ok.workload == "stable_diffusion") & (ok["stack"] != "pytorch")]
    assert len(keras_sd) == (4 * 2 if FULL else 0)
    assert (keras_sd[keras_sd.task == "predict"]["model.params_total"] == 859_520_964).all()
    assert (keras_sd[keras_sd.task == "fit"]["model.params_total"] == 34_163_592).all()
    report = (results / "report.md").read_text()
    assert "## Run paper-smoke-cpu" in report and "### Keras 3 benchmark (Table 2 layout)" in report
    assert "GemmaBackbone requires Keras 3" in report  # the footnote of an unsupported cell


def test_gpu_images_run_on_cpu(bench_all, make_args):
    """The GPU flavor of every default image and the gpu-only pytorch-cu12, from the locks GPU users get (CUDA
    wheels; built by `test_images_build`, else by bench-all here) run on the CPU: two classic smoke cells each
    (GPU_IMAGE_WORKLOADS), the convolution one profiled after its timed window (PROFILE=1: every stack's own
    profiler, in the images a GPU run uses; the bAbI LSTM's CPU trace on keras3-torch, a Python-stepped 552-step
    loop, held ~25 GB and passed the cell limit), then `--device gpu` in each fails with one clear line, and the
    torch images carry torch.compile's toolchain."""
    if not FULL:
        pytest.skip("the GPU images are built and run in the full scope (make test-full)")
    args, results = make_args
    common = ["make", "bench-all", "FLAVOR=gpu", "DEVICE=cpu", f"STACKS={' '.join(GPU_STACKS)}"]
    profiled, rest = GPU_IMAGE_WORKLOADS[0], GPU_IMAGE_WORKLOADS[1:]
    p = sh([*common, "PROFILE=1", f"WORKLOADS={profiled}", *args], check=False)
    q = sh([*common, f"WORKLOADS={' '.join(rest)}", *args], check=False)
    df = pd.read_csv(results / "classic-smoke-cpu-gpu-images.csv")
    check_cell_times(df, "classic (gpu images)")
    check_profiles(df[df["workload"] == profiled], results / "runs" / "classic-smoke-cpu-gpu-images")
    assert "## Where the time goes" in (results / "report.md").read_text()
    assert p.returncode == q.returncode == 0, df[df.status != "ok"][["stack", "workload", "reason"]].to_string()
    assert len(df) == len(GPU_IMAGE_WORKLOADS) * len(GPU_STACKS) == 14
    assert set(df["workload"]) == set(GPU_IMAGE_WORKLOADS) and (df.status == "ok").all() and (df.device == "cpu").all()
    assert (df["env.image"] == df["stack"].map(lambda s: f"dlbench/{s}:gpu")).all()
    assert (df["env.image_flavor"] == "gpu").all()
    torch_rows = df[df["stack"].isin(["pytorch", "keras3-torch"])]
    assert (torch_rows["env.packages.torch"] == "2.13.0").all()  # PyPI's CUDA 13.0 build, not +cpu
    cu12 = df[df["stack"] == "pytorch-cu12"]
    assert (cu12["env.packages.torch"] == "2.10.0").all() and (cu12["env.image"] == "dlbench/pytorch-cu12:gpu").all()
    tf_rows = df[df["stack"].isin(["keras2-tf", "keras3-tf"])]
    assert tf_rows["env.framework_cuda.tensorflow.is_cuda_build"].astype(bool).all()
    env = {"BENCH_RESULTS": str(results), "BENCH_FLAVOR": "gpu", "BENCH_UID": str(os.getuid()),
           "BENCH_GID": str(os.getgid())}
    for stack in GPU_STACKS:
        service = ALL_STACKS[stack].service
        g = sh([COMPOSE, "-f", "compose.yaml", "run", "--rm", "-T", service, "bench", "run", "--stack", stack,
                "--device", "gpu"], env=env, check=False, timeout=900)
        errors = [line for line in g.stderr.splitlines() if line.startswith("bench: error")]
        assert g.returncode == 2 and len(errors) == 1 and "sees no GPU" in errors[0], (stack, g.stderr)
        assert "Traceback" not in g.stderr
    # what Triton does for each kernel's launcher: gcc builds a Python C extension against Python.h
    launcher = ('printf "#include <Python.h>\\nint launch(void) { return Py_IsInitialized(); }\\n" > /tmp/l.c && '
                'gcc -O3 -shared -fPIC -I"$(python -c "import sysconfig; print(sysconfig.get_paths()[\'include\'])")" '
                '/tmp/l.c -o /tmp/l.so && echo LAUNCHER-BUILT')
    for stack in (s for s in GPU_STACKS if ALL_STACKS[s].backend == "torch"):  # pytorch, keras3-torch, cu12
        c = sh([DOCKER, "run", "--rm", f"dlbench/{stack}:gpu", "python", "-c",
                "from bench.models.engines.toolchain import torch_compile_blocker as b; print('BLOCKER', b('gpu'))"])
        assert "BLOCKER None" in c.stdout, (stack, c.stdout)
        assert "LAUNCHER-BUILT" in sh([DOCKER, "run", "--rm", f"dlbench/{stack}:gpu", "sh", "-c", launcher]).stdout
