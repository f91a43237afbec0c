"""No test module imports another: what tests share lives in tests/helpers/ (or tests/conftest.py,
tests/contract/grid.py), so a test module moves, or collects without another's dependencies, on its own."""

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def is_test_module(dotted: str) -> bool:
    """Whether ``dotted`` (``tests.run.test_tuning``, ``.test_site``) names a test module, or a name in one: absolute
    under tests, or relative (a test module's package is a folder of tests)."""
    parts = dotted.split(".")
    return (parts[0] in ("tests", "")) and any(p.startswith("test_") for p in parts[1:])


def imported_test_modules(source: str) -> list[tuple[int, str]]:
    """(line, module) of each import of a test module in ``source``, at any depth (in a function, an ``if``...):
    ``import tests.x.test_y``, ``from tests.x.test_y import ...``, ``from tests.x import test_y`` and their relative
    spellings."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            names = [module, *(f"{module.rstrip('.')}.{a.name}" for a in node.names)]
        else:
            continue
        hits = [n for n in names if is_test_module(n)]
        if hits:
            found.append((node.lineno, hits[0]))
    return sorted(found)


def test_the_scanner_finds_both_import_forms_at_any_depth():
    source = ("import os\n"
              "import tests.run.test_tuning\n"
              "from tests.helpers.records import paper_record\n"
              "from tests.conftest import needs_torch\n"
              "def f():\n"
              "    if True:\n"
              "        from tests.instruments.telemetry.test_telemetry import FakeNvml\n"
              "from tests.run import test_identity\n"
              "from .test_site import RESULTS\n"
              "from ..helpers import site\n")
    assert imported_test_modules(source) == [(2, "tests.run.test_tuning"),
                                             (7, "tests.instruments.telemetry.test_telemetry"),
                                             (8, "tests.run.test_identity"),
                                             (9, ".test_site")]


def test_no_test_module_imports_another():
    bad = [f"{p.relative_to(TESTS.parent)}:{line}: imports {name}"
           for p in sorted(TESTS.rglob("test_*.py")) for line, name in imported_test_modules(p.read_text())]
    assert not bad, "move what is shared to tests/helpers/:\n" + "\n".join(bad)


def test_every_test_slow_txt_lists_still_exists():
    """tests/slow.txt names tests by node id (``make test`` leaves them out): a renamed or removed test must leave the
    list, or its new name would run in `make test` while the list still claims to hold it. Each id's module must
    exist and define its test function (at module level or in a class)."""
    from tests.conftest import slow_ids

    stale = []
    for nodeid in slow_ids():
        path, *names = nodeid.split("::")
        module = TESTS.parent / path
        func = names[-1].split("[")[0]
        if not module.is_file() or f"def {func}(" not in module.read_text():
            stale.append(nodeid)
    assert not stale, f"tests/slow.txt lists tests that are gone (make slow-tests rewrites it): {stale}"
    assert len(slow_ids()) > 0


def test_a_listed_id_its_collected_module_lacks_is_stale():
    """The collection-time check (tests/conftest.py): a parameter or class id that changed is stale, a test of a
    module that was not collected (another directory, a module skipped for a missing framework) is not."""
    from tests.conftest import stale_slow_ids

    collected = {"tests/a/test_x.py::test_f[pytorch]", "tests/a/test_x.py::TestK::test_g"}
    listed = ["tests/a/test_x.py::test_f[pytorch]", "tests/a/test_x.py::test_f[no-such-stack]",
              "tests/a/test_x.py::TestOld::test_g", "tests/b/test_y.py::test_h"]
    assert stale_slow_ids(listed, collected) == ["tests/a/test_x.py::TestOld::test_g",
                                                 "tests/a/test_x.py::test_f[no-such-stack]"]


def test_make_test_leaves_out_the_keras_steps_per_call_fits():
    """test_keras_steps_per_call.py's two fits (a fresh Keras 3 + JAX process each, 20 s or more on 2 CPUs) ran in
    ``make test``'s quick set, unlisted in tests/slow.txt; its quick checks stay in it."""
    import subprocess
    import sys

    module = "tests/models/engines/test_keras_steps_per_call.py"
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                        "-m", "not docker and not slow", module], capture_output=True, text=True, timeout=120,
                       cwd=TESTS.parent)
    kept = {line.split("::", 1)[1] for line in p.stdout.splitlines() if line.startswith(module + "::")}
    fits = {"test_the_record_says_what_a_call_of_the_train_function_ran",
            "test_the_profile_calls_the_train_function_with_as_many_steps_as_the_timed_fit_did"}
    assert kept and not kept & fits, p.stdout + p.stderr
