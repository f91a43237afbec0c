import subprocess
import sys
from pathlib import Path

import pytest

from bench.cli import main

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bench", *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args, needle", [
    (["run", "--stack", "nope"], "unknown stack 'nope'"),
    (["run", "--stack", "pytorch", "--suite", "nope"], "unknown suite 'nope'"),
    (["run", "--stack", "pytorch", "--workload", "resnet"], "unknown workload 'resnet'"),
    (["run", "--stack", "pytorch", "--task", "dance"], "unknown task 'dance'"),
    (["run", "--stack", "pytorch", "--variant", "fast"], "no cell of the selection has variant 'fast'"),
    (["run", "--stack", "pytorch", "--size", "huge"], "'huge' is not one of"),
    (["run", "--stack", "pytorch", "--batch-size", "-1"], "-1 is not in the range"),
    (["run", "--stack", "pytorch", "--epochs", "two"], "'two' is not a valid integer"),
    (["run", "--stack", "pytorch", "--timeout", "0"], "0.0 is not in the range"),
    (["run", "--suite", "classic"], "Missing option '--stack'"),
    (["collect", "/no/such/dir", "-o", "x.csv"], "no such directory"),
    (["frobnicate"], "No such command"),
])
def test_bad_input_is_one_line_and_exit_2(args, needle):
    p = run_cli(*args)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("bench: error: ")
    assert needle in lines[0]
    assert "Traceback" not in p.stderr


def test_list_names_every_stack_and_workload(capsys):
    with pytest.raises(SystemExit) as e:
        main(["list"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for name in ("keras2-tf", "keras3-tf", "keras3-jax", "keras3-torch", "pytorch", "jax-bench",
                 "mnist_mlp", "mnist_cnn", "mnist_hierarchical_rnn", "cifar10_cnn", "babi_rnn", "mnist_cnn_tuning"):
        assert name in out
    assert "sizes: smoke, full" in out
    # each workload with its parameter count: the 2017 mnist_cnn and, under its own name, the tuning study's CNN
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith("  ")}
    assert "params 1,199,882" in lines["mnist_cnn"] and "Adadelta lr 1 rho 0.95 eps 1e-08" in lines["mnist_cnn"]
    assert "params 563,018" in lines["mnist_cnn_tuning"]
    assert "tuning: mnist_cnn_tuning" in out
    assert "params total 108,311,810" in lines["bert"]


def test_device_gpu_without_gpu_is_a_clear_error(monkeypatch):
    from bench.run import session

    monkeypatch.setattr(session, "planning_probe", lambda sid: [])
    with pytest.raises(SystemExit) as e:
        main(["run", "--stack", "pytorch", "--device", "gpu"])
    assert e.value.code == 2


def test_device_auto_without_gpu_falls_back_to_cpu():
    from bench.run import session

    assert session.resolve_device("cpu", ["pytorch"]) == "cpu"


def test_bench_help_the_makefile_head_and_the_package_description_name_every_default_stack(capsys):
    import re
    from pathlib import Path

    from bench.core.stacks import DEFAULT_STACKS

    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    root = Path(__file__).resolve().parents[1]
    head = "".join(line for line in (root / "Makefile").read_text().splitlines(keepends=True)[:4])
    description = re.search(r'^description = "(.*)"$', (root / "pyproject.toml").read_text(), flags=re.M)
    assert description
    for text in (" ".join(capsys.readouterr().out.split()), head, description.group(1)):
        for sid in DEFAULT_STACKS:
            assert re.search(rf"(?<![\w-]){re.escape(sid)}(?![\w-])", text), (sid, text[:80])


def test_python_m_bench_cli_is_the_same_command():
    p = subprocess.run([sys.executable, "-m", "bench.cli", "list", "--stacks"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and p.stdout.split()[:2] == ["keras2-tf", "keras3-tf"]


def test_bench_site_without_plotly_is_one_line_and_exit_2(monkeypatch, tmp_path, capsys):
    pytest.importorskip("pandas")
    for name in ("plotly", "plotly.offline", "plotly.graph_objects", "plotly.io"):
        monkeypatch.setitem(sys.modules, name, None)  # `import plotly...` raises ImportError, as where it is missing
    with pytest.raises(SystemExit) as e:
        main(["site", str(ROOT / "results" / "rounds-smoke"), "-o", str(tmp_path / "site")])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bench: error: site needs") and "plotly" in err[0], err
    assert not (tmp_path / "site").exists()  # made and checked writable first, removed again when refused


@pytest.mark.parametrize("command", ["report", "site"])
def test_bench_report_and_site_without_tabulate_are_one_line_and_exit_2(monkeypatch, tmp_path, capsys, command):
    """The report's tables are tabulate's (``md_table``): without it, one line before anything is written."""
    pytest.importorskip("pandas")
    monkeypatch.setitem(sys.modules, "tabulate", None)  # `import tabulate` raises ImportError, as where it is missing
    with pytest.raises(SystemExit) as e:
        main([command, str(ROOT / "results" / "rounds-smoke"), "-o", str(tmp_path / "out")])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"bench: error: {command} needs") and "tabulate" in err[0], err
    assert not (tmp_path / "out").exists()  # made and checked writable first, removed again when refused


BANNER = ["!" * 78, "!! CPU MODE: no GPU in use (--device cpu). Size: smoke.",
          "!! These numbers are smoke tests of the harness, NOT GPU benchmarks.",
          "!! Every result row carries device=cpu and this note.", "!" * 78]


def test_a_runs_lines_are_its_messages_alone_progress_on_stdout_the_banner_on_stderr(tmp_path, fake_worker, capsys,
                                                                                      caplog):
    """What the bodies log (bench.cli.console) prints as print did: no level, no time; and only once, though the
    root logger has a handler (caplog's, as a framework's basicConfig would add one)."""
    import logging

    caplog.set_level(logging.INFO)
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as e:
        main(["run", "--stack", "pytorch", "--workload", "mnist_mlp", "--device", "cpu", "--out", str(out)])
    assert e.value.code == 0
    got = capsys.readouterr()
    assert got.err.splitlines() == BANNER
    assert got.out.splitlines() == [
        f"run: 1 cells x 1 repeat(s) -> {out}",
        "[1/1] pytorch mnist_mlp fit default (smoke, cpu): ok  1.00 ms/step, first epoch 0.1 s, process "
        + got.out.split(", process ")[1].split(",")[0] + ", data=synthetic",
        f"summary: 1 ok -> {out}"]
    assert not [r for r in caplog.records if r.name.startswith("bench")]  # not printed a second time
    bench_log = logging.getLogger("bench")  # put back as it was: a later caller's logging is its own
    assert bench_log.handlers == [] and bench_log.propagate and bench_log.level == logging.NOTSET


def one_good_one_bad(tmp_path: Path) -> Path:
    """A run folder with one committed record and a file that is not JSON (``bench collect`` skips it, warning)."""
    src = ROOT / "results" / "cpu-smoke" / "runs" / "classic-smoke-cpu" / "pytorch"
    runs = tmp_path / "runs"
    runs.mkdir()
    good = next(src.glob("*.json"))
    (runs / good.name).write_text(good.read_text())
    (runs / "x.json").write_text("{")
    return runs


def test_a_commands_body_reports_through_its_modules_logger(tmp_path, caplog, capsys):
    """Outside the CLI nothing is printed: a caller (a test) reads the lines from logging."""
    import logging

    from bench.results import actions

    pytest.importorskip("pandas")
    caplog.set_level(logging.INFO, logger="bench")
    runs = one_good_one_bad(tmp_path)
    actions.collect_run(runs, tmp_path / "o.csv", None, True)
    assert {r.name for r in caplog.records} == {"bench.results.actions"}
    assert [r.levelname for r in caplog.records] == ["WARNING", "INFO", "INFO", "INFO"]
    assert caplog.messages[0].startswith(f"skipped {runs / 'x.json'}: not valid JSON")
    assert caplog.messages[1] == f"wrote {tmp_path / 'o.csv'}: 1 rows, 1 file(s) skipped"
    assert capsys.readouterr().out == ""


def test_warnings_and_progress_keep_their_order_on_one_stream(tmp_path):
    """stderr's "skipped" line before stdout's "wrote" line, as the body wrote them: each line is flushed."""
    pytest.importorskip("pandas")
    runs = one_good_one_bad(tmp_path)
    p = subprocess.run([sys.executable, "-m", "bench", "collect", str(runs), "-o", str(tmp_path / "o.csv"),
                        "--no-history"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert p.returncode == 0, p.stdout
    lines = p.stdout.splitlines()
    assert lines[0].startswith(f"skipped {runs / 'x.json'}: not valid JSON")
    assert lines[1] == f"wrote {tmp_path / 'o.csv'}: 1 rows, 1 file(s) skipped"
    assert lines[2] == "ms/step (mean over steady-state steps):"


def test_list_aligns_its_columns_to_the_longest_stack_id_and_workload(capsys):
    """A derived stack's id (``keras3-jax--keras-3.14.1--keras-hub-0.29.1``) ran past the 13-character column and
    pushed its service and title out of line with the other stacks'."""
    from bench.core.stacks import STACKS
    from bench.models.workloads import WORKLOADS

    with pytest.raises(SystemExit):
        main(["list"])
    out = capsys.readouterr().out.splitlines()
    stacks = [ln for ln in out if ln.startswith("  ") and ln.split()[0] in STACKS]
    assert len(stacks) == len(STACKS) and max(len(s) for s in STACKS) > 13
    assert len({ln.index(" service ") for ln in stacks}) == 1  # the service column starts at one offset
    titles = {ln.index(STACKS[ln.split()[0]].title) for ln in stacks}
    assert len(titles) == 1
    loads = [ln for ln in out if ln.startswith("  ") and ln.split()[0] in WORKLOADS]
    assert len({len(ln) - len(ln[2:].split(maxsplit=1)[1]) for ln in loads}) == 1  # descriptions start at one offset
