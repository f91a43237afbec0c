"""One request, one identity: a cell run with other inputs is another record, and resuming never returns a record
made with other inputs (a batch-64 run after the default run once printed "already ok, skipped")."""

import json

import pytest

from bench.core.atomic import write_json_atomic
from bench.results.cell import Cell
from bench.results.record import new_record, result_path
from bench.run import plan, runfolder, runner
from tests.helpers.tables import table_rows
from tests.helpers.worker import bench, run_one_of


def test_a_batch_64_run_beside_the_default_run_is_a_second_record(tmp_path, fake_worker, capsys):
    out = tmp_path / "run"
    base = ["run", "--stack", "pytorch", "--workload", "mnist_mlp", "--device", "cpu", "--out", str(out)]
    assert bench(*base) == 0
    assert bench(*base, "--batch-size", "64", "--epochs", "5") == 0
    text = capsys.readouterr().out
    assert "already ok, skipped" not in text
    records = {p.name: json.loads(p.read_text()) for p in (out / "pytorch").glob("*.json")}
    assert set(records) == {"pytorch__classic__mnist_mlp__fit__smoke__default.json",
                            "pytorch__classic__mnist_mlp__fit__smoke__default__batch_size=64+epochs=5.json"}
    small = records["pytorch__classic__mnist_mlp__fit__smoke__default__batch_size=64+epochs=5.json"]
    assert small["batch_size"] == 64 and len(small["metrics"]["epoch_s"]) == 5
    assert records["pytorch__classic__mnist_mlp__fit__smoke__default.json"]["batch_size"] == 128
    assert bench(*base, "--batch-size", "64", "--epochs", "5") == 0  # the same request again resumes
    assert "already ok, skipped" in capsys.readouterr().out


def test_default_ids_keep_their_names():
    cells = plan.expand(["pytorch"], "classic", "smoke", "cpu", ["mnist_mlp"])
    assert [c.id for c in cells] == ["pytorch__classic__mnist_mlp__fit__smoke__default"]
    paper = plan.expand(["pytorch"], "paper", "full", "gpu", ["bert"], ["fit"], batch_size=4)
    assert [c.id for c in paper] == ["pytorch__paper__bert__fit__full__bs4"]  # the variant names the batch


@pytest.mark.parametrize("kw, suffix", [
    (dict(batch_size=64), "batch_size=64"), (dict(epochs=3), "epochs=3"), (dict(data="synthetic"), "data=synthetic"),
    (dict(batch_size=32, epochs=3, data="real"), "batch_size=32+epochs=3+data=real"),
])
def test_every_measurement_input_off_its_default_is_named_in_the_id(kw, suffix):
    [c] = plan.expand(["pytorch"], "classic", "full", "gpu", ["mnist_mlp"], **kw)
    assert c.id == f"pytorch__classic__mnist_mlp__fit__full__default__{suffix}"
    assert "/" not in c.id and " " not in c.id


def test_paper_steps_and_sequence_length_are_named():
    [c] = plan.expand(["pytorch"], "paper", "full", "gpu", ["bert"], ["fit"], batch_size=4, steps=7, seq_len=128)
    assert c.id == "pytorch__paper__bert__fit__full__bs4__steps=7+seq_len=128"


def test_an_override_equal_to_the_default_is_the_default_cell():
    [default] = plan.expand(["pytorch"], "classic", "full", "gpu", ["mnist_mlp"])
    [same] = plan.expand(["pytorch"], "classic", "full", "gpu", ["mnist_mlp"], batch_size=128, epochs=20)
    assert same.id == default.id and same.inputs == default.inputs and same.inputs.named == ()


@pytest.mark.parametrize("suite, kw, msg", [
    ("classic", dict(steps=5), "--steps applies to the paper suite"),
    ("classic", dict(seq_len=64), "--seq-len applies to the paper suite"),
    ("paper", dict(epochs=3), r"--epochs applies to the epoch suites \(classic, tuning\)"),
])
def test_an_input_the_suite_never_reads_is_an_error(suite, kw, msg):
    with pytest.raises(plan.PlanError, match=msg):
        plan.expand(["pytorch"], suite, "full", "gpu", **kw)


def legacy(tmp_path, cell: Cell, **fields) -> None:
    """A record written by the old code at the default id, made with other inputs."""
    rec = new_record(cell)
    rec.update(status="ok", repeats={"n": 1}, **fields)
    write_json_atomic(result_path(tmp_path, cell), rec)


@pytest.mark.parametrize("fields, why", [
    (dict(batch_size=64), "batch_size 64, not 128"),
    (dict(batch_size=128, metrics={"epoch_s": [0.1] * 5}), "epochs 5, not 20"),
    (dict(batch_size=128, data={"requested": "synthetic"}), "data.requested 'synthetic', not 'auto'"),
    (dict(device="gpu"), "device 'gpu', not 'cpu'"),
    (dict(cell_id="pytorch__classic__mnist_mlp__fit__full__default__epochs=3"), "cell_id"),
])
def test_resume_never_returns_a_record_made_with_other_inputs(tmp_path, fields, why):
    [cell] = plan.expand(["pytorch"], "classic", "full", "cpu", ["mnist_mlp"])
    legacy(tmp_path, cell, **fields)
    assert runfolder.RunFolder(tmp_path).existing(cell) is None
    assert why in runfolder.RunFolder(tmp_path).mismatch(cell)


def test_resume_returns_a_record_made_with_the_same_inputs(tmp_path):
    [cell] = plan.expand(["pytorch"], "classic", "full", "cpu", ["mnist_mlp"])
    legacy(tmp_path, cell, batch_size=128, data={"requested": "auto"}, metrics={"epoch_s": [0.1] * 20})
    assert runfolder.RunFolder(tmp_path).existing(cell).status == "ok"


def test_a_run_holding_both_records_collects_compares_and_reports_them_apart(tmp_path, fake_worker):
    """The two records of the sequence above, in one run folder, stay two rows everywhere after the record: the CSV,
    ``bench compare`` (which refused a CSV holding one cell twice) and the classic table (one row each)."""
    from bench.results.collect import collect
    from bench.results.compare import compare
    from bench.results.report.classic import classic_section
    from bench.results.report.common import Footnotes

    out = tmp_path / "run"
    base = ["run", "--stack", "pytorch", "--workload", "mnist_mlp", "--device", "cpu", "--out", str(out)]
    assert bench(*base) == 0 and bench(*base, "--batch-size", "64") == 0
    df, bad = collect(out, tmp_path / "run.csv")
    assert not bad and len(df) == 2
    cmp = compare(df, df)
    assert sorted(cmp["inputs"]) == ["", "batch_size=64"] and (cmp["ratio"] == 1.0).all()
    table = [r[0] for r in table_rows("\n".join(classic_section(df, Footnotes()))) if r[0].startswith("mnist_mlp")]
    assert table == ["mnist_mlp", "mnist_mlp (batch_size=64)"]


def test_a_record_made_by_other_code_is_measured_again(tmp_path, fake_worker, capsys, monkeypatch):
    """A run folder holding records of an older commit (e.g. results committed before a method changed) never
    resumes from them: the cell runs again with the code in use; a record of this commit resumes."""
    monkeypatch.setattr(runfolder, "_this_commit", lambda: "new")
    out = tmp_path / "run"
    base = ["run", "--stack", "pytorch", "--workload", "mnist_mlp", "--device", "cpu", "--out", str(out)]
    path = out / "pytorch" / "pytorch__classic__mnist_mlp__fit__smoke__default.json"
    assert bench(*base) == 0
    rec = json.loads(path.read_text())
    write_json_atomic(path, {**rec, "env": {"git_commit": "old"}})
    capsys.readouterr()
    assert bench(*base) == 0
    assert "already ok, skipped" not in capsys.readouterr().out
    write_json_atomic(path, {**json.loads(path.read_text()), "env": {"git_commit": "new"}})
    assert bench(*base) == 0
    assert "already ok, skipped" in capsys.readouterr().out


@pytest.mark.parametrize(("recorded", "running", "reused"), [
    ("abc-dirty.111111111111", "abc-dirty.222222222222", False),  # two different edits of one commit
    ("abc-dirty.111111111111", "abc-dirty.111111111111", True),   # the same edits
    ("abc-dirty", "abc-dirty.111111111111", False),  # a record from before the hash: its edits are not known
    ("abc-dirty", "abc-dirty", True),  # two records from before the hash compare as they did
    ("abc-unchecked", "abc-unchecked", True),  # one build's rounds: the image's string (the record says unchecked)
    ("abc-unchecked", "abc", False),
])
def test_a_resumed_run_reuses_a_record_only_of_the_same_code(tmp_path, monkeypatch, recorded, running, reused):
    """Resuming compared the commit strings alone, and every path marked an edited tree ``<HEAD>-dirty``, so two
    different edits' cells were mixed in one run folder as one code's. The record of other (or unknown) code is
    measured again, and the line says which code made it."""
    monkeypatch.setattr(runfolder, "_this_commit", lambda: running)
    (cell,) = plan.expand(["pytorch"], "classic", "smoke", "cpu", ["mnist_mlp"])
    path = result_path(tmp_path, cell)
    path.parent.mkdir(parents=True)
    write_json_atomic(path, {**new_record(cell), "status": "ok", "env": {"git_commit": recorded}})
    why = runfolder.RunFolder(tmp_path).mismatch(cell)
    assert (why is None) == reused, why
    if not reused:
        assert f"env.git_commit {recorded!r}" in why


NOW = {"native": False, "packages": {"torch": "2.13.0", "numpy": "2.3.4"}, "pins": {}}


@pytest.mark.parametrize(("env", "why"), [
    ({"packages": {"torch": "2.10.0", "numpy": "2.3.4"}}, "env.packages: torch '2.10.0', not '2.13.0'"),
    ({"packages": {"torch": "2.13.0"}}, "env.packages: numpy None, not '2.3.4'"),  # a package the image lost
    ({"native": True, "packages": NOW["packages"]}, "env.native True, not False"),  # a checkout's run
    ({"pins": {"keras": "3.14.1"}}, "env.pins: keras '3.14.1', not None"),
    ({"packages": {f"nvidia-{i}": "1" for i in range(5)}}, "(and 4 more)"),  # one line, however many differ
])
def test_a_resumed_run_reuses_a_record_only_of_the_same_software(tmp_path, monkeypatch, env, why):
    """A resume compared inputs, GPU and code, never the software: a run folder resumed on an image rebuilt with
    another lock, or natively on other framework versions, kept the old cells beside new ones as one run's. A record
    measured on other packages (or in a checkout, not an image) is measured again, and the line says what differs."""
    monkeypatch.setattr(runfolder, "_this_software", lambda stack: NOW)
    (cell,) = plan.expand(["pytorch"], "classic", "smoke", "cpu", ["mnist_mlp"])
    write_json_atomic(result_path(tmp_path, cell), {**new_record(cell), "status": "ok", "env": env})
    assert runfolder.RunFolder(tmp_path).existing(cell) is None
    assert why in runfolder.RunFolder(tmp_path).mismatch(cell)


@pytest.mark.parametrize("env", [
    {**NOW, "image_id": "sha256:old", "image_digest": "sha256:olddigest"},  # a rebuild of the same locks: reused
    {"git_commit": None},  # a record from before env.packages (or whose env capture failed): read as it was
    {"error": "OSError: no /proc"},
])
def test_a_record_of_the_same_or_unrecorded_software_resumes(tmp_path, monkeypatch, env):
    monkeypatch.setattr(runfolder, "_this_software", lambda stack: NOW)
    (cell,) = plan.expand(["pytorch"], "classic", "smoke", "cpu", ["mnist_mlp"])
    write_json_atomic(result_path(tmp_path, cell), {**new_record(cell), "status": "ok", "env": env})
    assert runfolder.RunFolder(tmp_path).existing(cell).status == "ok"


def test_the_software_compared_is_what_a_cell_records(monkeypatch):
    """``_this_software`` reads what ``environment.capture`` and ``stack_pins`` put in a cell's ``env``."""
    from bench.instruments import environment

    runfolder._this_software.cache_clear()
    monkeypatch.delenv("BENCH_IMAGE", raising=False)
    now = runfolder._this_software("pytorch")
    runfolder._this_software.cache_clear()
    env = environment.capture(frameworks=False)
    assert now == {"native": env["native"], "packages": env["packages"], "pins": {}}


def test_a_run_resumed_on_other_packages_measures_the_cell_again(tmp_path, fake_worker, capsys):
    out = tmp_path / "run"
    base = ["run", "--stack", "pytorch", "--workload", "mnist_mlp", "--device", "cpu", "--out", str(out)]
    path = out / "pytorch" / "pytorch__classic__mnist_mlp__fit__smoke__default.json"
    assert bench(*base) == 0
    rec = json.loads(path.read_text())
    write_json_atomic(path, {**rec, "env": {"packages": {"torch": "0.0.1-an-older-lock"}}})
    capsys.readouterr()
    assert bench(*base) == 0
    text = capsys.readouterr().out
    assert "already ok, skipped" not in text and "env.packages: " in text and "'0.0.1-an-older-lock', not" in text


@pytest.mark.parametrize("commit", ["abc", "abc-dirty.111111111111", "abc-unchecked"])
def test_the_rounds_of_one_run_write_the_cells_record_whatever_its_code_identity(tmp_path, monkeypatch, commit):
    """make bench-all runs ``bench run --round k`` per round, each reading the earlier rounds' repeats. An
    ``-unchecked`` identity (git too slow at the image's build) was refused as foreign code on every round, so the
    cell's record was never written and collect found no cell of that image."""
    monkeypatch.setattr(runfolder, "_this_commit", lambda: commit)
    monkeypatch.setattr(runfolder, "_this_software", lambda stack: {"native": True, "packages": {}, "pins": {}})
    monkeypatch.setattr(runner, "run_one", run_one_of(commit))
    (cell,) = plan.expand(["pytorch"], "classic", "smoke", "cpu", ["mnist_mlp"])
    for rnd in (1, 2, 3):
        runner.run_cells([cell], tmp_path, repeats=3, round_=rnd, schedules={"pytorch": {"round": rnd, "position": 1}})
    assert result_path(tmp_path, cell).exists()
