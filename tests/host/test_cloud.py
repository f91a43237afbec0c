"""Cloud and Kubernetes runs, offline: the sky commands, the task spec, the Kubernetes Job, collecting."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bench.core import rounds
from bench.core.stacks import CONTAINER_ENV, DEFAULT_STACKS, STACKS
from bench.host import cloud, imagetag
from bench.host.__main__ import main as host_cli

ROOT = Path(__file__).resolve().parents[2]


def test_one_job_per_gpu_type_each_with_every_stack():
    cmds = cloud.launch_commands("paper", ["A100", "H100:1"], DEFAULT_STACKS, "full", 3, "bkt", "run1", spot=True)
    assert len(cmds) == 2
    for cmd, accel in zip(cmds, ("A100:1", "H100:1"), strict=True):
        assert cmd[:4] == ["sky", "jobs", "launch", cloud.TASK_YAML] and cmd[cmd.index("--gpus") + 1] == accel
        assert "--use-spot" in cmd and f"STACKS={' '.join(DEFAULT_STACKS)}" in cmd  # never split by stack
        assert "BUCKET=bkt" in cmd and "RUN_NAME=run1" in cmd and "REPEATS=3" in cmd
    for bad in (lambda: cloud.launch_commands("paper", [], DEFAULT_STACKS, "full", 3, "b", "r"),
                lambda: cloud.launch_commands("paper", ["H100"], ["mxnet"], "full", 3, "b", "r"),
                lambda: cloud.launch_commands("paper", ["H100"], DEFAULT_STACKS, "full", 3, "", "r")):
        with pytest.raises(ValueError):
            bad()


def test_make_cloud_dry_run_prints_the_exact_commands():
    p = subprocess.run(["make", "-s", "cloud", "SUITE=paper", "GPUS=A100 H100", "BUCKET=my-bucket",
                        "CLOUD_RUN=paper-1", "DRY_RUN=1", f"PYTHON={sys.executable}"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("sky ")]
    assert lines == [" ".join(__import__("shlex").quote(a) for a in c) for c in cloud.launch_commands(
        "paper", ["A100", "H100"], DEFAULT_STACKS, "full", 3, "my-bucket", "paper-1")]
    p = subprocess.run(["make", "-s", "cloud", "SUITE=paper", "DRY_RUN=1", f"PYTHON={sys.executable}"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "GPU type" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.cover
def test_the_skypilot_task_spec_validates_with_skypilots_own_parser():
    sky = pytest.importorskip("sky")
    spec = yaml.safe_load((ROOT / cloud.TASK_YAML).read_text())
    task = sky.Task.from_yaml_config(spec, env_overrides=[("BUCKET", "dlbench-test"), ("SUITE", "paper")])
    assert task.envs["SUITE"] == "paper"
    (res,) = task.resources
    assert res.accelerators == {"H100": 1} and res.disk_size == 256
    # On the VM itself: an `image_id: docker:...` would run setup and run inside that container, which has no
    # Docker daemon for make and compose (skypilot 0.14.1 sky/provision/docker_utils.py installs rsync, curl,
    # wget, patch, openssh-server, python3-pip and fuse there, and nothing else).
    assert res.image_id is None and not res.extract_docker_image()
    assert task.setup == "bash cloud/setup.sh" and task.run == "bash cloud/run.sh /results-bucket"
    assert "make bench-all" in (ROOT / "cloud" / "run.sh").read_text()  # tests/project/test_cloud_scripts.py runs both


def test_the_kubernetes_job_runs_every_stack_in_rounds_on_one_gpu():
    job = cloud.k8s_job("classic", DEFAULT_STACKS, "ghcr.io/o/dlbench", "NVIDIA-H100-80GB-HBM3", repeats=2)
    pod = job["spec"]["template"]["spec"]
    names = [c["name"] for c in pod["initContainers"]]
    assert names == [f"r{r}-{s}" for r in (1, 2) for s in rounds.order(DEFAULT_STACKS, 1, r)]
    assert all(c["resources"]["limits"]["nvidia.com/gpu"] == 1 for c in pod["initContainers"])
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}} in pod["volumes"]
    assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == "dlbench-results"
    first = pod["initContainers"][0]
    stack = first["name"].split("-", 1)[1]
    assert first["image"] == f"ghcr.io/o/dlbench/{stack}:{imagetag.tag(stack, 'gpu')}"  # as make push tags it
    assert first["args"][first["args"].index("--round") + 1] == "1"
    assert pod["containers"][0]["image"] == f"ghcr.io/o/dlbench/collector:{imagetag.tag('collector', 'latest')}"
    with pytest.raises(ValueError):
        cloud.k8s_job("classic", DEFAULT_STACKS, "", "NVIDIA-H100-80GB-HBM3")


#: The Job's value of each variable compose takes from the host (``${NAME:-default}``) where it is not compose's
#: default: what make exports on a GPU host (docs/cloud.md).
JOB_FROM_HOST = {"BENCH_DEVICE": "gpu"}


def test_the_kubernetes_job_gives_every_bench_container_composes_environment_and_folders():
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    pod = cloud.k8s_job("paper", list(STACKS), "ghcr.io/o/dlbench", "NVIDIA-A100-SXM4-40GB", repeats=1)
    pod = pod["spec"]["template"]["spec"]
    assert len(pod["initContainers"]) == len(STACKS)
    for c in pod["initContainers"]:
        stack = STACKS[c["name"].split("-", 1)[1]]
        service = compose["services"][stack.service]  # x-bench merged in
        want, got = service["environment"], {e["name"]: e["value"] for e in c["env"]}
        # the stack's own variables are its image's (compose gets them from the image, the Job sets them too)
        assert set(got) == set(want) | set(stack.env), stack.id
        assert all(got[k] == stack.build_args()[k] for k in stack.env)
        for key, value in want.items():
            host = re.fullmatch(r"\$\{(\w+):-(.*)\}", value)
            if host:
                assert host.group(1) == key and got[key] == JOB_FROM_HOST.get(key, host.group(2)), key
            else:
                assert got[key] == value, key
        paths = {m["mountPath"] for m in c["volumeMounts"]}
        assert paths == {v.rsplit(":", 1)[1] for v in service["volumes"]} | {"/dev/shm"}, stack.id
        assert service["ipc"] == "host"  # compose shares the host's /dev/shm; the Job mounts memory there
    kinds = {v["name"]: v for v in pod["volumes"]}
    assert kinds["results"]["persistentVolumeClaim"] == {"claimName": "dlbench-results"}
    assert kinds["datasets"] == {"name": "datasets", "emptyDir": {}} and "emptyDir" in kinds["cuda-cache"]
    assert kinds["shm"]["emptyDir"]["medium"] == "Memory"


def test_the_container_environment_gives_jax_95_percent_of_the_gpu_through_the_pinned_jaxlib(monkeypatch):
    """jaxlib 0.10.2 builds the CUDA plugin's allocator options from the environment (pure Python, run here on the
    CPU); XLA's BFC pool is total memory x memory_fraction, 0.75 when the option is absent, preallocated or not."""
    xla_client = pytest.importorskip("jaxlib.xla_client")
    for var in ("XLA_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_PREALLOCATE",
                "XLA_PYTHON_CLIENT_ALLOCATOR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    assert "memory_fraction" not in xla_client.generate_pjrt_gpu_plugin_options()  # XLA's default cap: 0.75
    for var in CONTAINER_ENV:
        monkeypatch.setenv(var.name, var.job)
    monkeypatch.delenv("XLA_PYTHON_CLIENT_PREALLOCATE")  # the container sets none: the source's allocator
    options = xla_client.generate_pjrt_gpu_plugin_options()
    # BFC with XLA's own preallocation default (jaxlib 0.10.2 passes "preallocate" only when the variable is set)
    assert options["allocator"] == "default" and "preallocate" not in options
    assert options["memory_fraction"] == pytest.approx(0.95)


def test_the_kubernetes_job_pulls_by_digest_what_make_push_listed_and_its_records_name_it(tmp_path, capsys):
    """An image in make push's list is pulled by its digest and its container gets ``BENCH_IMAGE_DIGEST``, which a
    record keeps as ``env.image_digest`` (as make bench-all passes it); one missing is pulled by tag, and said. A
    line of the older form (a digest without its tag) is not used: its image's inputs may have changed since."""
    from bench.instruments.environment import capture

    jax, torch = (f"ghcr.io/o/dlbench/{s}:{imagetag.tag(s, 'gpu')}" for s in ("keras3-jax", "pytorch"))
    listed = tmp_path / "gpu.txt"
    listed.write_text(f"{jax} ghcr.io/o/dlbench/keras3-jax@sha256:aa\nghcr.io/o/dlbench/pytorch@sha256:bb\n")
    assert cloud.read_digests(listed) == {jax: "ghcr.io/o/dlbench/keras3-jax@sha256:aa"}
    job = cloud.k8s_job("classic", ["keras3-jax", "pytorch"], "ghcr.io/o/dlbench", "NVIDIA-H100-80GB-HBM3",
                        repeats=1, digests=cloud.read_digests(listed))
    by_stack = {c["name"].split("-", 1)[1]: c for c in job["spec"]["template"]["spec"]["initContainers"]}
    assert by_stack["keras3-jax"]["image"] == "ghcr.io/o/dlbench/keras3-jax@sha256:aa"
    env = {e["name"]: e["value"] for e in by_stack["keras3-jax"]["env"]}
    assert capture(env, frameworks=False)["image_digest"] == "ghcr.io/o/dlbench/keras3-jax@sha256:aa"
    assert by_stack["pytorch"]["image"] == torch and "BENCH_IMAGE_DIGEST" not in str(by_stack["pytorch"]["env"])
    assert cloud.unpinned(job) == [torch, f"ghcr.io/o/dlbench/collector:{imagetag.tag('collector', 'latest')}"]
    host_cli(["cloud", "k8s", "--stacks", "keras3-jax pytorch", "--registry", "ghcr.io/o/dlbench",
              "--gpu-product", "NVIDIA-H100-80GB-HBM3", "--digests", str(listed)])
    out = capsys.readouterr()
    assert "@sha256:aa" in out.out and f"note: no digest for {torch}," in out.err


def test_the_kubernetes_job_validates_against_the_kubernetes_schema():
    kv = pytest.importorskip("kubernetes_validate")
    job = cloud.k8s_job("paper", DEFAULT_STACKS, "ghcr.io/o/dlbench", "NVIDIA-A100-SXM4-80GB")
    kv.validate(job, "1.30", strict=True)


def test_collect_copies_a_folder_and_names_the_bucket_tools(tmp_path):
    assert cloud.collect_from("s3://b/run", tmp_path) == ["aws", "s3", "sync", "s3://b/run", str(tmp_path)]
    assert cloud.collect_from("gs://b/run", tmp_path)[:3] == ["gcloud", "storage", "rsync"]
    with pytest.raises(ValueError):
        cloud.collect_from("ftp://x", tmp_path)
    src = tmp_path / "bucket" / "run1" / "NVIDIA-H100" / "runs"
    src.mkdir(parents=True)
    (src / "a.json").write_text("{}")
    host_cli(["cloud", "collect", "--source", str(tmp_path / "bucket" / "run1"), "--dest", str(tmp_path / "home")])
    assert (tmp_path / "home" / "NVIDIA-H100" / "runs" / "a.json").exists()


def fake_docker(tmp_path, pullable=()):
    """A docker that logs its calls, prints a digest for inspect (and for the inputs label the tag of the name asked
    about: every image built from the inputs its tag names), and can pull only ``pullable`` names."""
    log = tmp_path / "docker.log"
    fake = tmp_path / "docker"
    fake.write_text(f"""#!/bin/sh
echo "$@" >> {log}
case "$1" in
  image) case "$4 $5" in  # every image built as tagged
    *dlbench.inputs*dlbench/*) s="${{5#dlbench/}}"; {sys.executable} -m bench.host imagetag "${{s%%:*}}" "${{s#*:}}";;
    *dlbench.inputs*) echo "${{5##*:}}";;
    *) echo "${{5%%:*}}@sha256:0123";;
  esac;;
  push) echo "The push refers to repository [${{2%:*}}]"; echo "${{2##*:}}: digest: sha256:0123 size: 2412";;
  pull) case "$3" in {"|".join(f"*/{p}:*" for p in pullable) or "nothing"}) exit 0;; *) exit 1;; esac;;
esac
""")
    fake.chmod(0o755)
    return fake, log


def make(*args):
    return subprocess.run(["make", "-s", *args, f"PYTHON={sys.executable}"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_make_push_tags_every_built_image_by_its_inputs_and_records_its_digest(tmp_path):
    fake, log = fake_docker(tmp_path)
    p = make("push", "REGISTRY=ghcr.io/o/dlbench", "FLAVOR=cpu", f"DOCKER={fake}", f"RESULTS_DIR={tmp_path}")
    assert p.returncode == 0, p.stderr
    from bench.core.stacks import STACKS

    cpu = [s.id for s in STACKS.values() if "cpu" in s.flavors and s.base is None]  # version stacks: not pushed
    calls = log.read_text().splitlines()
    assert f"tag dlbench/{cpu[0]}:cpu ghcr.io/o/dlbench/{cpu[0]}:{imagetag.tag(cpu[0], 'cpu')}" in calls
    assert f"push ghcr.io/o/dlbench/collector:{imagetag.tag('collector', 'latest')}" in calls
    lines = (tmp_path / "images" / "cpu.txt").read_text().splitlines()
    refs = [f"ghcr.io/o/dlbench/{s}:{imagetag.tag(s, 'latest' if s == 'collector' else 'cpu')}"
            for s in [*cpu, "collector"]]
    assert lines == [f"{ref} {ref.rsplit(':', 1)[0]}@sha256:0123" for ref in refs]  # make cloud-k8s reads the pairs
    assert cloud.read_digests(tmp_path / "images" / "cpu.txt") == dict(line.split() for line in lines)
    p = make("push")
    assert p.returncode == 2 and "usage: make push REGISTRY=" in p.stderr


def test_make_push_lists_the_digest_its_push_printed_under_the_name_it_was_given(tmp_path):
    """A Docker Hub name (``docker.io/<user>``, which ``docker image inspect`` shortens to ``<user>/...``) keeps the
    name it was pushed under; a push that prints no digest is an error, not a line without one."""
    fake, _ = fake_docker(tmp_path)
    p = make("push", "REGISTRY=docker.io/me", "FLAVOR=cpu", "PUSH_STACKS=pytorch", f"DOCKER={fake}",
             f"RESULTS_DIR={tmp_path}")
    assert p.returncode == 0, p.stderr
    ref = f"docker.io/me/pytorch:{imagetag.tag('pytorch', 'cpu')}"
    assert (tmp_path / "images" / "cpu.txt").read_text().splitlines()[0] == f"{ref} docker.io/me/pytorch@sha256:0123"
    fake.write_text(fake.read_text().replace("digest: sha256:0123 size: 2412", "Writing manifest"))
    p = make("push", "REGISTRY=ghcr.io/o/dlbench", "FLAVOR=cpu", f"DOCKER={fake}", f"RESULTS_DIR={tmp_path}")
    assert p.returncode != 0 and "pushed, but the push printed no digest" in p.stderr


def test_a_failed_push_keeps_the_last_good_pushs_digest_list(tmp_path):
    """``make push`` wrote its list through ``tee``, which emptied it before the first image: a push that then failed
    (an image not built) left an empty list, and ``make cloud-k8s`` pulled by tag, its records' digest null."""
    fake, _ = fake_docker(tmp_path)
    assert make("push", "REGISTRY=ghcr.io/o/dlbench", "FLAVOR=cpu", "PUSH_STACKS=pytorch", f"DOCKER={fake}",
                f"RESULTS_DIR={tmp_path}").returncode == 0
    listed = tmp_path / "images" / "cpu.txt"
    good = listed.read_text()
    fake.write_text(fake.read_text().replace('case "$1" in', 'case "$1" in\n  tag) exit 1;;'))  # not built
    p = make("push", "REGISTRY=ghcr.io/o/dlbench", "FLAVOR=cpu", "PUSH_STACKS=pytorch", f"DOCKER={fake}",
             f"RESULTS_DIR={tmp_path}")
    assert p.returncode != 0 and listed.read_text() == good and good.strip()
    assert sorted(f.name for f in listed.parent.iterdir()) == ["cpu.txt"]  # no part-written list left behind


def test_images_pulls_what_the_registry_has_and_builds_the_rest(tmp_path):
    fake, log = fake_docker(tmp_path, pullable=("keras3-jax", "collector"))
    p = make("images", "REGISTRY=reg/x", "STACKS=keras3-jax pytorch", "FLAVOR=cpu", "DEVICE=cpu",
             f"DOCKER={fake}", f"RESULTS_DIR={tmp_path}")
    assert p.returncode == 0, p.stderr
    calls = log.read_text().splitlines()
    jax = f"reg/x/keras3-jax:{imagetag.tag('keras3-jax', 'cpu')}"
    assert f"tag {jax} dlbench/keras3-jax:cpu" in calls and f"keras3-jax: pulled {jax}" in p.stdout
    assert any(c.startswith("build ") and "STACK=pytorch" in c for c in calls)  # not in the registry: built
    assert not any(c.startswith("build ") and "STACK=keras3-jax" in c for c in calls)


def test_an_image_tag_changes_with_any_input_and_only_then(tmp_path):
    import shutil

    for rel in ("images", "bench", "pyproject.toml"):
        src = ROOT / rel
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / rel)
    before = imagetag.tag("pytorch", "gpu", tmp_path)
    assert before == imagetag.tag("pytorch", "gpu", ROOT) and before.startswith("gpu-")
    lock = tmp_path / "images" / "pytorch" / "requirements-gpu.lock"
    lock.write_text(lock.read_text() + "\n# changed\n")
    assert imagetag.tag("pytorch", "gpu", tmp_path) != before
    assert imagetag.tag("keras3-jax", "gpu", tmp_path) == imagetag.tag("keras3-jax", "gpu", ROOT)  # not its lock
    # a shared layer's lock is an input of its stacks' images only
    jax, cu12 = imagetag.tag("keras3-jax", "gpu", tmp_path), imagetag.tag("pytorch-cu12", "gpu", tmp_path)
    layer = tmp_path / "images" / "layers" / "tensorflow-gpu.lock"
    layer.write_text(layer.read_text() + "\n# changed\n")
    assert imagetag.tag("keras3-jax", "gpu", tmp_path) != jax and imagetag.tag("pytorch-cu12", "gpu", tmp_path) == cu12
    # a sublayer's lock is an input of its stacks' images, not of the other stacks on its layer
    jax, tf = imagetag.tag("jax", "cpu", tmp_path), imagetag.tag("keras3-tf", "cpu", tmp_path)
    sub = tmp_path / "images" / "layers" / "jax-cpu.lock"
    sub.write_text(sub.read_text() + "\n# changed\n")
    assert imagetag.tag("jax", "cpu", tmp_path) != jax and imagetag.tag("keras3-tf", "cpu", tmp_path) == tf
    with pytest.raises(KeyError, match="its flavors: gpu"):  # no such image: bad input, not a missing file
        imagetag.tag("pytorch-cu12", "cpu")
    (tmp_path / "images" / "pytorch" / "requirements-cpu.lock").unlink()
    with pytest.raises(FileNotFoundError):
        imagetag.tag("pytorch", "cpu", tmp_path)


def test_a_failed_cell_does_not_end_the_kubernetes_job():
    """The audit: under restartPolicy Never a failing init container fails the pod, and `bench run` exits 1 whenever a
    cell did not succeed, so one failed cell ended the comparison (no later stack, round or collector). Each init
    container now goes on past status 1 (its records say what failed), and still fails on 2 (bad input) or worse."""
    import subprocess

    job = cloud.k8s_job("classic", DEFAULT_STACKS, "ghcr.io/o/dlbench", "NVIDIA-H100-80GB-HBM3")
    for c in job["spec"]["template"]["spec"]["initContainers"]:
        assert c["command"] == cloud.KEEP_GOING and c["args"][:2] == ["bench", "run"]
    for status, expected in ((0, 0), (1, 0), (2, 2), (139, 139)):  # the container's command + args, run by sh
        p = subprocess.run([*cloud.KEEP_GOING, "sh", "-c", f"exit {status}"])
        assert p.returncode == expected, status


def test_the_kubernetes_init_container_passes_sigterm_on_to_bench(tmp_path):
    """The kubelet signals a container's first process, the shell: it hands SIGTERM to bench, which records its cell
    as interrupted and exits 143, and waits for it (before: bench never saw it, and was killed after the grace
    period). A program standing for bench says it got the signal in a file, after a moment's work."""
    import signal
    import subprocess
    import time

    seen = tmp_path / "seen"
    bench = ("import signal, sys, time, pathlib\n"
             "def stop(n, f):\n    time.sleep(0.3); pathlib.Path(sys.argv[1]).write_text(str(n)); sys.exit(143)\n"
             "signal.signal(signal.SIGTERM, stop)\nprint('ready', flush=True)\ntime.sleep(30)\n")
    p = subprocess.Popen([*cloud.KEEP_GOING, sys.executable, "-c", bench, str(seen)], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline() == "ready\n"
    start = time.monotonic()
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=10) == 143 and time.monotonic() - start < 5
    assert seen.read_text() == str(int(signal.SIGTERM))


@pytest.mark.parametrize("change, says", [
    (dict(suite="classik"), "SUITE: unknown suite 'classik'"),
    (dict(size="huge"), "SIZE: 'huge' is none of auto, smoke, full"),
    (dict(stacks=["pytorch", "pytorch"]), "a stack is named twice"),
    (dict(repeats=0), "REPEATS: 0 is not at least 1"),
])
def test_a_comparison_the_vm_would_refuse_is_refused_before_a_job_is_launched(change, says):
    """A misspelled suite or size, or a stack named twice, went to SkyPilot (and into the Job) as it was: the VM was
    provisioned, the images built, and make bench-all (or every init container's bench run) failed there."""
    given = dict(suite="classic", stacks=["pytorch", "jax"], size="full", repeats=3) | change
    with pytest.raises(ValueError, match=says):
        cloud.launch_commands(given["suite"], ["H100"], given["stacks"], given["size"], given["repeats"], "b", "r")
    with pytest.raises(ValueError, match=says):
        cloud.k8s_job(given["suite"], given["stacks"], "ghcr.io/o/dlbench", "H100", given["repeats"], given["size"])


def test_cloud_bad_input_and_a_missing_pyyaml_are_one_line_never_a_traceback(tmp_path):
    """Bare python3 (-S: no site-packages, so no PyYAML): k8s checked its input only after importing yaml, so every
    call, a bad one too, ended in ModuleNotFoundError's traceback; a --dest it cannot make did too."""
    (tmp_path / "file").write_text("")
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    for argv, code, says in (
            (["cloud", "k8s", "--registry", "r", "--gpu-product", "p", "--suite", "x"], 2, "unknown suite 'x'"),
            (["cloud", "k8s", "--registry", "r", "--gpu-product", "p"], 1, "needs PyYAML"),
            (["cloud", "collect", "--source", str(tmp_path), "--dest", str(tmp_path / "file" / "d")], 2,
             "cannot make --dest")):
        p = subprocess.run([sys.executable, "-S", "-m", "bench.host", *argv], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == code and p.stderr.count("\n") == 1 and says in p.stderr, p.stderr


@pytest.mark.parametrize("copies", [False, True])
def test_a_failed_sync_leaves_no_empty_folder_it_made_and_keeps_what_it_copied(copies, tmp_path):
    """``make cloud-collect`` with ``aws s3 sync`` failing (no access, a typo in the bucket) left an empty
    results/cloud/<run>/ (and results/cloud/) behind; what a sync copied before it failed is kept."""
    import os

    (tmp_path / "bin").mkdir()
    aws = tmp_path / "bin" / "aws"
    aws.write_text("#!/bin/sh\n" + ('echo r > "$4/part.json"\n' if copies else "") + "exit 1\n")
    aws.chmod(0o755)
    res = tmp_path / "results"
    res.mkdir()
    p = subprocess.run(["make", "-s", "cloud-collect", "FROM=s3://bucket/run1", f"RESULTS_DIR={res}", "DEVICE=cpu",
                        "COMPOSE=false-compose-never-run", f"PYTHON={sys.executable}"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120, env={**os.environ, "PATH": f"{aws.parent}:{os.environ['PATH']}"})
    assert p.returncode != 0 and "aws s3 sync ... exited with status 1" in p.stderr, p.stderr
    assert "false-compose-never-run" not in p.stdout + p.stderr
    left = sorted(str(q.relative_to(res)) for q in res.rglob("*"))
    assert left == (["cloud", "cloud/run1", "cloud/run1/part.json"] if copies else []), left
