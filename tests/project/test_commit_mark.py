"""The code a record names (``env.git_commit``) is one definition, ``bench.core.commit``: a cell asks it in-process,
and the Makefile (``GIT_COMMIT``, the images' build argument), the GPU window's fallback (``window/run.sh``) and the
cloud VM (``cloud/run.sh``, tests/project/test_cloud_scripts.py) through ``python3 -m bench.host commit``. HEAD where
``bench/`` is as HEAD holds it; ``-dirty.<hash of the edits>`` where it differs, so two different edits of one commit
never read as the same code."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from bench.core.commit import DIRTY, HASH_HEX, UNCHECKED, identity
from bench.instruments.environment import git_commit

ROOT = Path(__file__).resolve().parents[2]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A checkout holding this bench package (so ``python3 -m bench.host`` runs in it), a .gitignore of
    ``__pycache__/`` and a README, committed."""
    repo = tmp_path_factory.mktemp("template")
    shutil.copytree(ROOT / "bench", repo / "bench", ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "README.md").write_text("r\n")
    (repo / ".gitignore").write_text("__pycache__/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "one")
    return repo


@pytest.fixture
def repo(template: Path, tmp_path: Path) -> tuple[Path, str]:
    """A fresh copy of ``template``; (its folder, HEAD)."""
    shutil.copytree(template, tmp_path / "repo", symlinks=True)
    return tmp_path / "repo", _git(tmp_path / "repo", "rev-parse", "HEAD")


def _makefile_commit(repo: Path) -> str:
    """The Makefile's own HOST_CLI and GIT_COMMIT assignments, evaluated in ``repo``."""
    text = (ROOT / "Makefile").read_text()
    lines = [re.search(rf"^{name} [:?]?= .*?(?<!\\)\n", text, re.S | re.M) for name in ("PYTHON", "HOST_CLI",
                                                                                     "GIT_COMMIT")]
    assert all(lines), "the Makefile assigns PYTHON, HOST_CLI and GIT_COMMIT"
    (repo / "probe.mk").write_text("".join(m.group(0) for m in lines if m) + "show:\n\t@echo $(GIT_COMMIT)\n")
    made = subprocess.run(["make", "-s", "-f", "probe.mk", "show"], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()
    (repo / "probe.mk").unlink()
    return made


def _window_commit(repo: Path) -> str:
    """window/run.sh's own fallback block (no BENCH_GIT_COMMIT given), run by bash with ``here`` = ``repo``."""
    text = (ROOT / "window" / "run.sh").read_text()
    fallback = text[text.index("if [[ -z ${BENCH_GIT_COMMIT:-} ]]"):text.index("export BENCH_GIT_COMMIT")]
    script = f'usage() {{ echo "$*" >&2; exit 2; }}\nhere={repo}\nunset BENCH_GIT_COMMIT\n{fallback}\n' \
             'echo "$BENCH_GIT_COMMIT"\n'
    return subprocess.run(["bash", "-c", script], check=True, capture_output=True, text=True).stdout.strip()


def _every_path(repo: Path) -> set[str]:
    """What a cell (in-process), the Makefile and the window's fallback name for ``repo``'s code: one value."""
    named = {git_commit({}, repo / "bench"), _makefile_commit(repo), _window_commit(repo)}
    assert len(named) == 1, named
    return named


def test_two_different_edits_of_one_commit_are_two_identities_on_every_path(repo):
    """Every path marked an edited bench/ ``<HEAD>-dirty`` alone, so a resumed run mixed the cells of two different
    edits as one code's. Now the edits' hash follows the mark: other edits, another identity; the same edits again,
    the same one; a change outside bench/ or an ignored file (``__pycache__``) changes nothing."""
    repo, head = repo
    words = repo / "bench" / "core" / "words.py"
    original = words.read_text()
    assert _every_path(repo) == {head}
    (repo / "README.md").write_text("changed outside bench/\n")
    (repo / "bench" / "core" / "__pycache__").mkdir(exist_ok=True)
    (repo / "bench" / "core" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert _every_path(repo) == {head}
    words.write_text(original + "# one edit\n")
    (first,) = _every_path(repo)
    assert re.fullmatch(rf"{head}{DIRTY}\.[0-9a-f]{{{HASH_HEX}}}", first)
    words.write_text(original + "# another edit\n")
    (second,) = _every_path(repo)
    assert second != first and second.startswith(head + DIRTY + ".")
    words.write_text(original + "# one edit\n")
    assert _every_path(repo) == {first}


def test_new_deleted_and_staged_files_are_edits_and_a_reverted_one_is_not(repo):
    repo, head = repo
    seen = set()
    (repo / "bench" / "new.py").write_text("")  # untracked
    seen |= _every_path(repo)
    _git(repo, "add", "bench/new.py")  # staged: the same content, the same identity
    assert _every_path(repo) == seen
    _git(repo, "rm", "-q", "--cached", "bench/new.py")
    (repo / "bench" / "new.py").unlink()
    (repo / "bench" / "results" / "report" / "gpus.py").unlink()  # deleted
    seen |= _every_path(repo)
    _git(repo, "checkout", "-q", "--", "bench")
    assert _every_path(repo) == {head}
    assert len(seen) == 2 and all(s.startswith(head + DIRTY + ".") for s in seen)


def test_the_make_target_names_the_commit_as_a_cell_would():
    """``make git-commit`` prints GIT_COMMIT, which agrees with what ``env.git_commit`` asks git for here."""
    made = subprocess.run(["make", "-s", "--no-print-directory", "git-commit"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout.strip()
    assert made == git_commit({}, ROOT / "bench")


def test_outside_a_checkout_every_path_says_so(tmp_path: Path):
    """No HEAD (the GPU window's copy of the tree has no .git): the tool prints nothing and exits 1, the Makefile
    names ``unknown``, the window's fallback stops with its usage line."""
    shutil.copytree(ROOT / "bench", tmp_path / "bench", ignore=shutil.ignore_patterns("__pycache__"))
    p = subprocess.run(["python3", "-m", "bench.host", "commit"], cwd=tmp_path, capture_output=True, text=True)
    assert (p.returncode, p.stdout) == (1, "") and "names no commit" in p.stderr
    assert identity(tmp_path / "bench") is None and _makefile_commit(tmp_path) == "unknown"
    with pytest.raises(subprocess.CalledProcessError) as e:
        _window_commit(tmp_path)
    assert e.value.returncode == 2 and "set BENCH_GIT_COMMIT" in e.value.stderr


def test_a_status_git_cannot_give_keeps_the_head_it_read(repo, tmp_path: Path, monkeypatch):
    """A listing of the changes past its 5 s (a cold network file system) dropped the HEAD already read: the record
    named no commit and the resume check stopped comparing them. HEAD is kept, marked unchecked."""
    repo, head = repo
    fake = tmp_path / "bin"
    fake.mkdir()
    real = shutil.which("git")
    (fake / "git").write_text(f'#!/bin/sh\ncase "$1" in diff|ls-files|status) exit 128;; esac\nexec {real} "$@"\n')
    (fake / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:/usr/bin:/bin")
    assert git_commit({}, repo / "bench") == head + UNCHECKED
