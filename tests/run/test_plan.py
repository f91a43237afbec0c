import pytest

from bench.core.stacks import DEFAULT_STACKS, STACKS, get_stack
from bench.models.workloads import SUITES, WORKLOADS
from bench.run.plan import PlanError, expand, only_variants

SMOKE_SAMPLES = {name: w.samples["smoke"] for name, w in WORKLOADS.items() if hasattr(w, "samples")}

ALL = list(DEFAULT_STACKS)


def test_classic_matrix_is_a_cell_per_stack_and_workload_in_stable_order():
    cells = expand(ALL, "classic", "smoke", "cpu")
    assert len(cells) == len(ALL) * len(SUITES["classic"])
    assert len({c.id for c in cells}) == len(cells)
    n = len(SUITES["classic"])
    assert [c.stack for c in cells[:n]] == ["keras2-tf"] * n
    assert [c.workload for c in cells[:n]] == SUITES["classic"]
    assert all(c.timeout_s == 600 for c in cells)


def test_selection_narrows():
    cells = expand(["pytorch"], "classic", "full", "gpu", workloads=["mnist_cnn"], tasks=["fit"],
                   batch_size=64, epochs=3, timeout_s=5)
    assert [(c.workload, c.inputs.batch_size, c.inputs.epochs, c.timeout_s) for c in cells] == [("mnist_cnn", 64, 3, 5)]


@pytest.mark.parametrize("kw, msg", [
    (dict(stacks=["x"]), "unknown stack"),
    (dict(suite="x"), "unknown suite"),
    (dict(size="x"), "unknown size"),
    (dict(device="auto"), "unknown device"),
    (dict(workloads=["x"]), "unknown workload"),
    (dict(tasks=["x"]), "unknown task"),
    (dict(batch_size=0), "must be positive"),
    (dict(batch_size=2.5), "batch size 2.5: Input should be a valid integer"),
    (dict(epochs="x"), "epochs 'x': Input should be a valid integer"),
])
def test_bad_selection(kw, msg):
    args = dict(stacks=ALL, suite="classic", size="smoke", device="cpu")
    args.update(kw)
    with pytest.raises(PlanError, match=msg):
        expand(**args)


def test_variants_select_cells_by_the_name_the_plan_gives_them():
    """--variant: only the cells of the named variants, on every stack that has them; a name no cell of the
    selection has is an error naming the ones there are, not a silently smaller run."""
    cells = expand(["keras3-jax", "jax"], "tuning", "smoke", "cpu")
    picked = only_variants(cells, ["default", "jit_compile=false"])
    assert sorted((c.stack, c.variant) for c in picked) == [
        ("jax", "default"), ("jax", "jit_compile=false"), ("keras3-jax", "default"),
        ("keras3-jax", "jit_compile=false")]
    assert only_variants(cells, []) == cells
    paper = expand(["pytorch"], "paper", "smoke", "cpu", workloads=["bert"])
    assert {c.variant for c in only_variants(paper, ["bs2"])} == {"bs2"}
    with pytest.raises(PlanError, match="no cell of the selection has variant 'jit_compile=maybe'; its variants "
                                        "here: data_pipeline="):
        only_variants(cells, ["default", "jit_compile=maybe"])
    # one list for a run of several stacks, one stack per process: each runs the names it has, none an error
    everywhere = expand(list(DEFAULT_STACKS), "tuning", "smoke", "cpu")
    torch_name = next(c.variant for c in everywhere if c.stack == "pytorch" and c.variant != "default")
    jax_only = expand(["jax"], "tuning", "smoke", "cpu")
    assert only_variants(jax_only, [torch_name], everywhere) == []
    assert [c.variant for c in only_variants(jax_only, ["default", torch_name], everywhere)] == ["default"]
    with pytest.raises(PlanError, match="no cell of the selection"):
        only_variants(jax_only, [torch_name])


def test_stack_names_are_consistent():
    assert {s.service for s in STACKS.values() if s.base is None} == {
        "keras2-bench", "tf-bench", "jax-bench", "torch-bench", "pytorch-bench", "pytorch-cu12-bench",
        "plain-jax-bench"}
    assert get_stack("keras2-tf").keras_major == 2
    assert get_stack("keras3-jax").keras_major == 3
    assert get_stack("pytorch").keras_major is None
    with pytest.raises(KeyError, match="known"):
        get_stack("keras1")


def test_samples_caps_the_training_set_and_names_the_cell():
    """--samples: the same model and batch on fewer examples, a record of its own; the workload's own count at the
    size is the default cell (no suffix), and the step-timed paper suite refuses it."""
    (cell,) = expand(["pytorch"], "classic", "full", "gpu", workloads=["mnist_mlp"], epochs=3, samples=3200)
    assert cell.inputs.samples == 3200 and cell.id.endswith("__epochs=3+samples=3200")
    (own,) = expand(["pytorch"], "classic", "smoke", "cpu", workloads=["mnist_mlp"],
                    samples=SMOKE_SAMPLES["mnist_mlp"])
    assert own.inputs.samples == SMOKE_SAMPLES["mnist_mlp"] and "samples" not in own.id
    with pytest.raises(PlanError, match=r"--samples applies to the epoch suites \(classic, tuning\)"):
        expand(["pytorch"], "paper", "smoke", "cpu", workloads=["bert"], samples=10)
    with pytest.raises(PlanError, match="samples must be positive"):
        expand(["pytorch"], "classic", "smoke", "cpu", samples=0)


def test_samples_reach_the_data_the_cell_trains_on():
    from bench.models.workloads import get_workload

    w = get_workload("mnist_mlp")
    ds = w.load_data("full", "synthetic", 320)
    assert (ds.n_train, len(ds.y_val)) == (320, 80)  # validation: a quarter, as at smoke size
    assert w.load_data("smoke", "synthetic").n_train == SMOKE_SAMPLES["mnist_mlp"]


@pytest.mark.parametrize("workload", ["mnist_mlp", "cifar10_cnn", "babi_rnn", "mnist_cnn_tuning"])
def test_samples_of_the_whole_dataset_are_the_default_cell(workload):
    """--samples at or above the training set's size trains on what a default cell trains on (the whole set, and
    validates on the whole test split or the workload's held-out share): it is the default cell, not a cell id of its
    own; one example fewer is a cap. At smoke size, whose own count is a cap, the whole set is a cell of its own."""
    from bench.models.datasets import example_counts

    w = WORKLOADS[workload]
    n_train = example_counts(w.dataset)[0]

    def cells(n, size="full", device="gpu"):
        return expand(["pytorch"], w.suite, size, device, workloads=[workload], samples=n)

    for n in (n_train, 10 * n_train):
        assert all(c.inputs.samples is None and "samples" not in c.id for c in cells(n)), n
    assert all(c.inputs.samples == n_train - 1 and c.id.endswith(f"samples={n_train - 1}")
               for c in cells(n_train - 1))
    assert all(c.inputs.samples == n_train for c in cells(n_train, "smoke", "cpu"))


def test_whole_dataset_loads_the_default_data():
    """What ``whole_dataset`` calls the default loads the same numbers of examples as no cap (synthetic data of the
    real counts)."""
    from bench.models.datasets import example_counts
    from bench.models.workloads import get_workload

    w = get_workload("babi_rnn")
    n = example_counts(w.dataset)[0]
    assert w.whole_dataset(n) and not w.whole_dataset(n - 1)
    full, capped = w.load_data("full", "synthetic"), w.load_data("full", "synthetic", n)
    assert (full.n_train, len(full.y_val)) == (capped.n_train, len(capped.y_val))


def test_whole_dataset_needs_the_whole_test_split_where_it_validates(monkeypatch):
    """Where the test split validates, a cap's validation set is a quarter of it: the cap is the default only once that
    quarter covers the test split (a dataset of 400 training and 200 test examples: 800, not 400)."""
    from bench.models import datasets
    from bench.models.workloads import get_workload

    monkeypatch.setitem(datasets.SYNTHETIC["mnist"], "n", (400, 200))
    w = get_workload("mnist_mlp")
    assert not w.whole_dataset(400) and w.whole_dataset(800)
    full, capped, short = (w.load_data("full", "synthetic", n) for n in (None, 800, 400))
    assert (full.n_train, len(full.y_val)) == (capped.n_train, len(capped.y_val)) == (400, 200)
    assert (short.n_train, len(short.y_val)) == (400, 100)


def test_every_cell_of_run_and_sweep_takes_its_time_limit_where_the_request_resolves_it(monkeypatch):
    """``bench.core.request.timeout_for`` is the one place a cell's default time limit is resolved: ``bench run``'s
    cells, ``bench sweep``'s and the host's ``request default timeout_s`` all read the table it reads."""
    from bench.core import request
    from bench.run import sweep
    from bench.run.plan import sweep_cells

    monkeypatch.setattr(request, "TIMEOUT_S", {"smoke": 7.0, "full": 70.0})
    grid = sweep.default_grid("tuning")
    for size, limit in (("smoke", 7.0), ("full", 70.0)):
        assert {c.timeout_s for c in expand(["pytorch"], "classic", size, "cpu")} == {limit}
        assert {c.timeout_s for c in sweep_cells(grid, ["pytorch"], size=size, device="cpu")} == {limit}
        assert request.default("timeout_s", size=size) == limit
        assert {c.timeout_s for c in expand(["pytorch"], "classic", size, "cpu", timeout_s=5)} == {5}


@pytest.mark.parametrize("kw", [{"settings": {"tf32": "off"}, "variant": "tf32=off"},
                                {"settings": {"augment": False}, "variant": "augment=false"},
                                {"settings": {"compile": "default"}, "variant": "compile-default"}])
def test_a_suite_that_runs_its_own_grid_refuses_settings_it_would_drop(kw):
    """``--set``, ``--compile`` and ``--no-augment`` on the tuning suite were dropped, unsaid: ``bench run --suite
    tuning --set steps_per_execution=512`` ran every grid variant as the grid has it."""
    with pytest.raises(PlanError, match="runs the variants of its own grid"):
        expand(["pytorch"], "tuning", "smoke", "cpu", **kw)
    assert all(c.variant != kw["variant"] for c in expand(["pytorch"], "tuning", "smoke", "cpu"))


@pytest.mark.parametrize("suite, workload", [("classic", "mnist_mlp"), ("tuning", "mnist_cnn_tuning")])
def test_a_stack_or_workload_named_twice_gives_each_cell_once_in_first_named_order(suite, workload):
    """WORKLOADS="mnist_mlp mnist_mlp" (``--workload`` twice) gave every cell twice (4 cells for 1 on one stack), and
    a stack named twice to ``expand`` doubled the tuning grid; each cell is once, in the order first named."""
    once = expand(["pytorch", "jax"], suite, "smoke", "cpu", [workload])
    twice = expand(["pytorch", "jax", "pytorch"], suite, "smoke", "cpu", [workload, workload])
    assert [c.id for c in twice] == [c.id for c in once] and len({c.id for c in once}) == len(once)
    both = expand(["jax"], "classic", "smoke", "cpu", ["mnist_mlp", "mnist_cnn", "mnist_mlp"])
    assert [c.workload for c in both] == ["mnist_mlp", "mnist_cnn"]
