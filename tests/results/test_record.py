import json

import pytest

from bench.core.atomic import write_json_atomic
from bench.results.cell import Cell
from bench.results.record import SCHEMA_VERSION, RecordError, new_record, read_record, result_path


def cell(**kw):
    base = dict(stack="pytorch", suite="classic", workload="mnist_mlp", task="fit", size="smoke",
                device="cpu")
    return Cell(**{**base, **kw})


def test_cell_id_and_path(tmp_path):
    c = cell()
    assert c.id == "pytorch__classic__mnist_mlp__fit__smoke__default"
    assert result_path(tmp_path, c) == tmp_path / "pytorch" / f"{c.id}.json"
    assert Cell.from_dict(json.loads(json.dumps(c.to_dict()))) == c


def test_atomic_write_round_trip_leaves_no_temp_files(tmp_path):
    rec = new_record(cell())
    path = tmp_path / "a" / "r.json"
    write_json_atomic(path, rec)
    assert read_record(path)["schema_version"] == SCHEMA_VERSION
    assert [p.name for p in path.parent.iterdir()] == ["r.json"]


def test_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "r.json"
    write_json_atomic(path, new_record(cell()))
    before = path.read_text()
    with pytest.raises(TypeError):
        write_json_atomic(path, {"bad": object.__new__(type("X", (), {"__str__": None}))})
    assert path.read_text() == before
    assert len(list(tmp_path.iterdir())) == 1


@pytest.mark.parametrize("content, message", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "not a JSON object"),
    ('{"schema_version": 1}', "missing fields"),
])
def test_read_record_rejects_bad_files(tmp_path, content, message):
    p = tmp_path / "x.json"
    p.write_text(content)
    with pytest.raises(RecordError, match=message):
        read_record(p)


def test_read_record_rejects_unknown_status_and_future_schema(tmp_path):
    rec = new_record(cell())
    p = tmp_path / "x.json"
    write_json_atomic(p, {**rec, "status": "great"})
    with pytest.raises(RecordError, match="unknown status"):
        read_record(p)
    write_json_atomic(p, {**rec, "schema_version": SCHEMA_VERSION + 1})
    with pytest.raises(RecordError, match="schema_version"):
        read_record(p)
