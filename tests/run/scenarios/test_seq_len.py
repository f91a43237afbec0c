"""``--seq-len`` reaches only the paper cells whose inputs have a sequence length (``PaperModel.reads_seq_len``): the
others (the image models, and generate, which feeds a fixed prompt to ``max_length``) neither name it in their id or
inputs nor get it in their model config, and a selection of none of them is refused: one line, exit 2. Before, ``bench
run --suite paper --workload segment_anything --seq-len 64`` planned ``...__seq_len=64`` cells that SAM never read."""

from __future__ import annotations

import pytest

from bench import cli
from bench.models.engines import Unsupported
from bench.models.workloads import SUITES, WORKLOADS
from bench.run import plan, worker
from bench.run.scenarios import steps

#: The paper (workload, task) pairs whose inputs have a sequence length, from the registry: a model whose config has
#: one, in every task but a causal LM's generate.
READS = {(n, t) for n in SUITES["paper"] for t in WORKLOADS[n].tasks
         if "seq_len" in WORKLOADS[n].model.config("full") and t != "generate"}


def test_the_tasks_with_a_sequence_length_are_the_registrys():
    assert {(n, t) for n in SUITES["paper"] for t in WORKLOADS[n].tasks
            if WORKLOADS[n].model.reads_seq_len(t)} == READS
    assert READS and ("gemma", "generate") not in READS and not any(n == "segment_anything" for n, _ in READS)


@pytest.mark.parametrize("workloads, tasks", [
    (["segment_anything"], []), (["stable_diffusion", "segment_anything"], []), (["gemma"], ["generate"]),
    (["bert", "mistral"], ["generate"]),
])
def test_a_sequence_length_for_cells_without_one_is_a_plan_error_naming_those_it_applies_to(workloads, tasks):
    with pytest.raises(plan.PlanError) as e:
        plan.expand(["pytorch"], "paper", "full", "gpu", workloads, tasks, seq_len=64)
    msg = str(e.value)
    assert "\n" not in msg and "--seq-len applies to none of the selected cells" in msg
    for name in {n for n, _ in READS}:
        assert name in msg
    assert "segment_anything" not in msg and "stable_diffusion" not in msg


def test_at_the_cli_it_is_one_line_and_exit_2(capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "--stack", "pytorch", "--suite", "paper", "--workload", "segment_anything", "--seq-len", "64",
                  "--device", "cpu", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and len(err.splitlines()) == 1 and "--seq-len" in err and "bert" in err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("size", ["smoke", "full"])
def test_only_the_cells_with_a_sequence_length_name_and_take_it(size):
    default = {c.id: c for c in plan.expand(["pytorch"], "paper", size, "gpu")}
    given = plan.expand(["pytorch"], "paper", size, "gpu", seq_len=8)
    assert len(given) == len(default)
    for c in given:
        if (c.workload, c.task) in READS:
            assert c.id.endswith("__seq_len=8") and c.inputs.seq_len == 8 and "seq_len" in c.inputs.named
        else:  # the same cell as without --seq-len: its id and inputs
            assert c.id in default and c.inputs == default[c.id].inputs and c.inputs.seq_len is None


def test_the_model_config_gets_it_only_where_the_task_reads_it(monkeypatch):
    """The worker's body for each cell of a mixed selection, with an engine that keeps the config it was given."""
    seen = {}

    class Engine:
        def run(self, stack, w, cell, cfg, settings, telemetry=None):
            seen[(cell.workload, cell.task)] = dict(cfg)
            raise Unsupported("seen")

    monkeypatch.setattr(steps, "step_engine", lambda family: Engine())
    for cell in plan.expand(["pytorch"], "paper", "smoke", "cpu", ["segment_anything", "bert", "gemma"],
                            seq_len=8):
        worker.run_cell(cell)
    for (name, task), cfg in seen.items():
        own = WORKLOADS[name].model.config("smoke")
        assert cfg.get("seq_len") == (8 if (name, task) in READS else own.get("seq_len")), (name, task)
    assert {("segment_anything", "fit"), ("bert", "predict"), ("gemma", "generate")} <= set(seen)


def test_bench_list_names_the_tasks_it_sets():
    for name in SUITES["paper"]:
        line = steps.STEPS.describe(WORKLOADS[name])
        tasks = [t for n, t in sorted(READS) if n == name]
        assert (f"--seq-len: {', '.join(tasks)}" in line) == bool(tasks) and ("--seq-len" in line) == bool(tasks)


@pytest.mark.parametrize("size, ok, too_long", [("smoke", 32, 33), ("full", 512, 513)])
def test_a_sequence_length_past_berts_positions_is_a_plan_error_not_a_failed_cell(size, ok, too_long):
    """BERT learns ``max_len`` positions (512; 32 in the smoke config): a longer input fails inside its cell (an index
    past the position table), so the plan refuses it; the causal LMs (rotary positions) have no such limit."""
    assert WORKLOADS["bert"].model.config(size)["max_len"] == ok
    assert plan.expand(["pytorch"], "paper", size, "cpu", ["bert"], ["fit"], seq_len=ok)
    with pytest.raises(plan.PlanError, match=f"--seq-len {too_long} is longer than the positions of bert's {ok} "):
        plan.expand(["pytorch"], "paper", size, "cpu", ["bert", "gemma"], ["fit"], seq_len=too_long)
    assert plan.expand(["pytorch"], "paper", size, "cpu", ["gemma"], ["fit"], seq_len=too_long)
