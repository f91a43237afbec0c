"""What README and docs/ state as a current fact of the code, checked against the code: how many stacks, variants
and runnable cells there are, which make knobs, ``bench`` commands and options, host commands and history columns
exist. A doc that drifts from the code fails here, not in a user's hands. (Links: ``mkdocs build --strict``; README's
own shape: test_readme.py; the GPU window's page: test_window.py.)"""

from __future__ import annotations

import re
from pathlib import Path

from bench.core.request import LOOP_VARS, RUN, Request, cli_flag, make_vars
from bench.core.stacks import DEFAULT_STACKS
from bench.models.workloads import SUITES
from tests.helpers.numbers import number

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _text(rel: str) -> str:
    return (ROOT / rel).read_text(encoding="utf-8")


def _stack_counts() -> list[tuple[str, int, str]]:
    """(page:line, count, phrase) of every "<N> default stacks", "<N> stack images", "<N> software stacks" and
    "<N> stacks x" in README and docs/: each counts the default stacks."""
    found = []
    pattern = re.compile(r"\b(\w+) (?:default stacks|stack images|software stacks|stacks x)\b")
    for page in PAGES:
        for i, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for m in pattern.finditer(line):
                n = number(m.group(1))
                if n is not None:
                    found.append((f"{page.relative_to(ROOT)}:{i}", n, m.group(0)))
    return found


def test_the_docs_count_the_default_stacks_as_the_stack_list_does():
    """running.md said "5 stacks x 5 workloads" and ci.md "the five default stacks" after the jax stack made six."""
    counts = _stack_counts()
    assert len(counts) >= 5, counts  # README's and the home page's own, at least
    wrong = [(where, phrase) for where, n, phrase in counts if n != len(DEFAULT_STACKS)]
    assert not wrong, f"the default stacks are {len(DEFAULT_STACKS)}: {wrong}"


def test_running_counts_the_classic_suites_workloads():
    line = next(ln for ln in _text("docs/running.md").splitlines() if "stacks x" in ln and "(classic suite)" in ln)
    m = re.search(r"(\w+) stacks x (\w+) workloads", line)
    assert m and number(m.group(2)) == len(SUITES["classic"]), line


def _cli_block() -> str:
    """The code block of running.md's "The bench CLI" section."""
    section = _text("docs/running.md").split("## The bench CLI", 1)[1]
    return re.search(r"```\n(.*?)```", section, flags=re.S).group(1)


def test_running_lists_every_bench_command():
    from bench.cli import cli

    listed = {m.group(1) for m in re.finditer(r"^bench (\w[\w-]*)", _cli_block(), flags=re.M)}
    commands = set(cli.commands)
    assert listed == commands, f"missing {commands - listed}; not commands {listed - commands}"


def test_running_lists_every_bench_run_option():
    """The synopsis of ``bench run`` names each option Request declares for it (--variant, --set, --samples,
    --profile, --order and --idle-temp-c were missing)."""
    block = _cli_block()
    synopsis = re.search(r"^bench run .*?(?=^bench )", block, flags=re.S | re.M).group(0)
    flags = {cli_flag(f) for f in Request.options(RUN)}
    assert flags, "Request declares bench run's options"
    missing = sorted(f for f in flags if not re.search(rf"{re.escape(f)}\b(?!-)", synopsis))
    assert not missing, missing


def _make_knobs() -> set[str]:
    """The Makefile's own knobs (``VAR ?= ...``), its loop's variables and those it passes through to
    ``bench run``."""
    own = set(re.findall(r"^([A-Z][A-Z0-9_]*) \?=", _text("Makefile"), flags=re.M))
    return own | set(LOOP_VARS) | set(make_vars())


def test_every_make_knob_is_named_in_the_docs():
    """FIDELITY_WORKLOAD, HISTORY (on running.md) and WINDOW_PYTHON were set only by reading the Makefile."""
    docs = "\n".join(page.read_text(encoding="utf-8") for page in PAGES)
    knobs = _make_knobs()
    assert {"STACKS", "SUITE", "SET", "TIMEOUT"} <= knobs
    missing = sorted(k for k in knobs if not re.search(rf"(?<![A-Z_]){k}(?![A-Z_])", docs))
    assert not missing, missing


def test_running_knob_table_lists_the_knobs_of_a_run():
    first_cells = re.findall(r"^\| (`[A-Z][^|]*)\|", _text("docs/running.md"), flags=re.M)
    table = {k for cell in first_cells for k in re.findall(r"`([A-Z_]+)(?:=[^`]*)?`", cell)}
    for knob in ("STACKS", "SUITE", "SIZE", "DEVICE", "REPEATS", "SEED", "ORDER", "HISTORY", "FIDELITY_WORKLOAD",
                 *(v for v in make_vars() if v != "TIMEOUT")):  # TIMEOUT: images.md's build inputs, as running says
        assert knob in table, knob


def test_layout_lists_every_host_command():
    from bench.host.__main__ import parser

    sub = next(a for a in parser()._actions if a.dest == "command")
    rows = re.findall(r"^\| `(\w+)[^|]*\| `(bench/[\w/]+\.py)`", _text("docs/layout.md"), flags=re.M)
    assert {cmd for cmd, _ in rows} == set(sub.choices)
    for cmd, module in rows:  # the module named is the one that registers the command
        assert re.search(rf'add_parser\(\s*"{cmd}"', (ROOT / module).read_text()), (cmd, module)


def test_history_page_names_every_column_of_the_cells_table():
    from bench.results.history import COLUMNS

    page = _text("docs/history.md")
    cells = page.split("- `cells`:", 1)[1].split("- `meta`:", 1)[0]
    named = set()
    for token in re.findall(r"`([a-z0-9_/]+)`", cells):
        head, _, tails = token.partition("/")
        named.add(head)
        stem = head.rsplit("_", 1)[0]
        named |= {f"{stem}_{t}" for t in tails.split("/") if t}
    missing = [c.name for c in COLUMNS if c.name not in named]
    assert not missing, missing


def _tuning_variants() -> dict[str, list]:
    from bench.run import sweep

    grid = sweep.default_grid("tuning")
    return {s: grid.variants(s) for s in DEFAULT_STACKS}


def test_tuning_page_counts_the_grids_variants():
    """tuning.md said 22 variants per stack; the jax stack has 8."""
    m = re.search(r"the grid is (\d+) variants per stack(?: \((\d+) on `jax`)?", _text("docs/suites/tuning.md"))
    assert m, "tuning.md states the grid's size"
    counts = {s: len(v) for s, v in _tuning_variants().items()}
    jax = counts.pop("jax")
    assert jax == int(m.group(2) or m.group(1)), f"the jax stack has {jax} variants"
    assert set(counts.values()) == {int(m.group(1))}, counts


def test_cloud_cost_counts_the_tuning_suites_runnable_cells():
    """cloud.md's tuning cost multiplies the cells that run (not ``unsupported`` by design, as the worker decides
    before a cell starts): it said ~60; the six default stacks run 77."""
    from bench.core import knobs
    from bench.core.stacks import get_stack
    from bench.models.workloads import get_workload
    from bench.run.scenarios import scenario_of

    m = re.search(r"\| `tuning` \| ~?(\d+) runnable cells", _text("docs/cloud.md"))
    assert m, "cloud.md's cost table counts the tuning suite's runnable cells"
    w = get_workload("mnist_cnn_tuning")
    scenario, runnable = scenario_of(w), 0
    for s, variants in _tuning_variants().items():
        stack = get_stack(s)
        runnable += sum(1 for v in variants
                        if not (scenario.unsupported(w, stack) or knobs.check(stack, dict(v.settings), scenario.name)
                                or knobs.model_knob_problem(dict(v.settings), w.name, getattr(w, "keras_knobs", ()))))
    assert runnable == int(m.group(1))


def test_cloud_cost_counts_the_paper_suites_runnable_cells():
    """cloud.md's paper cost charged ~2 min of build and compile to 60 cells: five stacks' cells, the
    ``unsupported`` ones among them (which the worker refuses before building a model), where the six default stacks
    run 54 of 72. Its hours follow from its own minutes."""
    from bench.core import knobs
    from bench.core.stacks import get_stack
    from bench.models.workloads import get_workload
    from bench.run.plan import expand
    from bench.run.scenarios import scenario_of

    row = next(ln for ln in _text("docs/cloud.md").splitlines() if ln.startswith("| `paper` |"))
    m = re.search(r"(\d+) GPU-min.*~(\d+) min per cell x (\d+) runnable cells.*\| ~([\d.]+) GPU-hours \| "
                  r"~([\d.]+) GPU-hours \|", row)
    assert m, row
    runnable = 0
    for c in expand(list(DEFAULT_STACKS), "paper", "full", "gpu"):
        w, stack = get_workload(c.workload), get_stack(c.stack)
        scenario = scenario_of(w)
        runnable += not (scenario.unsupported(w, stack) or knobs.check(stack, dict(c.settings), scenario.name))
    assert int(m.group(3)) == runnable
    hours = (int(m.group(1)) + int(m.group(2)) * runnable) / 60
    assert float(m.group(4)) == round(hours, 1) and float(m.group(5)) == round(3 * hours, 1)


def test_the_gpu_window_page_says_how_many_examples_babi_rnn_trains_on():
    """gpu-window.md said ``babi_rnn``'s 1,000 training examples where it trains 950 of them (validation_split
    0.05 holds the last 50 out): every "trains on N of M" it states for babi_rnn is the workload's split."""
    from bench.models.datasets import example_counts
    from bench.models.workloads import get_workload

    w = get_workload("babi_rnn")
    total = example_counts(w.dataset)[0]
    trained = total - max(int(total * (w.validation_split or 0)), 1)
    text = " ".join(_text("docs/gpu-window.md").split())
    said = re.findall(r"`babi_rnn` trains on ([\d,]+) of\s+qa2's ([\d,]+) training examples", text)
    assert said, "gpu-window.md says what babi_rnn trains on"
    assert {(int(a.replace(",", "")), int(b.replace(",", ""))) for a, b in said} == {(trained, total)}
    assert all(int(n.replace(",", "")) == trained for n in re.findall(r"`babi_rnn`'s whole ([\d,]+)", text))


def test_what_a_local_run_writes_under_results_is_ignored_and_the_committed_folders_are_not():
    """results/README.md: a local run's outputs are ignored by git, committed results live in their own folders. The
    report (``make report``, after every ``make collect``), its plots, ``make selftest``'s records and ``make
    cloud-collect``'s copy were not ignored: a first ``make bench-all`` left ``git status`` showing results/report.md
    and results/plots/ as new files."""
    import subprocess

    local = ["results/report.md", "results/plots/classic-smoke-cpu/keras_overhead_ratio.png",
             "results/selftest/pytorch-cpu.json", "results/cloud/run1/pytorch/x.json", "results/runs/r/pytorch/x.json",
             "results/classic-smoke-cpu.csv", "results/history.sqlite", "results/site/index.html",
             "results/doctor/host.json", "results/images/gpu.txt"]
    committed = ["results/cpu-smoke/report.md", "results/cpu-smoke/plots/classic-smoke-cpu/keras_overhead_ratio.png",
                 "results/fidelity/pytorch-cpu.json", "results/README.md"]
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *local, *committed], cwd=ROOT, capture_output=True,
                             text=True).stdout.split()
    assert sorted(ignored) == sorted(local)
