"""Records as the tuning and paper suites write them on a GPU, built in memory: (cell, record) pairs for
tests of collect, compare, the report and the site."""

from bench.core.stacks import get_stack
from bench.models.workloads import get_workload
from bench.results.cell import Cell
from bench.results.record import new_record
from tests.helpers.cells import make_cell


def fake_record(stack, variant, settings, time_s, status="ok", baseline=False, gpu=True, batch=256,
                workload="mnist_cnn_tuning"):
    """A tuning record as a full-size GPU run of the study's settings writes it (batch 256, 41 epochs, the 60,000
    real MNIST images, sync=epoch, tf.data's 20,000 buffer); ``batch`` / ``workload`` make it another run."""
    c = Cell(stack=stack, suite="tuning", workload=workload, task="fit", size="full", device="gpu",
             variant=variant, settings=settings, baseline=baseline)
    r = new_record(c)
    r["status"] = status
    r["finished_utc"] = "2026-11-21T10:00:00+00:00"
    r["batch_size"] = batch
    r["data"] = {"source": "real", "n_train": 60000}
    r["settings"] = {**settings, "sync": "epoch", "data_pipeline": settings.get("data_pipeline", "numpy_fit"),
                     "shuffle_buffer": 20000 if "tf_data" in settings.get("data_pipeline", "") else 60000}
    if get_stack(stack).family == "keras":  # what the Keras engine records in effect in every cell (compiled_model)
        r["settings"] = {"steps_per_execution": 1, "precision": "float32", **r["settings"]}
    if status == "ok":
        r["metrics"] = {"total_train_s": time_s, "ms_per_step_mean": time_s, "ms_per_step_p50": time_s,
                        "epochs": 41, "j_per_epoch": 100.0 * time_s if gpu else None}
        r["telemetry"] = {"gpu_util_pct": {"mean": 90.0}, "power_w": {"mean": 300.0}, "throttled": False}
        r["history"] = {"loss": [0.5, 0.1]}
    else:  # no engine reported what ran: the knobs were asked for only (new_record)
        r["reason"], r["settings"] = "needs tf.data", {}
    r["env"] = {"gpu": {"name": "Fake H100", "driver": "999.1"}, "python": "3.11.9"}
    return c, r


def paper_record(stack, workload, task, batch, ms=None, status="ok", reason=None, mfu=None):
    """A paper-suite record as a full-size GPU run on an A100 writes it: ``ms`` per step over 100 timed steps, the
    published architecture; a ``status`` other than ok carries ``reason`` and no metrics."""
    c = make_cell(stack=stack, suite="paper", workload=workload, task=task, size="full", device="gpu",
                  batch_size=batch)
    r = new_record(c)
    r.update(status=status, reason=reason, finished_utc="2026-11-21T10:00:00+00:00",
             env={"gpu": {"name": "NVIDIA A100-SXM4-40GB", "driver": "999.1"}})
    if status == "ok":  # run as the source ran it: a whole A100, 100 timed steps, the published architecture
        r["metrics"] = {"ms_per_step_mean": ms, "examples_per_s": batch / ms * 1000, "mfu": mfu, "steps": 100}
        r["settings"]["model_config"] = get_workload(workload).model.config("full")
    return c, r
