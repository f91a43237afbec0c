"""Modules stay small: every Python module of the package (``bench/``) and of the scripts beside it (``window/``,
``cloud/``) has at most 400 lines, so that one holds one concern (``bench/run/probe.py`` had grown to 406 lines
with two: the GPU probes and the measured GEMM peak). One test per module, named by its path; a failure names the
file and its count."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The folders whose Python modules are held to the limit.
FOLDERS = ("bench", "window", "cloud")
MAX_LINES = 400


def modules(root: Path) -> list[Path]:
    """The ``*.py`` files under ``root``'s ``FOLDERS`` (at any depth; a folder that does not exist holds none)."""
    return sorted(p for folder in FOLDERS for p in (root / folder).rglob("*.py"))


def line_count(path: Path) -> int:
    """The lines of ``path`` as ``wc -l`` counts them for a file that ends with a newline."""
    return len(path.read_text(encoding="utf-8").splitlines())


def too_long(path: Path, root: Path = ROOT) -> str | None:
    """One line naming ``path`` (relative to ``root``) and its count when it has more than ``MAX_LINES``; else None."""
    n = line_count(path)
    return f"{path.relative_to(root)} has {n} lines, more than {MAX_LINES}: split it by concern" if n > MAX_LINES \
        else None


MODULES = modules(ROOT)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_module_has_at_most_400_lines(path):
    problem = too_long(path)
    assert problem is None, problem


def test_the_scan_finds_the_package_and_the_windows_scripts():
    names = {str(p.relative_to(ROOT)) for p in MODULES}
    assert {"bench/run/probe.py", "bench/core/request.py", "window/summary.py"} <= names
    assert all(p.suffix == ".py" for p in MODULES)


def test_a_module_over_the_limit_is_named_with_its_count(tmp_path):
    folder = tmp_path / "bench" / "run"
    folder.mkdir(parents=True)
    (folder / "big.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (folder / "ok.py").write_text("x = 1\n" * MAX_LINES)
    (tmp_path / "window").mkdir()
    (tmp_path / "window" / "run.sh").write_text("echo\n" * (MAX_LINES + 1))  # a shell script is no module
    found = modules(tmp_path)
    assert [p.name for p in found] == ["big.py", "ok.py"]
    assert [too_long(p, tmp_path) for p in found] == [
        "bench/run/big.py has 401 lines, more than 400: split it by concern", None]
