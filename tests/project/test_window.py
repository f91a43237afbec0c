"""The GPU window's files (docs/gpu-window.md): the wheels it carries, the environment its rehearsal mirrors, its
script's inputs and the one command line the device takes. The rehearsal itself: tests/window/."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def pins(path: Path) -> dict[str, str]:
    """name -> version of the ``name==version`` lines of a requirements-style file (comments dropped)."""
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            assert name not in out, f"{path.name}: {name} twice"
            out[name] = version
    return out


def lock_versions() -> dict[str, set[str]]:
    """name -> the versions the images' GPU locks pin."""
    found: dict[str, set[str]] = {}
    for lock in ROOT.glob("images/*/requirements-gpu.lock"):
        for name, version in re.findall(r"^([A-Za-z0-9_.-]+)==([^ \\]+)", lock.read_text(), re.M):
            found.setdefault(name.lower(), set()).add(version)
    return found


def test_carried_wheels_are_the_images_versions():
    locked = lock_versions()
    for name, version in pins(ROOT / "window/wheels.txt").items():
        assert version in locked.get(name, set()), f"{name}=={version}: no image pins it ({locked.get(name)})"


def test_carried_wheels_are_what_the_host_lacks():
    host = {line.strip() for line in (ROOT / "window/host-names.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")}
    carried = set(pins(ROOT / "window/wheels.txt"))
    # typing-extensions: the host's version is not known, and pydantic-core needs at least 4.16.0 (its METADATA)
    assert carried & host == {"typing-extensions"}, f"carried though the host has them: {sorted(carried & host)}"
    assert {"pydantic", "keras", "diffusers"} <= carried


def test_rehearsal_environment_holds_only_the_hosts_packages():
    host = {line.strip() for line in (ROOT / "window/host-names.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")}
    listed = pins(ROOT / "window/host-packages.txt")
    assert set(listed) <= host, sorted(set(listed) - host)
    # the versions the host reported, as the issue and KINDS.md give them
    assert {k: listed[k] for k in ("torch", "jax", "jaxlib", "transformers", "numpy")} == {
        "torch": "2.11.0", "jax": "0.11.2", "jaxlib": "0.11.2", "transformers": "5.17.0", "numpy": "2.5.2"}


def test_device_command_fits_the_device():
    """docs/gpu-window.md's command lines are what the device runs: each under its 2,000 characters."""
    text = (ROOT / "docs/gpu-window.md").read_text()
    commands = re.findall(r"^(\S*\s*bash window/run\.sh.*)$", text, re.M)
    assert commands and all(len(c) < 2000 for c in commands)


@pytest.mark.parametrize("args, message", [
    (["--device", "tpu", "/tmp/x"], "--device gpu or cpu"),
    (["--size", "huge", "/tmp/x"], "--size full or smoke"),
    (["--parts", "env bogus", "/tmp/x"], "unknown part bogus"),
    (["--frobnicate", "/tmp/x"], "unknown option --frobnicate"),
    ([], "give one OUT folder"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    p = subprocess.run(["bash", str(ROOT / "window/run.sh"), *args], capture_output=True, text=True)
    assert p.returncode == 2 and message in p.stderr and len(p.stderr.strip().splitlines()) == 1


def _make_n(*args: str) -> str:
    """What ``make -n`` would run for ``args`` (the Makefile evaluated here, nothing executed)."""
    return subprocess.run(["make", "-s", "-n", *args, f"PYTHON={sys.executable}"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout


def test_the_docs_name_the_window_parts_make_test_rehearses():
    """README said `make test` rehearses the window's "first parts"; it runs WINDOW_PARTS' cover scope."""
    parts = re.search(r'--parts "([^"]*)"', _make_n("window-rehearse")).group(1).split()
    assert parts and "classic" not in parts
    for page in ("README.md", "docs/gpu-window.md"):
        m = re.search(r"`make test`:? its ((?:`\w+`(?:, | and )?)+) parts", (ROOT / page).read_text())
        assert m, f"{page} names the parts `make test` rehearses"
        assert re.findall(r"`(\w+)`", m.group(1)) == parts, page


def test_the_docs_quote_the_line_make_window_command_prints():
    printed = re.search(r"^echo '(.*)'$", _make_n("window-command"), flags=re.M).group(1)
    line = re.sub(r"BENCH_GIT_COMMIT=\S*", "BENCH_GIT_COMMIT=<commit>", printed)
    assert line == "BENCH_GIT_COMMIT=<commit> bash window/run.sh $OUT"
    assert f"(`{line}`)" in (ROOT / "README.md").read_text()
    assert f"\n{line}\n" in (ROOT / "docs/gpu-window.md").read_text()


def test_gpu_window_page_gives_each_parts_limit_as_run_sh_does():
    limits = dict(re.findall(r"\[(\w+)\]=(\d+)", re.search(r"declare -A limit=\((.*)\)",
                                                            (ROOT / "window/run.sh").read_text()).group(1)))
    page = (ROOT / "docs/gpu-window.md").read_text()
    assert dict(re.findall(r"^\| `(\w+)` \| (\d+) \|", page, flags=re.M)) == limits
    assert f"Together {sum(map(int, limits.values()))} s" in page
