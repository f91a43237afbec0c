"""What ``bench report`` reads: the CSVs named, or those directly in a folder named (``load_runs``)."""

import pytest

from bench import cli


def test_a_folder_of_run_folders_is_refused_naming_the_run_folders(tmp_path, capsys):
    """``bench report results`` where ``results/<run>/`` was meant: one line, exit 2, naming the folders that hold
    CSVs (before: only "run `make collect` first", though they were collected)."""
    for run in ("b-run", "a-run"):
        (tmp_path / run).mkdir()
        (tmp_path / run / f"{run}.csv").write_text("not read\n")
    (tmp_path / "plots").mkdir()
    with pytest.raises(SystemExit) as e:
        cli.main(["report", str(tmp_path), "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"`bench report {tmp_path / 'a-run'}`" in err and str(tmp_path / "b-run") in err and "plots" not in err
    assert not (tmp_path / "out").exists()  # the -o folder made for the check is removed again
