import importlib.util
import os
import sys

import pytest

os.environ.setdefault("BENCH_OFFLINE", "1")  # tests never wait on a download
# In-process Keras tests use the torch backend (the meta device builds full-size models without memory);
# TensorFlow, now installed beside keras-hub, would otherwise be Keras' default.
os.environ.setdefault("KERAS_BACKEND", "torch")


def has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


needs_torch = pytest.mark.skipif(not has("torch"), reason="torch not installed")
needs_keras_torch = pytest.mark.skipif(not (has("torch") and has("keras")),
                                       reason="keras and torch not installed")
needs_collect = pytest.mark.skipif(not (has("pandas") and has("matplotlib")),
                                   reason="bench collect and the report need pandas and matplotlib (the collect extra)")


@pytest.fixture
def fake_worker(tmp_path, monkeypatch):
    """``bench run`` spawns tests/helpers/worker.py's fake worker instead of the real one."""
    from bench.run import runner
    from tests.helpers.worker import FAKE

    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE)
    monkeypatch.setattr(runner, "WORKER", [sys.executable, str(script)])
