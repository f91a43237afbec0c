"""Adding a workload is adding a folder (``bench.models.workloads.discover``): a throwaway folder written to a
temporary path on the package's ``__path__`` registers itself and appears in ``bench list`` and a plan's cells, with
no list edited; a classic workload stating no label lines, or giving its own labels, registers (it was a LookupError
at import, and a bare KeyError before that)."""

import sys
import textwrap

import pytest

import bench.models.workloads as registry
from bench.cli import main
from bench.core import workloadnames
from bench.models.workloads import SUITES, WORKLOADS, common
from bench.models.workloads.training import INTEGER_LABELS
from bench.run import plan

NAME = "throwaway_2017"

MODELS = '''
def build_keras(keras, meta):
    return keras.Sequential([keras.Input((784,)), keras.layers.Dense(32, activation="relu"),
                             keras.layers.Dense(meta["num_classes"], activation="softmax")])


def build_torch(meta):
    from torch import nn

    return nn.Sequential(nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, meta["num_classes"]))
'''

SPEC = f'''
from bench.models.workloads.common import flatten_images, rmsprop_208, workload
from bench.models.workloads.published import Published, PublishedOptimizer
from bench.models.workloads.{NAME} import models

NAMES = ("{NAME}",)
PUBLISHED = Published(params=25_450, batch_size=64, epochs=3,
                      optimizer=PublishedOptimizer("rmsprop", 0.001, rho=0.9, epsilon=1e-8), where="this test")
WORKLOADS = (workload(NAMES[0], PUBLISHED, smoke_epochs=1, dataset="mnist", optimizer=rmsprop_208(),
                      samples={{"smoke": 128, "full": None}}, models=models, prepare=flatten_images,
                      source="this test"),)
'''


@pytest.fixture
def kept_registry(monkeypatch):
    """The registry's dicts as they were after the test (in place: ``plan`` and the CLI hold the same objects), and
    the throwaway's modules gone."""
    workloads, suites = dict(WORKLOADS), {k: list(v) for k, v in SUITES.items()}
    yield
    WORKLOADS.clear()
    WORKLOADS.update(workloads)
    SUITES.clear()
    SUITES.update(suites)
    for module in [m for m in sys.modules if m.startswith(f"bench.models.workloads.{NAME}")]:
        del sys.modules[module]
    vars(registry).pop(NAME, None)


@pytest.fixture
def throwaway_folder(tmp_path, monkeypatch, kept_registry):
    """A workload folder, ``NAME/`` (``__init__.py``, ``models.py``, ``spec.py``), on the package's ``__path__``."""
    folder = tmp_path / NAME
    folder.mkdir()
    (folder / "__init__.py").write_text('"""A test\'s throwaway workload."""\n')
    (folder / "models.py").write_text(textwrap.dedent(MODELS))
    (folder / "spec.py").write_text(textwrap.dedent(SPEC))
    monkeypatch.setattr(registry, "__path__", [*registry.__path__, str(tmp_path)])
    return tmp_path


def test_a_new_folder_registers_itself_and_joins_bench_list_and_a_plans_cells(throwaway_folder, capsys):
    classic = list(SUITES["classic"])
    assert registry.discover([str(throwaway_folder)]) == [NAME]
    assert SUITES["classic"] == [*classic, NAME] and WORKLOADS[NAME].published.params == 25_450
    cells = plan.expand(["pytorch", "keras3-torch"], "classic", "smoke", "cpu")
    assert [c.workload for c in cells if c.stack == "pytorch"] == [*classic, NAME]
    assert {c.stack for c in cells if c.workload == NAME} == {"pytorch", "keras3-torch"}
    with pytest.raises(SystemExit) as e:
        main(["list"])
    out = capsys.readouterr().out
    assert e.value.code == 0 and f"  classic: {', '.join([*classic, NAME])}\n" in out
    assert any(line.startswith(f"  {NAME} ") and "params 25,450" in line for line in out.splitlines())


def test_the_host_reads_a_new_folders_name_without_importing_it(throwaway_folder):
    """``bench.core.workloadnames`` (what ``make check-request`` checks WORKLOADS against) lists the folder's name
    in the registry's order before ``discover`` has imported it."""
    assert workloadnames.workload_names([*registry.__path__, str(throwaway_folder)]) == [*WORKLOADS, NAME]
    assert f"bench.models.workloads.{NAME}.spec" not in sys.modules


def test_a_spec_whose_workloads_are_not_named_by_its_names_is_refused(throwaway_folder):
    spec = throwaway_folder / NAME / "spec.py"
    spec.write_text(spec.read_text().replace("workload(NAMES[0],", 'workload("other",'))
    with pytest.raises(ValueError, match=f"WORKLOADS are named other, its NAMES {NAME}"):
        registry.discover([str(throwaway_folder)])
    assert NAME not in WORKLOADS and "other" not in WORKLOADS


def test_a_spec_whose_timing_is_not_its_workloads_is_refused(throwaway_folder):
    """``TIMING`` is what the host reads to refuse a step-timed ``FIDELITY_WORKLOAD``: ``discover`` holds it to the
    ``WORKLOADS`` the spec builds (a classic workload stated ``"step"``), so the host's answer is the registry's."""
    spec = throwaway_folder / NAME / "spec.py"
    spec.write_text(spec.read_text() + 'TIMING = "step"\n')
    with pytest.raises(ValueError, match=f"{NAME}.spec: its WORKLOADS are epoch-timed, its TIMING 'step'"):
        registry.discover([str(throwaway_folder)])
    assert NAME not in WORKLOADS


def test_the_hosts_step_timed_workloads_are_the_registrys():
    """``check_fit_workload`` (make fidelity's check) refuses exactly the registry's ``StepWorkload``s."""
    for name, w in WORKLOADS.items():
        refused = None
        try:
            workloadnames.check_fit_workload(name)
        except ValueError as e:
            refused = str(e)
        assert refused == (workloadnames.STEP_TIMED.format(name=name) if isinstance(w, registry.StepWorkload)
                           else None), (name, refused)
    with pytest.raises(ValueError, match="unknown workload 'nope'; known: ") as e:
        workloadnames.check_fit_workload("nope")
    named = str(e.value).split("known: ")[1].split(", ")
    assert named == [n for n, w in WORKLOADS.items() if not isinstance(w, registry.StepWorkload)]


@pytest.mark.parametrize("line, says", [("", "NAMES must be a literal"), ('NAMES = ["x"]', "NAMES must be a literal"),
                                        ("NAMES = tuple(PUBLISHED)", "malformed node"),
                                        ('NAMES = ("x",)\nORDER = "first"', "ORDER must be a number"),
                                        ('NAMES = ("x",)\nTIMING = "steps"', "TIMING must be one of epoch, step")])
def test_a_spec_without_literal_names_or_order_is_one_clear_error(tmp_path, line, says):
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "spec.py").write_text(line + "\n")
    with pytest.raises(ValueError, match=says):
        workloadnames.spec_folders([tmp_path])


def test_a_classic_workload_stating_no_label_lines_gets_its_scripts_one_hot_labels(throwaway_folder):
    """The classic suite's default: the 2017 script's one-hot labels, cited to the script alone (no lines to cite);
    once a table lookup that failed at import for a workload it lacked."""
    registry.discover([str(throwaway_folder)])
    labels = WORKLOADS[NAME].labels
    assert (labels.form, labels.loss, labels.source) == ("one_hot", "categorical_crossentropy",
                                                         f"examples/{NAME}.py@2.0.8")
    assert WORKLOADS[NAME].progress == "keras_tqdm"


def test_a_workload_giving_its_labels_never_builds_the_default(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("labels_2017 called for a workload that gives its labels")

    monkeypatch.setattr(common, "labels_2017", fail)
    base = WORKLOADS["mnist_mlp"]
    w = common.workload(NAME, base.published, smoke_epochs=1, dataset="mnist", optimizer=base.optimizer,
                        samples={"smoke": 8, "full": None}, build_keras=base.build_keras,
                        build_torch=base.build_torch, labels=INTEGER_LABELS)
    assert w.labels == INTEGER_LABELS and NAME not in WORKLOADS  # built, not registered: discover registers


def test_each_familys_builder_comes_from_the_folders_models_by_its_registry_name():
    from types import SimpleNamespace

    from bench.core.families import FAMILIES

    base = WORKLOADS["mnist_mlp"]
    kw = dict(smoke_epochs=1, dataset="mnist", optimizer=base.optimizer, samples=base.samples, labels=INTEGER_LABELS)
    every = SimpleNamespace(**{f.builder: getattr(base, f.builder) for f in FAMILIES.values()})
    w = common.workload(NAME, base.published, models=every, **kw)
    assert all(getattr(w, f.builder) is getattr(base, f.builder) for f in FAMILIES.values())
    no_flax = SimpleNamespace(build_keras=base.build_keras, build_torch=base.build_torch)
    assert common.workload(NAME, base.published, models=no_flax, **kw).build_flax is None
    given = common.workload(NAME, base.published, models=every, build_torch=no_flax.build_keras, **kw)
    assert given.build_torch is base.build_keras  # a builder given by name wins over the module's
