"""Bad input on the host side fails first, in one line: a stack's run alone checks its inputs, the check comes before
anything under ``make -j``, a quote in a value passes intact or is refused, a GPU-only input on a CPU run, a digest
list that is not there, the Kubernetes Job's run named after the size it runs at, a refused run leaves no folder, and
an image flavor ``imagetag`` does not know is bad input."""

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bench.cli import main as bench_cli
from bench.core import request
from bench.host import cloud
from bench.run import session

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable


def make(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args, f"PYTHON={PY}"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env=env)


def refused(p: subprocess.CompletedProcess, says: str) -> None:
    """make stopped on the check: the check's one line (and make's stop), no traceback, no recipe run or printed."""
    assert p.returncode != 0 and says in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) <= 2 and p.stderr.rstrip().endswith("Stop."), p.stderr
    assert "bench run" not in p.stdout and "docker" not in p.stdout and "doctor host" not in p.stdout, p.stdout


@pytest.mark.parametrize("pairs, says", [
    (["SUITE=classik"], "SUITE: unknown suite 'classik'"),
    (["SET=tf32=bogus"], "SET: tf32=bogus is not valid"),
    (["REPEATS=0"], "REPEATS: 0 is not at least 1"),
    (["ROUND=1", "ORDER=abba"], "the abba order takes two stacks, got 6"),
    (["ROUND=x"], "ROUND: 'x' is not an integer"),
    (["ROUND=0"], "ROUND: 0 is not at least 1"),
    (["ROUND=3", "REPEATS=2"], "ROUND: 3 is past the last of REPEATS=2 rounds"),
    (["ROUND=2", "DEVICE=cpu"], "ROUND: 2 is past the last of REPEATS=1 rounds"),  # a CPU run's default: 1 round
])
def test_a_stacks_run_alone_checks_its_inputs(pairs, says):
    """``make bench-<stack>`` checked only SET and the other pass-through inputs: SUITE=classik went to the container
    as ``--suite classik`` and failed there (after compose started it); so did a ROUND that is not one of the run's
    rounds."""
    refused(make("-n", "bench-jax", "DEVICE=cpu", *pairs), says)


def test_a_stacks_run_alone_takes_an_order_it_does_not_use():
    """ORDER shapes the rounds only (ROUND=, from bench-all's launcher): a stack's run alone is not refused for it."""
    p = make("-n", "bench-jax", "DEVICE=cpu", "ORDER=abba")
    assert p.returncode == 0 and "bench run --stack jax" in p.stdout, p.stderr


@pytest.mark.parametrize("goal", ["check-request", "selftest", "fidelity", "bench-pytorch"])
def test_device_gpu_without_a_gpu_is_refused_by_the_check_too(goal):
    """``make check-request DEVICE=gpu`` passed on a host without a GPU (exit 0) although ``make bench-all`` refuses it;
    ``selftest`` and ``fidelity`` went on to fail in every container."""
    refused(make("-n", goal, "DEVICE=gpu", "HAS_GPU="), "DEVICE=gpu but nvidia-smi finds no NVIDIA GPU on this host")


@pytest.mark.parametrize("goal", ["bench-pytroch", "build-keras3-jaxx", "doctor-pytroch", "selftest-pytroch",
                                  "fidelity-pytroch"])
@pytest.mark.parametrize("flavor", ["cpu", "gpu"])
def test_a_typo_in_a_stack_target_is_an_unknown_stack(goal, flavor):
    """A stack named by its target was not checked: on a CPU host ``make bench-pytroch`` said "pytroch: gpu image only
    ... add FLAVOR=gpu", and with FLAVOR=gpu compose got an empty service and took ``bench`` for it."""
    refused(make("-n", goal, "DEVICE=cpu", f"FLAVOR={flavor}"), "unknown stack(s) pytroch" if "pytroch" in goal
            else "unknown stack(s) keras3-jaxx")


@pytest.mark.parametrize("goals", [["bench-all"], ["preflight", "bench-all"], ["build-collector", "bench-all"]])
def test_bad_input_stops_make_j2_before_anything_starts(tmp_path, goals):
    """Under ``-j`` make may start bench-all's prerequisites in any order: the check ran as the recipe of one of
    them (check-request), so nothing but the prerequisites' listed order put it first, and a goal named before
    bench-all (the preflight, a build) ran before it. It runs as make reads the Makefile now; a fake docker on PATH
    sees no call and the results folder is never made."""
    fake = tmp_path / "bin"
    fake.mkdir()
    log = tmp_path / "docker.log"
    (fake / "docker").write_text(f'#!/bin/sh\necho "docker $*" >> {log}\n')
    (fake / "docker").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    p = make("-j2", *goals, "DEVICE=cpu", "SUITE=classik", f"DOCKER={fake / 'docker'}", f"COMPOSE={fake / 'docker'}",
             f"RESULTS_DIR={tmp_path / 'results'}", env=env)
    assert p.returncode == 2 and "SUITE: unknown suite 'classik'" in p.stderr, p.stdout + p.stderr
    assert not log.exists() and not (tmp_path / "results").exists(), p.stdout


@pytest.mark.parametrize("var, value, says", [
    ("WORKLOADS", "a'b", "WORKLOADS: unknown workload \"a'b\""),
    ("SET", "tf32='off", "SET: tf32='off is not valid"),
    ("SEED", "1'", "SEED: \"1'\" is not an integer"),
    ("TIMEOUT", "1'", "TIMEOUT: \"1'\" is not a number"),
])
def test_a_quote_in_a_value_is_checked_not_dropped(var, value, says):
    """make put each value in single quotes as it was: a quote in it ended the quoting, the shell refused the line
    and make read an empty answer as no input at all, so WORKLOADS="a'b" ran every workload. Each value is now one
    shell word, whatever it holds: the check sees it and refuses it in one line."""
    refused(make("-n", "bench-all", "DEVICE=cpu", f"{var}={value}"), says)


def test_a_quote_in_a_good_value_reaches_bench_run_and_the_cloud_intact():
    stack = make("-n", "bench-jax", "DEVICE=cpu", "VARIANTS=it's")
    assert stack.returncode == 0, stack.stderr
    line = " ".join(ln.strip(" \\") for ln in stack.stdout.splitlines() if "bench run" in ln or "--variant" in ln)
    words = shlex.split(line)
    assert words[words.index("--variant") + 1] == "it's", line
    sky = make("-n", "cloud", "GPUS=H100", "BUCKET=b", "CLOUD_RUN=r", "DRY_RUN=1", "VARIANTS=it's")
    assert sky.returncode == 0, sky.stderr
    words = shlex.split(" ".join(ln.strip(" \\") for ln in sky.stdout.splitlines()))
    assert words[words.index("--input") + 1] == "VARIANTS=it's"


def cpu_run_refused(tmp_path: Path, *options: str) -> str:
    """``bench run --device cpu OPTIONS`` into a new folder: refused in one line, exit 2, no folder left; its stderr."""
    p = subprocess.run([PY, "-m", "bench", "run", "--stack", "pytorch", "--workload", "mnist_mlp", "--device", "cpu",
                        *options, "--out", str(tmp_path / "new" / "run")], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert not (tmp_path / "new").exists()
    return p.stderr


def test_cooldown_on_a_cpu_run_is_refused_in_one_line(tmp_path):
    """COOLDOWN waits for the GPU to cool: on a CPU run it did nothing (an INFO line inside the container, no field
    in any record), yet make and bench run took it. Now make refuses it as it refuses DEVICE=gpu without a GPU, and
    bench run as it refuses --device gpu without one; 0 (off) stays fine, and a GPU run passes it on."""
    refused(make("-n", "bench-all", "DEVICE=cpu", "COOLDOWN=60"), "COOLDOWN=60: a GPU-only input")
    assert make("check-request", "DEVICE=cpu", "COOLDOWN=0").returncode == 0
    assert request.run_args({"COOLDOWN": "60"}, "gpu") == ["--cooldown", "60"]
    assert request.run_args({"COOLDOWN": "60"}) == ["--cooldown", "60"]  # the device not known: bench run decides
    with pytest.raises(ValueError, match="COOLDOWN=60: a GPU-only input, and this run is on the CPU"):
        request.run_args({"COOLDOWN": "60"}, "cpu")
    assert "--cooldown 5 (COOLDOWN) waits for the GPU to cool, and this run is on the CPU" in cpu_run_refused(
        tmp_path, "--cooldown", "5")


def test_a_digest_list_named_but_missing_is_an_error(tmp_path):
    """``--digests`` of a file that is not there printed a note and a Job pulling every image by tag: the run the
    user asked for (images pinned by digest) was not the one made."""
    for path in (tmp_path / "gpu.txt", tmp_path):
        p = subprocess.run([PY, "-m", "bench.host", "cloud", "k8s", "--registry", "r", "--gpu-product", "H",
                            "--stacks", "pytorch", "--repeats", "1", "--digests", str(path)], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
        assert (p.returncode, p.stdout) == (2, "") and p.stderr.count("\n") == 1, p.stderr
        assert f"--digests {path}: cannot read it" in p.stderr
    assert cloud.read_digests(None) == {}


def test_the_k8s_job_names_its_run_after_the_size_auto_resolves_to():
    """``--size auto`` named the run classic-auto-gpu while its cells ran (and were recorded) at full."""
    job = cloud.k8s_job("classic", ["pytorch"], "r", "H", repeats=1, size="auto")
    [init] = job["spec"]["template"]["spec"]["initContainers"]
    full = request.AUTO_SIZE["gpu"]
    assert init["args"][init["args"].index("--size") + 1] == full
    assert init["args"][init["args"].index("--out") + 1] == f"/results/runs/classic-{full}-gpu"
    assert f"classic-{full}-gpu.csv" in yaml.safe_dump(job) and "auto" not in yaml.safe_dump(job)


def test_make_names_a_size_auto_run_after_its_size_and_the_cloud_gets_auto():
    """make's run name was ``<suite>-$(SIZE)-<device>``: SIZE=auto named it classic-auto-cpu. It is resolved as bench
    run resolves it on this device; the cloud, whose GPU resolves it, still gets what the user set."""
    p = make("-n", "bench-jax", "DEVICE=cpu", "SIZE=auto")
    smoke = request.AUTO_SIZE["cpu"]
    assert p.returncode == 0 and f"--size {smoke} --device cpu --out /results/runs/classic-{smoke}-cpu" in p.stdout
    sky = make("-n", "cloud", "GPUS=H100", "BUCKET=b", "CLOUD_RUN=r", "DRY_RUN=1", "SIZE=auto")
    assert sky.returncode == 0 and "--size auto" in sky.stdout, sky.stderr
    assert "--size" not in make("-n", "cloud", "GPUS=H100", "BUCKET=b", "CLOUD_RUN=r", "DRY_RUN=1").stdout


def test_a_refused_gpu_run_leaves_no_folder_it_made(tmp_path, monkeypatch, capsys):
    """``--device gpu`` where the framework sees no GPU is refused before any cell; the --out folder (and its parents)
    that the writability check made stayed behind, empty. A folder that was there before stays."""
    monkeypatch.setattr(session, "stack_gpus", lambda stack_id: [])
    out = tmp_path / "new" / "run"
    with pytest.raises(SystemExit) as e:
        bench_cli(["run", "--stack", "pytorch", "--workload", "mnist_mlp", "--device", "gpu", "--out", str(out)])
    assert e.value.code == 2 and "sees no GPU" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "kept").mkdir()
    with pytest.raises(SystemExit):
        bench_cli(["run", "--stack", "pytorch", "--workload", "mnist_mlp", "--device", "gpu", "--out",
                   str(tmp_path / "kept")])
    assert [p.name for p in tmp_path.iterdir()] == ["kept"]


def test_a_refused_fidelity_run_leaves_no_folder_it_made(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        bench_cli(["fidelity", "--stack", "pytorch", "--workload", "nope", "--out", str(tmp_path / "f" / "x.json")])
    assert e.value.code == 2 and "unknown workload 'nope'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("goal, run", [("bench-jax", "a b"), ("bench-jax", ""), ("collect", "../x"),
                                       ("check-request", "it's"), ("bench-jax", ".hidden"), ("bench-jax", "-o"),
                                       ("collect", "a,b")])
def test_a_run_name_that_is_not_one_folder_name_is_refused_first(goal, run):
    """RUN went unchecked into ``--out /results/runs/$(RUN)``: "a b" split it in two (bench run refused the extra
    argument in every stack's container, after the preflight and the builds), an empty one wrote the records into
    runs/ itself, "../x" outside it."""
    refused(make("-n", goal, "DEVICE=cpu", f"RUN={run}"), f"RUN must be one folder name: a letter, digit, _ or @, then "
            f"letters, digits and . _ + = @ ~ - (got '{run}')")
    for good in ("versions-keras3-jax-vs-keras3-jax--keras-3.14.1-classic-smoke-cpu", "a100@2026-11-27", "_scratch"):
        ok = make("-n", "bench-jax", "DEVICE=cpu", f"RUN={good}")
        assert ok.returncode == 0 and f"/results/runs/{good} " in ok.stdout, ok.stderr


@pytest.mark.parametrize("price", ["-5", "abc", "1e", "1e400", "nan", "inf"])
def test_a_price_bench_report_would_refuse_stops_make_and_the_cloud_first(price, tmp_path):
    """PRICE_PER_HOUR reaches ``bench report --price-per-hour`` (a number, 0 or more) only after collect, once every
    cell has run, and on the cloud on the VM: a bad one failed the report there. make and ``cloud launch`` refuse it
    first, in one line. One rule for the three (``bench.core.price.dollars``): make's own regular expression took
    1e400 (inf) that the cloud refused, and bench report took nan and inf that both refused."""
    refused(make("-n", "bench-all", "DEVICE=cpu", f"PRICE_PER_HOUR={price}"),
            f"PRICE_PER_HOUR: {price!r} is not a price: dollars per GPU-hour")
    p = subprocess.run([PY, "-m", "bench.host", "cloud", "launch", "--gpus", "H100", "--bucket", "b", "--run-name", "r",
                        "--dry-run", "--price-per-hour", price], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout) == (2, "") and p.stderr.count("\n") == 1 and "is not a price" in p.stderr
    with pytest.raises(SystemExit) as e:
        bench_cli(["report", str(ROOT / "results" / "cpu-smoke"), "-o", str(tmp_path / "r"), "--price-per-hour", price])
    assert e.value.code == 2 and not (tmp_path / "r").exists()


def test_a_price_all_three_take_passes_make():
    assert make("check-request", "DEVICE=cpu", "PRICE_PER_HOUR=2.5e0").returncode == 0


@pytest.mark.parametrize("var, value", [("SET", "tf32=off"), ("COMPILE", "default"), ("NO_AUGMENT", "1")])
def test_the_tuning_suite_refuses_a_variant_input_before_any_build(var, value):
    """The tuning suite runs its own grid's variants, so bench run refuses --set, --compile and --no-augment for it
    (a PlanError): make checked them without the suite and passed them on, so make bench-all SUITE=tuning SET=...
    ran the preflight and built every image before each stack's container refused them. The host's check now knows
    the suite, and so does the cloud's."""
    says = f"the tuning suite runs the variants of its own grid (bench/run/sweeps/tuning.yaml), which {var} would"
    refused(make("-n", "bench-all", "DEVICE=cpu", "SUITE=tuning", f"{var}={value}"), says)
    refused(make("-n", "bench-jax", "DEVICE=cpu", "SUITE=tuning", f"{var}={value}"), says)
    with pytest.raises(ValueError, match=re.escape(says)):
        cloud.launch_commands("tuning", ["H100"], ["jax"], "full", 1, "b", "r", inputs={var: value})
    with pytest.raises(ValueError, match=re.escape(says)):
        cloud.k8s_job("tuning", ["jax"], "r", "H", repeats=1, inputs={var: value})
    ok = make("-n", "bench-jax", "DEVICE=cpu", "SUITE=classic", f"{var}={value}")
    assert ok.returncode == 0 and "bench run --stack jax --suite classic" in ok.stdout, ok.stderr
    assert make("check-request", "DEVICE=cpu", "SUITE=tuning", "NO_AUGMENT=0", "VARIANTS=x").returncode == 0


@pytest.mark.parametrize("how", ["command line", "environment"])
@pytest.mark.parametrize("var, value, gives", [("RUN", "a$b", "a"), ("SET", "tf32=o$ff", "tf32=of"),
                                               ("VARIANTS", "x$", "x$")])
def test_a_lone_dollar_in_a_knob_is_refused_not_expanded(how, var, value, gives):
    """make expands a knob's value: RUN='a$b' (typed, or exported from a shell that kept the $) named the run 'a',
    and every check saw 'a', not what was typed. A lone $ is refused in one line; make's own references stay."""
    env = {**os.environ, var: value} if how == "environment" else None
    args = [] if env else [f"{var}={value}"]
    refused(make("-n", "bench-jax", "DEVICE=cpu", *args, env=env),
            f"{var}: a lone '$' in '{value}': make reads $<letter> as its own variable (here it gives '{gives}')")


def test_a_make_reference_or_an_escaped_dollar_in_a_knob_still_works():
    p = make("-n", "bench-jax", "DEVICE=cpu", "RUN=$(SUITE)-x", "VARIANTS=it$$s")
    assert p.returncode == 0 and "--out /results/runs/classic-x " in p.stdout, p.stderr
    assert "--variant 'it$s'" in p.stdout, p.stdout


def test_an_idle_temperature_on_a_cpu_run_is_refused_and_never_read(tmp_path, monkeypatch):
    """IDLE_TEMP_C is the cooldown's GPU baseline: on a CPU run make passed it on and bench run dropped it, unsaid,
    as COOLDOWN was before. make and bench run refuse it now; and bench-all's launcher, which read nvidia-smi on any
    host that has one (a CPU run on a GPU host too) and passed IDLE_TEMP_C to every stack, reads it for GPU runs
    only, so such a run is not refused at its first stack."""
    from bench.host import launch

    refused(make("-n", "bench-all", "DEVICE=cpu", "IDLE_TEMP_C=40"), "IDLE_TEMP_C=40: a GPU-only input")
    refused(make("-n", "bench-jax", "DEVICE=cpu", "IDLE_TEMP_C=0"), "IDLE_TEMP_C=0: a GPU-only input")
    assert request.run_args({"IDLE_TEMP_C": "40"}, "gpu") == ["--idle-temp-c", "40"]
    assert "--idle-temp-c 40 (IDLE_TEMP_C) is the GPU's idle temperature, and this run is on the CPU" in \
        cpu_run_refused(tmp_path, "--idle-temp-c", "40")
    ran: list[list[str]] = []
    steps = launch.plan(["jax"], 1)
    monkeypatch.delenv("IDLE_TEMP_C", raising=False)
    for device in ("cpu", "gpu"):
        launch.Compose("make", lambda cmd: ran.append(cmd) or 0, read_idle=lambda: 41.0, device=device,
                       cooldown_s=60).launch(steps, ["jax"])
    assert [c[3:] for c in ran] == [["ROUND=1"], ["ROUND=1", "IDLE_TEMP_C=41"]]
    recipe = (ROOT / "Makefile").read_text().split("\nbench-all:", 1)[1].split("\n\n", 1)[0]
    assert "launch compose" in recipe and "--device $(RUN_DEVICE)" in recipe


def test_a_price_of_0_or_more_passes():
    """As ``bench report --price-per-hour`` takes it (a float): an exponent too, which ``cloud launch`` sent the VM
    (``5e-05``), whose make then refused it after the VM's setup."""
    for good in ("2.5", ".5", "0", "5e-05", "1E+07"):
        assert make("check-request", "DEVICE=cpu", f"PRICE_PER_HOUR={good}").returncode == 0
        assert cloud.dollars(good) == float(good)
    for price, sent in ((0.00005, "5e-05"), (12.3456789, "12.3456789"), (-0.0, "0.0")):  # as given, not rounded
        p = subprocess.run([PY, "-m", "bench.host", "cloud", "launch", "--gpus", "H100", "--bucket", "b", "--run-name",
                            "r", "--dry-run", "--price-per-hour", str(price)], cwd=ROOT, capture_output=True,
                           text=True, timeout=60)
        assert f"PRICE_PER_HOUR={sent}" in p.stdout and p.returncode == 0, p.stderr
    for bad in ("nan", "inf"):
        with pytest.raises(argparse.ArgumentTypeError):
            cloud.dollars(bad)


def test_the_preflight_reports_a_docker_it_cannot_run_as_a_failed_check(tmp_path):
    """``DOCKER=`` (empty) or a folder: the preflight ended in a PermissionError traceback; it is a failed check."""
    from bench.host import doctor

    assert doctor.run_cmd([str(tmp_path), "version"]).returncode == 126
    p = subprocess.run([PY, "-m", "bench.host", "doctor", "host", "--device", "cpu", "--stacks", "pytorch",
                        "--docker", "", "--compose", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert "Docker engine  ✗" in p.stdout and "Compose        ✗" in p.stdout, p.stdout


def test_cloud_collect_refuses_a_source_before_it_makes_the_destination(tmp_path):
    """A source it cannot copy from (ftp://) was refused after ``--dest`` had been made: an empty folder stayed."""
    p = subprocess.run([PY, "-m", "bench.host", "cloud", "collect", "--source", "ftp://x/r", "--dest",
                        str(tmp_path / "cloud" / "r")], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout) == (2, "") and "cannot copy from 'ftp://x/r'" in p.stderr, p.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("image, flavor, says", [
    ("pytorch", "weird", "pytorch has no flavor 'weird'; its flavors: cpu, gpu"),
    ("pytorch-cu12", "cpu", "pytorch-cu12 has no flavor 'cpu'; its flavors: gpu"),
    ("collector", "gpu", "the collector's flavor is 'latest', not 'gpu'"),
])
def test_imagetag_refuses_a_flavor_the_image_has_not_as_bad_input(image, flavor, says):
    """A mistyped flavor read as a missing lock file (exit 1, as for a broken checkout); it is bad input: exit 2."""
    p = subprocess.run([PY, "-m", "bench.host", "imagetag", image, flavor], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and not p.stdout


@pytest.mark.parametrize("pair, says", [("SYNC=bogus", "SYNC: sync='bogus' is not valid; expected 'epoch'"),
                                        ("SYNC=every:0", "SYNC: sync='every:0' is not valid"),
                                        ("TIMEOUT=nan", "TIMEOUT: 'nan' is not a finite number"),
                                        ("TIMEOUT=inf", "TIMEOUT: 'inf' is not a finite number")])
def test_a_cadence_or_a_number_bench_run_would_refuse_stops_make_first(pair, says):
    """SYNC had no host check (bench run refused a bad one in every stack's container, after the builds), and a
    float input took nan and inf, as click's FloatRange did in the image: TIMEOUT=nan cut every cell at once and
    recorded it as a timeout."""
    refused(make("-n", "bench-all", "DEVICE=cpu", pair), says)


def test_bench_run_refuses_a_number_that_is_not_finite(tmp_path):
    assert "Invalid value for '--timeout': 'nan' is not a finite number." in cpu_run_refused(tmp_path, "--timeout",
                                                                                             "nan")


@pytest.mark.parametrize("folder", ["", "my results", "it's", 'a"b'])
def test_a_results_dir_that_is_not_one_path_is_refused_first(folder):
    """RESULTS_DIR goes unquoted into the recipes: empty, the preflight wrote /doctor/host.json at the file system's
    root; with a space the preflight's --out split in two, after make -j had started the builds."""
    for goal in ("bench-all", "preflight", "collect"):
        refused(make("-n", goal, "DEVICE=cpu", f"RESULTS_DIR={folder}"),
                f"RESULTS_DIR must be one folder path, without spaces or quotes (got '{folder}')")


@pytest.mark.parametrize("goal", [["cloud-collect", "FROM=s3://bucket/run/"], ["doctor", "STACKS=jax"]])
def test_make_n_runs_no_container_and_writes_nothing(goal, tmp_path):
    """make -n runs a recipe line that names $(MAKE): cloud-collect's collector container ran under -n (its
    `&& $(MAKE) report` shared the line), and doctor's host checks wrote results/doctor/host.json. And FROM with a
    trailing / named the run '' (results/cloud/ itself, results/.csv)."""
    fake = tmp_path / "docker"
    fake.write_text(f'#!/bin/sh\necho "docker $*" >> {tmp_path / "log"}\n')
    fake.chmod(0o755)
    res = tmp_path / "results"
    p = make("-n", *goal, "DEVICE=cpu", f"DOCKER={fake}", f"COMPOSE={fake}", f"RESULTS_DIR={res}")
    assert p.returncode == 0 and not (tmp_path / "log").exists() and not res.exists(), p.stdout + p.stderr
    if goal[0] == "cloud-collect":
        assert f'--dest "{res}/cloud/run"' in p.stdout and "-o /results/run.csv" in p.stdout, p.stdout


@pytest.mark.parametrize("argv, says", [
    (["--run-name", "a b"], "CLOUD_RUN must be one folder name: a letter, digit, _ or @, then letters, digits and "
                            ". _ + = @ ~ - (got 'a b')"),
    (["--run-name", "../x"], "CLOUD_RUN must be one folder name"),
    (["--run-name", "r", "--input", "SET"], "--input 'SET': expected VAR=VALUE"),
])
def test_the_cloud_refuses_a_run_name_or_input_its_vm_could_not_use(argv, says):
    """CLOUD_RUN names the VM's results folder, <bucket>/<run>/<gpu>: 'a b' made a RESULTS_DIR the VM's make refuses
    and '../x' left the run's folder, on a paid VM; and --input SET (no '=') was dropped, unsaid."""
    p = subprocess.run([PY, "-m", "bench.host", "cloud", "launch", "--gpus", "H100", "--bucket", "b", "--dry-run",
                        *argv], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout) == (2, "") and p.stderr.count("\n") == 1 and says in p.stderr, p.stderr


def test_collect_before_any_run_says_what_to_run_first_and_starts_no_container(tmp_path):
    """``make collect`` with no run folder: one line naming the host's folder and ``make bench-all``, exit 2, and no
    collector container (it said ``no such directory: /results/runs/...``, the container's path)."""
    p = make("collect", f"RESULTS_DIR={tmp_path}", "RUN=nothing-here", "COMPOSE=false-compose-never-run")
    assert p.returncode != 0 and "Traceback" not in p.stderr, p.stderr
    assert f"collect: no run nothing-here in {tmp_path}/runs/: make bench-all" in p.stderr, p.stderr
    assert "false-compose-never-run" not in p.stdout + p.stderr


@pytest.mark.parametrize("goal", ["images", "bench-all"])
def test_make_n_images_pulls_and_tags_nothing(goal, tmp_path):
    """``make images`` pulled and tagged on the line that named ``$(MAKE)`` (its builds), so ``make -n images`` (and
    ``make -n bench-all REGISTRY=...``, which takes the images) pulled every image and retagged it. Under -n only
    read-only inspects run; the builds are printed, and bench-all's launcher drives only ``make -n`` runs."""
    fake = tmp_path / "docker"
    fake.write_text(f'#!/bin/sh\necho "docker $*" >> {tmp_path / "log"}\n')
    fake.chmod(0o755)
    res = tmp_path / "results"
    p = make("-n", goal, "DEVICE=cpu", "STACKS=jax", "REGISTRY=registry.example/dlbench", f"DOCKER={fake}",
             f"COMPOSE={fake}", f"RESULTS_DIR={res}")
    calls = (tmp_path / "log").read_text().splitlines() if (tmp_path / "log").exists() else []
    assert p.returncode == 0 and not res.exists(), p.stdout + p.stderr
    assert all(c.startswith("docker image inspect ") for c in calls), calls
    assert f"{fake} build " in p.stdout and "-t dlbench/jax:cpu" in p.stdout, p.stdout


@pytest.mark.parametrize("goal", ["fidelity", "fidelity-jax"])
@pytest.mark.parametrize("workload, says", [
    ("nope", "FIDELITY_WORKLOAD: unknown workload 'nope'"),
    ("cifar10_cnn mnist_mlp", "(got 'cifar10_cnn mnist_mlp')"),
    ("bert", "FIDELITY_WORKLOAD: bert is step-timed (paper suite): fidelity times the fit loop of a classic workload"),
])
def test_a_fidelity_workload_that_is_not_one_workload_is_refused_before_any_container(goal, workload, says):
    """FIDELITY_WORKLOAD=nope went to every stack's container, refused there one by one, after compose started it;
    so did a step-timed one (bert), which the host now refuses from the workload folders' specs (their TIMING)."""
    p = make("-n", goal, "DEVICE=cpu", "STACKS=jax", f"FIDELITY_WORKLOAD={workload}")
    refused(p, says)
    assert "FIDELITY_WORKLOAD is not one workload's name" in p.stderr


def test_compare_of_a_file_not_there_says_so_on_the_host_before_any_container(tmp_path):
    """``make compare A=... B=...`` with a CSV not under RESULTS_DIR: the collector container refused it under its own
    path (/results/...), after compose started it; one line naming the host's file, exit 2, no container."""
    (tmp_path / "a.csv").write_text("run\n")
    for a, b, missing in (("a.csv", "b.csv", "b.csv"), ("x.csv", "a.csv", "x.csv")):
        p = make("compare", f"A={a}", f"B={b}", f"RESULTS_DIR={tmp_path}", "COMPOSE=false-compose-never-run")
        assert p.returncode != 0 and "Traceback" not in p.stderr, p.stderr
        assert p.stderr.startswith(f"compare: no file {tmp_path}/{missing}: A and B name CSVs"), p.stderr
        assert "false-compose-never-run" not in p.stdout + p.stderr


@pytest.mark.parametrize("dry", [True, False])
def test_a_stale_pulled_list_hides_no_build(dry, tmp_path):
    """``make images`` lists the images it pulled in ``results/images/.pulled`` and builds the others; under -n the
    pulls (and the list's reset) do not run, so a list left by a stopped ``make images`` hid the builds a real run
    makes: ``make -n images`` printed no build of jax. Now -n reads no list; a real run resets it first, as before."""
    log = tmp_path / "log"
    fake = tmp_path / "docker"
    fake.write_text(f'#!/bin/sh\necho "docker $*" >> {log}\n')
    fake.chmod(0o755)
    res = tmp_path / "results"
    (res / "images").mkdir(parents=True)
    (res / "images" / ".pulled").write_text("jax\n")
    p = make(*(["-n"] if dry else []), "images", "DEVICE=cpu", "STACKS=jax", f"DOCKER={fake}", f"COMPOSE={fake}",
             f"RESULTS_DIR={res}")
    built = p.stdout if dry else log.read_text()
    assert p.returncode == 0 and "-t dlbench/jax:cpu" in built and "-t dlbench/collector:latest" in built, built


@pytest.mark.parametrize("folder", ["with space", "it's"])
@pytest.mark.parametrize("goal", [["preflight"], ["-n", "bench-all"], ["help"]])
def test_a_checkout_under_a_path_with_a_space_is_refused_before_anything_runs(folder, goal, tmp_path):
    """The checkout's path goes unquoted into the recipes (the default RESULTS_DIR, ...): cloned into
    "/tmp/with space/repo", make preflight ran the doctor with ``--out /tmp/with space/...``, which refused
    ``space/repo/results/doctor/host.json``. make now refuses such a checkout in one line, whatever the goal."""
    checkout = tmp_path / folder / "repo"
    (checkout / "images").mkdir(parents=True)
    for name in ("Makefile", "images/stacks.mk"):
        (checkout / name).write_text((ROOT / name).read_text())
    (checkout / "bench").symlink_to(ROOT / "bench")
    fake = tmp_path / "docker"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    p = subprocess.run(["make", "--no-print-directory", *goal, "DEVICE=cpu", f"PYTHON={PY}", f"DOCKER={fake}",
                        f"COMPOSE={fake}"], cwd=checkout, capture_output=True, text=True, timeout=120)
    refused(p, f"this checkout's path '{checkout}' holds a space or a quote, which make cannot quote in every recipe")
    assert p.stdout == "" and not (checkout / "results").exists(), p.stdout
