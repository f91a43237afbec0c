"""A folder a command writes into is checked once, before its work starts (``bench.cli.common.writable_folder``): a
path under a plain file, or a folder the OS refuses to write (PermissionError, as a Docker host folder the
container's user cannot write gives), is one line naming the folder and the OS's reason, exit 2, and nothing is
planned, measured or written. It was a NotADirectoryError (or PermissionError) traceback from the runner's
``work.mkdir`` after planning, and for fidelity after the measurement."""

import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.cli import common, main
from bench.results import actions
from bench.run import probe, session
from bench.run.selftest import run as selftest_run

#: Every command that writes into a folder it is given, with the folder given: ``OUT`` a folder, ``FILE`` a file in
#: it, ``CSV`` an existing collected CSV (a source), ``DIR`` an existing folder.
WRITERS = [
    ("run", ["run", "--stack", "pytorch", "--workload", "mnist_mlp", "--size", "smoke", "--device", "cpu",
             "--out", "OUT"]),
    ("sweep", ["sweep", "bench/run/sweeps/tuning.yaml", "--stack", "pytorch", "--device", "cpu", "--out", "OUT"]),
    ("fidelity", ["fidelity", "--stack", "pytorch", "--workload", "mnist_mlp", "--out", "FILE"]),
    ("doctor", ["doctor", "--stack", "pytorch", "--out", "FILE"]),
    ("selftest", ["selftest", "--out", "FILE"]),
    ("collect", ["collect", "DIR", "-o", "FILE"]),
    ("collect --history", ["collect", "DIR", "-o", "DIR/run.csv", "--history", "FILE"]),
    ("compare", ["compare", "CSV", "CSV", "-o", "FILE"]),
    ("history show", ["history", "show", "-o", "FILE"]),
    ("history export-bmf", ["history", "export-bmf", "-o", "FILE"]),
    ("report", ["report", "CSV", "-o", "OUT"]),
    ("site", ["site", "CSV", "-o", "OUT"]),
]
#: What each command's body is: none of them may be called when its folder is refused.
BODIES = [(session, "run_request"), (session, "run_sweep"), (session, "fidelity"), (probe, "image_checks"),
          (selftest_run, "main"), (actions, "collect_run"), (actions, "compare_runs"), (actions, "history_show"),
          (actions, "history_export_bmf"), (actions, "write_report_for"), (actions, "write_site")]


def bench(*args: str) -> tuple[int, str, str]:
    """``bench ARGS`` through ``bench.cli.main`` in click's ``CliRunner`` isolation: exit code, stdout, stderr."""
    with CliRunner().isolation() as (out, err, _), pytest.raises(SystemExit) as e:
        main(list(args))
    return e.value.code, out.getvalue().decode(), err.getvalue().decode()


@pytest.fixture
def called(monkeypatch):
    """The bodies called (each replaced by one that records its name and does nothing)."""
    seen: list[str] = []
    for owner, name in BODIES:
        monkeypatch.setattr(owner, name, lambda *a, _name=name, **k: seen.append(_name))
    return seen


def argv(args: list[str], tmp_path: Path, folder: Path) -> list[str]:
    """``args`` with ``OUT`` as ``folder``, ``FILE`` a file in it, ``DIR`` and ``CSV`` existing sources."""
    csv = tmp_path / "a.csv"
    csv.write_text("run\n")
    words = {"OUT": str(folder), "FILE": str(folder / "x.json"), "CSV": str(csv), "DIR": str(tmp_path),
             "DIR/run.csv": str(tmp_path / "run.csv")}
    return [words.get(a, a) for a in args]


def refused(code: int, err: str, folder: Path, reason: str) -> bool:
    lines = err.strip().splitlines()
    return (code == 2 and len(lines) == 1 and lines[0].startswith("bench: error: Invalid value for ")
            and repr(str(folder)) in lines[0] and lines[0].endswith(reason) and "Traceback" not in err)


@pytest.mark.parametrize("args", [a for _, a in WRITERS], ids=[n for n, _ in WRITERS])
def test_a_folder_under_a_plain_file_is_one_line_and_exit_2_before_any_work(args, tmp_path, called):
    (tmp_path / "afile").write_text("a plain file\n")
    folder = tmp_path / "afile" / "x"
    code, _, err = bench(*argv(args, tmp_path, folder))
    assert refused(code, err, folder, "Not a directory"), err
    assert called == []


def deny_writes(monkeypatch, denied: Callable[[Path], bool]) -> None:
    """``tempfile.mkstemp`` refuses (permission denied) in the folders ``denied`` picks: tests run as root, where
    chmod denies nothing."""
    mkstemp = tempfile.mkstemp

    def maybe(dir: str, prefix: str, **kw: str) -> tuple[int, str]:
        if denied(Path(dir)):
            raise PermissionError(13, "Permission denied", str(Path(dir) / prefix))
        return mkstemp(dir=dir, prefix=prefix, **kw)

    monkeypatch.setattr(tempfile, "mkstemp", maybe)


@pytest.mark.parametrize("args", [a for _, a in WRITERS], ids=[n for n, _ in WRITERS])
def test_a_folder_the_os_will_not_let_us_write_is_one_line_and_exit_2_before_any_work(args, tmp_path, called,
                                                                                      monkeypatch):
    folder = tmp_path / "readonly"
    deny_writes(monkeypatch, lambda d: d == folder)
    code, _, err = bench(*argv(args, tmp_path, folder))
    assert refused(code, err, folder, "Permission denied"), err
    assert called == []


def test_a_run_without_out_checks_the_default_run_directorys_root(tmp_path, monkeypatch, called):
    (tmp_path / "afile").write_text("a plain file\n")
    monkeypatch.setenv("BENCH_RESULTS_DIR", str(tmp_path / "afile"))
    code, _, err = bench("run", "--stack", "pytorch", "--device", "cpu")
    assert refused(code, err, tmp_path / "afile" / "runs", "Not a directory"), err
    assert "$BENCH_RESULTS_DIR/runs" in err and called == []


def test_a_plain_file_where_the_folder_goes_is_named_as_such(tmp_path, called):
    (tmp_path / "afile").write_text("a plain file\n")
    code, _, err = bench("collect", str(tmp_path), "-o", str(tmp_path / "afile" / "run.csv"))
    assert refused(code, err, tmp_path / "afile", "a file of that name is in the way"), err


def test_the_check_makes_the_folder_and_leaves_nothing_in_it(tmp_path):
    folder = tmp_path / "a" / "b"
    assert common.writable_folder(folder, "'--out'") == folder and folder.is_dir()
    assert list(folder.iterdir()) == []
    with common.output_file(None, "'--out'") as none:
        assert none is None
    with common.output_file(tmp_path / "c" / "x.csv", "'-o'") as file:
        assert file == tmp_path / "c" / "x.csv"
    assert (tmp_path / "c").is_dir() and list((tmp_path / "c").iterdir()) == []


def test_a_refused_folder_leaves_no_folder_it_made_behind(tmp_path, monkeypatch):
    """The check makes the folder with its parents; when the folder then cannot be written, what it made is removed
    (before, a refused ``--out a/b/c`` left ``a/b/c`` empty), and what was there before is kept."""
    from bench.core import atomic

    (tmp_path / "kept").mkdir()
    target = tmp_path / "kept" / "a" / "b"
    deny_writes(monkeypatch, lambda d: d == target)
    assert atomic.unwritable(target) == "Permission denied"
    assert (tmp_path / "kept").is_dir() and list((tmp_path / "kept").iterdir()) == []


def test_an_os_error_raised_by_looking_at_the_path_is_one_line_too(tmp_path, called):
    """A name too long for the file system: ``Path.exists`` raises it (it swallows only not-found errors), as it
    raises permission denied on a parent or a dead FUSE mount's error. The check looked before its ``try``, and
    such a path ended in a traceback."""
    folder = tmp_path / ("x" * 300) / "run"
    code, _, err = bench("run", "--stack", "pytorch", "--device", "cpu", "--out", str(folder))
    assert refused(code, err, folder, "File name too long"), err
    assert called == []


def test_a_dot_dot_in_the_path_never_makes_an_existing_folder_look_new(tmp_path, monkeypatch):
    """``t/new/../keep/x``: ``keep`` exists; read before ``new`` was made, ``t/new/../keep`` looked missing, and a
    refused check removed the existing, empty ``keep``."""
    from bench.core import atomic

    (tmp_path / "keep").mkdir()
    deny_writes(monkeypatch, lambda d: d.name == "x")
    assert atomic.unwritable(tmp_path / "new" / ".." / "keep" / "x") == "Permission denied"
    assert (tmp_path / "keep").is_dir() and not (tmp_path / "new").exists()
    # a link before '..': the OS goes up from where the link points, and so does the check
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real" / "sub")
    monkeypatch.undo()
    assert atomic.unwritable(tmp_path / "link" / ".." / "run") is None
    assert (tmp_path / "real" / "run").is_dir() and not (tmp_path / "run").exists()


def test_a_folder_that_cannot_rename_is_refused_and_keeps_no_probe_file(tmp_path, monkeypatch):
    """Every record is written to a temporary file and renamed into place (``write_json_atomic``): a FUSE bucket
    mount without rename (Mountpoint for S3) passed the old create-and-remove probe and failed every record after
    its cell was measured."""
    from bench.core import atomic

    def no_rename(src: str, dst: str) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(atomic.os, "replace", no_rename)
    assert atomic.unwritable(tmp_path / "bucket") == "Operation not permitted"
    assert not (tmp_path / "bucket").exists()


def test_a_writable_folder_reaches_the_commands_body(tmp_path, called):
    code, _, err = bench("run", "--stack", "pytorch", "--device", "cpu", "--out", str(tmp_path / "run"))
    assert code == 0 and called == ["run_request"], err


RESULT_WRITERS = [(n, a) for n, a in WRITERS if n.split()[0] in ("collect", "compare", "history", "report", "site")]


@pytest.mark.parametrize("args", [a for _, a in RESULT_WRITERS], ids=[n for n, _ in RESULT_WRITERS])
def test_a_results_command_refused_by_its_body_leaves_no_folder_it_made(args, tmp_path, monkeypatch):
    """``bench report``, ``site``, ``collect``, ``compare`` and ``history`` made their ``-o`` folder (and its
    parents) for the writability check, then refused the sources (no bench CSV, an empty run, no history) and left
    the new folders behind, empty. They are removed again; a folder that was there is kept."""
    from bench.core.errors import InputError

    def refuse(*a: object, **k: object) -> None:
        raise InputError("no bench CSV here")

    for owner, name in BODIES:
        monkeypatch.setattr(owner, name, refuse)
    code, _, err = bench(*argv(args, tmp_path, tmp_path / "new" / "out"))
    assert code == 2 and err.strip() == "bench: error: no bench CSV here", err
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("name, args, body", [("doctor", ["doctor", "--stack", "pytorch", "--device", "cpu"],
                                               (probe, "image_checks")),
                                              ("selftest", ["selftest", "--device", "cpu"], (selftest_run, "main"))])
@pytest.mark.parametrize("stop", [KeyboardInterrupt, RuntimeError])
def test_doctor_and_selftest_stopped_before_writing_leave_no_folder_they_made(name, args, body, stop, tmp_path,
                                                                               monkeypatch):
    """``bench doctor --out`` and ``bench selftest --out`` checked the folder with ``writable_file``, which makes it:
    stopped before the record was written (Ctrl-C in the doctor's probe, a crash) they left it behind, empty. They
    now use ``output_file``, as fidelity and report do; a folder that was there before stays."""
    def stopped(*a, **k):
        raise stop("stopped")

    monkeypatch.setattr(*body, stopped)
    (tmp_path / "kept").mkdir()
    with CliRunner().isolation(), pytest.raises((stop, SystemExit)):  # Ctrl-C: exit 130
        main([*args, "--out", str(tmp_path / "kept" / "a" / "b" / "x.json")])
    assert [p.name for p in tmp_path.rglob("*")] == ["kept"]
