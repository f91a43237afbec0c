"""cloud/setup.sh and cloud/run.sh, the SkyPilot task's steps on the VM, run offline against fake system tools:
each fake logs its argv to one file, and "installing" a package copies its fakes onto the PATH, so the tests see
which commands the scripts issue, in order, on a bare VM, on one with Docker but no toolkit, and on one with
both."""

import os

import pytest

from tests.helpers.cloud_vm import INSTALLABLE, ROOT, RUN, SETUP, VM

KEYRING = "/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg"
LIST = "/etc/apt/sources.list.d/nvidia-container-toolkit.list"


def sudo(*cmd: str) -> list[str]:
    """The log of ``sudo cmd``: sudo's line, then the command's own."""
    return [f"sudo {' '.join(cmd)}", " ".join(cmd)]


DRIVER = ["nvidia-smi -L"]
PYTHON = ["python3 -c import sys; sys.exit(sys.version_info < (3, 10))"]
DAEMON_UP = sudo("docker", "info")
DOCKER_INSTALL = ["curl -fsSL https://get.docker.com -o <tmp>/get-docker.sh", "sudo sh <tmp>/get-docker.sh"]  # sh: real
APT_UPDATE = sudo("apt-get", "update", "-qq")
TOOLKIT_INSTALL = [  # NVIDIA's install guide: its key, its repository signed by that key, then apt
    "curl -fsSL https://nvidia.github.io/libnvidia-container/gpgkey -o <tmp>/gpgkey",
    *sudo("gpg", "--dearmor", "--yes", "-o", KEYRING, "<tmp>/gpgkey"),
    "curl -fsSL https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list -o "
    "<tmp>/toolkit.list",
    *sudo("tee", LIST),
    *APT_UPDATE, "sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nvidia-container-toolkit",
    "apt-get install -y -qq nvidia-container-toolkit"]
RUNTIMES = sudo("docker", "info", "--format", "{{json .Runtimes}}")
CONFIGURE = [*sudo("nvidia-ctk", "runtime", "configure", "--runtime=docker"), *sudo("systemctl", "restart", "docker")]
GROUP = ["id -un", "id -nG ubuntu"]
DONE = sudo("docker", "--version")


def test_a_bare_vm_gets_the_tools_docker_and_the_toolkit_from_nvidias_repository_in_order(tmp_path):
    vm = VM(tmp_path)
    p = vm.run(SETUP)
    assert p.returncode == 0, p.stderr
    assert vm.calls() == [
        *DRIVER, *APT_UPDATE,
        "sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq make git python3 curl gnupg",
        "apt-get install -y -qq make git python3 curl gnupg", *PYTHON,
        *DOCKER_INSTALL, *DAEMON_UP, *TOOLKIT_INSTALL, *RUNTIMES, *CONFIGURE,
        *GROUP, *sudo("usermod", "-aG", "docker", "ubuntu"), *DONE]
    assert (vm.state / "tee.in").read_text() == (  # the install guide's sed: the list names the key
        f"deb [signed-by={KEYRING}] https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) /\n")
    assert list(vm.tmp.iterdir()) == []  # downloads removed


def test_a_vm_with_docker_but_no_toolkit_gets_the_toolkit_alone(tmp_path):
    vm = VM(tmp_path, installed=("make", "git", "python3", "curl", "gnupg", "docker"), state=("docker-group",))
    p = vm.run(SETUP)
    assert p.returncode == 0, p.stderr
    assert vm.calls() == [*DRIVER, *PYTHON, *DAEMON_UP, *TOOLKIT_INSTALL, *RUNTIMES, *CONFIGURE, *GROUP, *DONE]


def test_a_vm_with_docker_and_the_configured_toolkit_installs_nothing(tmp_path):
    vm = VM(tmp_path, installed=tuple(INSTALLABLE), state=("docker-group", "nvidia-runtime"))
    p = vm.run(SETUP)
    assert p.returncode == 0, p.stderr
    assert vm.calls() == [*DRIVER, *PYTHON, *DAEMON_UP, *RUNTIMES, *GROUP, *DONE]


def test_a_toolkit_not_yet_configured_for_docker_is_configured_not_reinstalled(tmp_path):
    vm = VM(tmp_path, installed=tuple(INSTALLABLE), state=("docker-group",))
    p = vm.run(SETUP)
    assert p.returncode == 0, p.stderr
    assert vm.calls() == [*DRIVER, *PYTHON, *DAEMON_UP, *RUNTIMES, *CONFIGURE, *GROUP, *DONE]


def test_a_stopped_docker_daemon_is_started(tmp_path):
    vm = VM(tmp_path, installed=tuple(INSTALLABLE), state=("docker-group", "nvidia-runtime"))
    (vm.bin / "docker").write_text((vm.bin / "docker").read_text().replace("  info) ", "  info) exit 1;"))
    assert vm.run(SETUP).returncode == 0
    assert vm.calls()[:6] == [*DRIVER, *PYTHON, *DAEMON_UP, *sudo("systemctl", "start", "docker")]


def test_setup_stops_with_one_line_on_kubernetes_or_without_a_driver(tmp_path):
    vm = VM(tmp_path)
    p = vm.run(SETUP, KUBERNETES_SERVICE_HOST="10.0.0.1")
    assert p.returncode == 1 and "make cloud-k8s" in p.stderr and len(p.stderr.splitlines()) == 1
    assert vm.calls() == []  # nothing touched
    (vm.bin / "nvidia-smi").unlink()
    p = vm.run(SETUP)
    assert p.returncode == 1 and "no NVIDIA driver" in p.stderr and len(p.stderr.splitlines()) == 1
    assert vm.calls() == []


ENVS = {"SUITE": "paper", "STACKS": "keras3-jax pytorch", "SIZE": "full", "REPEATS": "3", "SEED": "7",
        "RUN_NAME": "paper-1", "PRICE_PER_HOUR": "2.5", "REGISTRY": "ghcr.io/o/dlbench"}


@pytest.mark.parametrize("in_group", [True, False], ids=["docker-group", "sudo"])
def test_run_makes_doctor_then_bench_all_into_the_bucket_folder_of_this_gpu(tmp_path, in_group):
    vm = VM(tmp_path, installed=tuple(INSTALLABLE), state=("docker-group",) if in_group else ())
    bucket = tmp_path / "bucket"
    p = vm.run(RUN, str(bucket), **ENVS)
    assert p.returncode == 0, p.stderr
    out = bucket / "paper-1" / "NVIDIA-H100-80GB-HBM3"
    assert out.is_dir()
    doctor = ["make", "doctor", "DEVICE=gpu", f"RESULTS_DIR={out}", "GIT_COMMIT=0123abc"]
    bench = ["make", "bench-all", "DEVICE=gpu", "SUITE=paper", "STACKS=keras3-jax pytorch", "SIZE=full", "REPEATS=3",
             "SEED=7", f"RESULTS_DIR={out}", "PRICE_PER_HOUR=2.5", "REGISTRY=ghcr.io/o/dlbench", "GIT_COMMIT=0123abc",
             "HISTORY=off"]  # the bucket's FUSE mount takes no SQLite writes: the history is made at home
    expected = [" ".join(doctor), " ".join(bench)] if in_group else [*sudo(*doctor), *sudo(*bench)]
    assert [c for c in vm.calls() if c.startswith(("make", "sudo make"))] == expected


@pytest.mark.parametrize(("state", "named"), [("commit", "0123abc-dirty.5f1e0a9c3b2d"), ("no-head", "unknown")])
def test_run_names_the_code_as_the_one_commit_tool_does(tmp_path, state, named):
    """SkyPilot's workdir copies the tree as it is. run.sh read ``git status`` itself and marked an edited bench/
    ``-dirty`` alone, so two different edits of one commit read the same; it now gives both makes what
    ``python3 -m bench.host commit`` prints (bench.core.commit, the one definition), ``unknown`` where it names none."""
    vm = VM(tmp_path, installed=tuple(INSTALLABLE), state=("docker-group",))
    if state == "commit":
        (vm.state / "commit").write_text(named + "\n")
    else:
        (vm.state / "no-head").touch()
    p = vm.run(RUN, str(tmp_path / "bucket"), **ENVS)
    assert p.returncode == 0, p.stderr
    makes = [c for c in vm.calls() if c.startswith("make")]
    assert len(makes) == 2 and all(f"GIT_COMMIT={named}" in c.split() for c in makes), makes
    assert "python3 -m bench.host commit" in vm.calls()


@pytest.mark.parametrize("cooldown", ["60", "0", None])
def test_run_reads_the_idle_temperature_before_the_doctor_heats_the_gpu(tmp_path, cooldown):
    """The cooldown's baseline is read (fake nvidia-smi) before make doctor's GEMM probe and given to bench-all, only
    where a COOLDOWN above 0 uses it (else each stack's bench run would say it was not used)."""
    vm = VM(tmp_path, installed=tuple(INSTALLABLE), state=("docker-group",))
    vm._fake(vm.bin, "nvidia-smi", 'case "$*" in *temperature.gpu*) echo "36, GPU-0";; *query-gpu=name*) echo "GPU";; '
                                   'esac')
    envs = ENVS if cooldown is None else {**ENVS, "COOLDOWN": cooldown, "PASS_VARS": "COOLDOWN"}
    p = vm.run(RUN, str(tmp_path / "bucket"), **envs)
    assert p.returncode == 0, p.stderr
    calls = vm.calls()
    bench = [c for c in calls if c.startswith("make bench-all")]
    assert len(bench) == 1
    if cooldown != "60":
        assert not any("temperature.gpu" in c for c in calls) and "IDLE_TEMP_C" not in bench[0]
        return
    temp = next(i for i, c in enumerate(calls) if "temperature.gpu" in c)
    doctor = next(i for i, c in enumerate(calls) if c.startswith("make doctor"))
    assert temp < doctor and " IDLE_TEMP_C=36 " in bench[0] and " COOLDOWN=60 " in bench[0]


def test_run_without_its_settings_says_which_and_runs_nothing(tmp_path):
    vm = VM(tmp_path, installed=tuple(INSTALLABLE))
    p = vm.run(RUN, str(tmp_path / "bucket"), **{k: v for k, v in ENVS.items() if k != "RUN_NAME"})
    assert p.returncode != 0 and "RUN_NAME" in p.stderr and len(p.stderr.splitlines()) == 1
    assert not any("make" in c for c in vm.calls())


def test_the_scripts_are_executable_and_the_task_runs_them_on_the_vm():
    for script in (SETUP, RUN):
        assert os.access(script, os.X_OK), script
    task = (ROOT / "cloud" / "dlbench.sky.yaml").read_text()
    assert "setup: bash cloud/setup.sh\n" in task and "run: bash cloud/run.sh /results-bucket\n" in task
    assert "image_id" not in task.replace("`image_id: docker:...`", "")
