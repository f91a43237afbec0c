"""The host's one front door, ``python3 -m bench.host COMMAND``: every host tool is a command of it, defined by the
module that owns it; it runs on the standard library alone, and bad input is one line on stderr and exit 2."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.host import __main__ as front_door

ROOT = Path(__file__).resolve().parents[2]
#: Every host tool; each was once its own module's entry point (bench/host/<tool>.py, bench/core/request.py).
COMMANDS = ("doctor", "launch", "rounds", "stackfiles", "versions", "imagetag", "cloud", "request", "commit")


def host(*args: str, no_site: bool = True) -> subprocess.CompletedProcess[str]:
    """``python3 -m bench.host ARGS`` from the repository root; ``no_site``: without site-packages (``-S``), as the
    host's own Python runs it before anything is installed."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    flags = ["-S"] if no_site else []
    return subprocess.run([sys.executable, *flags, "-m", "bench.host", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def test_help_lists_every_command_with_a_one_line_description():
    p = host("--help")
    assert p.returncode == 0 and p.stderr == ""
    assert p.stdout.startswith("usage: python3 -m bench.host ")
    described = {}
    lines = p.stdout.splitlines()
    for i, line in enumerate(lines):
        words = line.split(maxsplit=1)
        if line.startswith("    ") and not line.startswith("     ") and words[0] in COMMANDS:
            # argparse puts a long name's description on the next line
            described[words[0]] = words[1] if len(words) > 1 else lines[i + 1].strip()
    assert set(described) == set(COMMANDS) and all(described.values()), described
    registered = front_door.parser()._subparsers._group_actions[0].choices
    assert tuple(registered) == COMMANDS


@pytest.mark.parametrize("argv, message", [
    (["frob"], "python3 -m bench.host: error: argument COMMAND: invalid choice: 'frob'"),
    ([], "python3 -m bench.host: error: the following arguments are required: COMMAND"),
    (["rounds", "--round", "0", "pytorch"], "python3 -m bench.host rounds: error: round must be at least 1, got 0"),
    (["launch", "compose", "--stacks", "pytorch", "--rounds", "x"], "argument --rounds: invalid int value: 'x'"),
    (["request", "default", "repeats"], "python3 -m bench.host request: error: the default repeats depends on"),
    (["imagetag", "pytorch"], "the following arguments are required: FLAVOR"),
    (["imagetag", "pytorch2", "gpu"], "python3 -m bench.host imagetag: error: unknown stack 'pytorch2'; known: "),
    (["cloud", "collect", "--source", "ftp://x", "--dest", "/nonexistent", "--dry-run"], "cannot copy from 'ftp://x'"),
])
def test_bad_input_is_one_line_on_stderr_and_exit_2(argv, message):
    p = host(*argv)
    assert p.returncode == 2 and p.stdout == "", p
    assert len(p.stderr.splitlines()) == 1 and message in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_the_old_entry_points_are_gone():
    for module in ("bench.host.doctor", "bench.host.stackfiles", "bench.core.request"):
        p = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True,
                           timeout=60)
        assert p.stdout == "", module  # importing a module runs nothing: no parser, no help


def test_a_command_runs_on_the_standard_library_alone():
    assert host("stackfiles", "--check").returncode == 0
    p = host("request", "default", "repeats", "--device", "gpu")
    assert p.returncode == 0 and p.stdout == "3\n"
    code = ("import sys; from bench.host.__main__ import parser; parser(); "
            "print(sorted({m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names) - {'bench', "
            "'__main__'}))")
    p = subprocess.run([sys.executable, "-S", "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0 and p.stdout.strip() == "[]", p.stderr


def test_each_command_is_defined_by_its_own_module():
    for module in front_door.COMMANDS:
        assert callable(module.add_parser) and callable(module.main), module.__name__
        assert not hasattr(module, "PROG") or module.PROG.startswith("python3 -m bench.host ")
