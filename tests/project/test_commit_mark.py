"""The commit an image build (the Makefile's ``GIT_COMMIT``) and the GPU window's fallback (``window/run.sh``) hand the
records is marked ``-dirty`` where ``bench/`` differs from it, as ``env.git_commit`` marks one it asks git for."""

import re
import subprocess
from pathlib import Path

from bench.instruments.environment import DIRTY, UNCHECKED, git_commit

ROOT = Path(__file__).resolve().parents[2]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()


def _repo(tmp_path: Path) -> tuple[Path, str]:
    """A git repository holding bench/a.py and a README, committed; (its folder, HEAD)."""
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "a.py").write_text("x = 1\n")
    (tmp_path / "README.md").write_text("r\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "one")
    return tmp_path, _git(tmp_path, "rev-parse", "HEAD")


def _makefile_commit(repo: Path) -> str:
    """The Makefile's own GIT_COMMIT assignment, evaluated in ``repo``."""
    text = (ROOT / "Makefile").read_text()
    line = re.search(r"^GIT_COMMIT := .*?(?<!\\)\n", text, re.S | re.M)
    assert line, "the Makefile assigns GIT_COMMIT"
    (repo / "probe.mk").write_text(line.group(0) + "show:\n\t@echo $(GIT_COMMIT)\n")
    return subprocess.run(["make", "-s", "-f", "probe.mk", "show"], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def test_an_image_built_from_a_changed_bench_folder_names_its_commit_dirty(tmp_path: Path):
    repo, head = _repo(tmp_path)
    assert _makefile_commit(repo) == head
    (repo / "README.md").write_text("changed outside bench/\n")
    assert _makefile_commit(repo) == head
    (repo / "bench" / "a.py").write_text("x = 2\n")
    assert _makefile_commit(repo) == head + DIRTY
    _git(repo, "checkout", "-q", "bench/a.py")
    (repo / "bench" / "new.py").write_text("")
    assert _makefile_commit(repo) == head + DIRTY


def _window_commit(repo: Path) -> str:
    """window/run.sh's own fallback block (no BENCH_GIT_COMMIT given), run by bash with ``here`` = ``repo``."""
    text = (ROOT / "window" / "run.sh").read_text()
    fallback = text[text.index("if [[ -z ${BENCH_GIT_COMMIT:-} ]]"):text.index("export BENCH_GIT_COMMIT")]
    script = f'usage() {{ echo "$*" >&2; exit 2; }}\nhere={repo}\nunset BENCH_GIT_COMMIT\n{fallback}\n' \
             'echo "$BENCH_GIT_COMMIT"\n'
    return subprocess.run(["bash", "-c", script], check=True, capture_output=True, text=True).stdout.strip()


def test_the_windows_fallback_commit_is_marked_dirty_too(tmp_path: Path):
    repo, head = _repo(tmp_path)
    assert _window_commit(repo) == head
    (repo / "bench" / "a.py").write_text("x = 2\n")
    assert _window_commit(repo) == head + DIRTY


def test_the_make_target_names_the_commit_as_a_cell_would():
    """``make git-commit`` prints GIT_COMMIT, which agrees with what ``env.git_commit`` asks git for here."""
    made = subprocess.run(["make", "-s", "--no-print-directory", "git-commit"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout.strip()
    assert made == git_commit({}, ROOT / "bench")


def test_a_status_git_cannot_give_keeps_the_head_it_read(tmp_path: Path, monkeypatch):
    """A ``git status`` past its 5 s (a cold network file system) dropped the HEAD already read: the record named no
    commit and the resume check stopped comparing them. HEAD is kept, marked unchecked."""
    repo, head = _repo(tmp_path / "repo")
    fake = tmp_path / "bin"
    fake.mkdir()
    real = subprocess.run(["bash", "-c", "command -v git"], capture_output=True, text=True).stdout.strip()
    (fake / "git").write_text(f'#!/bin/sh\n[ "$1" = status ] && exit 128\nexec {real} "$@"\n')
    (fake / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:/usr/bin:/bin")
    assert git_commit({}, repo) == head + UNCHECKED
