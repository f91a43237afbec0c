"""Version stacks (bench.host.versions, stacks.derive) and make compare-versions: the derived stack's id, files and
locks, its rows' pins as installed, the ABBA order and the Makefile's command line."""

import importlib.metadata as md
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.core import rounds
from bench.core import stacks as stacks_mod
from bench.core.stacks import STACKS, derive, derived_id, load_derived
from bench.host import launch, stackfiles, versions
from bench.instruments import environment
from bench.results.cell import Cell
from bench.results.schema import Record
from bench.run import worker

ROOT = Path(__file__).resolve().parents[2]
CANDIDATE = "keras3-jax--keras-3.14.1--keras-hub-0.29.1"
# distribution/reference regexp.go: a repository path component, and compose-spec's service name pattern
DOCKER_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*")
COMPOSE_SERVICE = re.compile(r"^[a-zA-Z0-9._-]+$")


def test_a_derived_stack_is_its_base_with_its_pins_and_a_valid_image_and_service_name():
    base = STACKS["keras3-jax"]
    s = derive(base, ("keras_hub==0.29.1", "Keras==3.14.1"))
    assert s.id == "keras3-jax--keras-3.14.1--keras-hub-0.29.1" and s.base == "keras3-jax"
    assert s.pins == ("keras==3.14.1", "keras-hub==0.29.1") and not s.default and s.reference is None
    for f in ("family", "backend", "env", "imports", "flavors", "layer", "gpu_cuda", "dockerfile"):
        assert getattr(s, f) == getattr(base, f)
    assert DOCKER_COMPONENT.fullmatch(s.id) and COMPOSE_SERVICE.match(s.service) and s.service != base.service
    assert s.label == "Keras 3 JAX (keras 3.14.1, keras-hub 0.29.1)"
    assert derived_id("keras3-jax", ("jax[cuda12]==0.9.2",)) == "keras3-jax--jax-0.9.2"  # extras: per flavor
    for bad in (("keras>=3",), ("keras==3.1+cu12",), ("keras==1", "keras==2"), ()):
        with pytest.raises(ValueError):
            derive(base, bad)
    with pytest.raises(ValueError, match="derived from keras3-jax"):
        derive(s, ("jax==0.9.2",))


def test_the_declared_candidate_is_an_ordinary_non_default_stack_in_compose_and_make():
    s = STACKS[CANDIDATE]
    assert s.base == "keras3-jax" and CANDIDATE not in stacks_mod.DEFAULT_STACKS
    assert f"  {s.service}:\n" in stackfiles.render_compose()
    assert f'STACK: "{CANDIDATE}"' in stackfiles.render_compose()
    assert f"  {s.service}: *gpu\n" in stackfiles.render_compose_gpu()
    mk = stackfiles.render_makevars()
    assert CANDIDATE in mk.split("ALL_STACKS := ")[1].splitlines()[0]
    assert CANDIDATE in mk.split("CPU_STACKS := ")[1].splitlines()[0]
    assert f"build_args_{CANDIDATE} := --build-arg STACK={CANDIDATE} --build-arg KERAS_BACKEND=jax" in mk
    # a derived stack shares its base's layer without shaping it: the layer is the hand-written stacks'
    assert all(m.base is None for _, _, members in stackfiles.layers() for m in members)
    assert stackfiles.stale() == []


def test_the_candidates_locks_differ_from_its_bases_in_the_pinned_packages_only():
    for v in ("cpu", "gpu"):
        base = stackfiles.lock_pins((ROOT / f"images/keras3-jax/requirements-{v}.lock").read_text())
        cand = stackfiles.lock_pins((ROOT / f"images/{CANDIDATE}/requirements-{v}.lock").read_text())
        assert set(base) == set(cand)
        moved = {n: cand[n].split()[0] for n in base if base[n] != cand[n]}
        assert moved == {"keras": "keras==3.14.1", "keras-hub": "keras-hub==0.29.1"}
    assert versions.refresh() == []  # its .in files are what its base's give


def test_bad_declarations_fail_with_the_files_name(tmp_path):
    f = tmp_path / "d.json"
    assert load_derived(f, STACKS) == {}
    for text in ("[{", '[{"base": "nope", "pins": ["keras==1"]}]', '[{"base": "keras3-jax", "pins": ["keras"]}]'):
        f.write_text(text)
        with pytest.raises(ValueError, match="d.json"):
            load_derived(f, STACKS)


def fake_tree(tmp_path: Path) -> Path:
    """A copy of the repository's bench package and images, with no derived stack declared."""
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "bench", root / "bench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "images", root / "images", ignore=shutil.ignore_patterns(CANDIDATE))
    (root / "bench/core/derived_stacks.json").write_text("[]\n")
    for f in ("compose.yaml", "compose.gpu.yaml"):
        shutil.copy(ROOT / f, root / f)
    return root


FAKE_UV = """#!/bin/sh
# records its arguments; "compiles" by appending a marker to the -o file (which add seeded with the base's lock)
echo "$@" >> "$UV_LOG"
out=""; prev=""
for a in "$@"; do [ "$prev" = -o ] && out="$a"; prev="$a"; done
grep -q "keras==9.9.9" "$4" && { echo "error: no keras 9.9.9" >&2; exit 1; }
echo "# fake-uv" >> "$out"
"""


@pytest.fixture
def fake_uv(tmp_path, monkeypatch):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "uv").write_text(FAKE_UV)
    (bin_ / "uv").chmod(0o755)
    (bin_ / "python3").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", f"{bin_}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("UV_LOG", str(tmp_path / "uv.log"))
    return tmp_path / "uv.log"


def test_add_writes_the_declaration_inputs_and_locks_through_lock_sh_and_is_idempotent(tmp_path, fake_uv):
    root = fake_tree(tmp_path)
    s = versions.add("keras3-jax", ["keras==3.14.1", "keras-hub==0.29.1"], root)
    assert s.id == CANDIDATE
    assert json.loads((root / "bench/core/derived_stacks.json").read_text()) == [
        {"base": "keras3-jax", "pins": ["keras==3.14.1", "keras-hub==0.29.1"]}]
    folder = root / "images" / CANDIDATE
    for v, jax in (("cpu", "jax==0.10.2"), ("gpu", "jax[cuda12]==0.10.2")):
        text = (folder / f"requirements-{v}.in").read_text()
        lines = [ln.split("#")[0].strip() for ln in text.splitlines() if ln.split("#")[0].strip()]
        # the pinned lines replaced, keras-hub's shared -r file inlined, the other include kept
        assert lines == ["-r ../common.in", jax, "keras==3.14.1", "keras-hub==0.29.1", "keras-cv==0.9.0",
                         "dm-tree>=0.1.8"]
        lock = (folder / f"requirements-{v}.lock").read_text()
        base = (root / f"images/keras3-jax/requirements-{v}.lock").read_text()
        assert lock == base + "# fake-uv\n"  # seeded with the base's lock: uv's preference
    calls = fake_uv.read_text().splitlines()
    # exactly lock.sh's options, for the new stack's two flavors only
    assert calls == [f"pip compile -q {CANDIDATE}/requirements-{v}.in --generate-hashes --python-version 3.11 "
                     f"--python-platform x86_64-manylinux_2_28 --no-header -o {CANDIDATE}/requirements-{v}.lock"
                     for v in ("cpu", "gpu")]
    # lock.sh ran make stacks' writer in that tree: its compose and stacks.mk have the new stack
    assert f"{CANDIDATE}-bench:" in (root / "compose.yaml").read_text()
    assert f"service_{CANDIDATE} :=" in (root / "images/stacks.mk").read_text()
    before = {p: p.read_bytes() for p in folder.glob("*.in")}
    versions.add("keras3-jax", ["keras-hub==0.29.1", "keras==3.14.1"], root)  # again: same declaration and inputs
    assert json.loads((root / "bench/core/derived_stacks.json").read_text())[0]["pins"] == ["keras==3.14.1",
                                                                                           "keras-hub==0.29.1"]
    assert {p: p.read_bytes() for p in folder.glob("*.in")} == before


def test_a_failed_lock_leaves_nothing_behind_and_says_so_in_one_line(tmp_path, fake_uv):
    root = fake_tree(tmp_path)
    with pytest.raises(versions.LockError, match="uv could not lock keras3-jax--keras-9.9.9"):
        versions.add("keras3-jax", ["keras==9.9.9"], root)
    assert not (root / "images/keras3-jax--keras-9.9.9").exists()
    assert json.loads((root / "bench/core/derived_stacks.json").read_text()) == []


def test_no_uv_is_one_line_naming_it_and_nothing_is_kept(tmp_path, monkeypatch, capfd):
    """Without uv, ``make version-stack`` printed "uv: command not found" for the first lock, and with
    PYTHONUNBUFFERED=1 often a BrokenPipeError traceback from the list of images still being piped in."""
    root = fake_tree(tmp_path)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for tool in ("python3", "bash", "dirname"):
        (bin_ / tool).symlink_to(shutil.which(tool) if tool != "python3" else sys.executable)
    monkeypatch.setenv("PATH", str(bin_))
    with pytest.raises(versions.LockError):
        versions.add("keras3-jax", ["keras==3.14.1"], root)
    err = capfd.readouterr().err
    assert "images/lock.sh: uv is not installed (pip install uv)" in err and "Traceback" not in err, err
    assert not (root / "images/keras3-jax--keras-3.14.1").exists()


@pytest.mark.parametrize("argv, message", [
    (["add", "--base", "nope", "--pins", "keras==3.14.1"], "unknown base stack 'nope'"),
    (["add", "--base", "keras3-jax", "--pins", "keras==3.15.1"], "keras==3.15.1 is what keras3-jax's cpu lock has"),
    (["add", "--base", "keras3-jax", "--pins", "foo==1.0"], "keras3-jax has no package 'foo'"),
    (["add", "--base", "keras3-jax", "--pins", "keras>=3"], "is not name==version"),
    (["add", "--base", CANDIDATE, "--pins", "jax==0.9.2"], "derive from keras3-jax with all the pins"),
    (["pair", "keras3-jax", "nope"], "unknown stack 'nope'"),
])
def test_bad_input_is_one_line_and_exit_2(argv, message):
    r = subprocess.run([sys.executable, "-m", "bench.host", "versions", *argv], cwd=ROOT, capture_output=True,
                       text=True)
    assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_pair_names_the_candidates_pins_or_says_the_two_are_not_base_and_derived():
    assert versions.pair("keras3-jax", CANDIDATE).endswith("is keras3-jax with keras==3.14.1, keras-hub==0.29.1")
    assert "not derived from keras3-tf" in versions.pair("keras3-tf", CANDIDATE)


def test_abba_order_is_balanced_and_recorded_and_shuffled_stays_the_default():
    ab = ["keras3-jax", CANDIDATE]
    firsts = [rounds.order(ab, 1, r, "abba")[0] for r in range(1, 9)]
    assert firsts == [ab[0], ab[1], ab[1], ab[0], ab[0], ab[1], ab[1], ab[0]]
    assert rounds.order(ab, 3, 2, "abba") == rounds.order(ab, 9, 2, "abba")  # the seed plays no part
    with pytest.raises(ValueError, match="two stacks"):
        rounds.order([*ab, "pytorch"], 1, 1, "abba")
    s = rounds.schedule(CANDIDATE, ab, 1, 2, 4, "abba")
    assert s["order_rule"] == "abba" and s["position"] == 1
    assert rounds.schedule("pytorch", ["pytorch", "keras3-jax"], 1, 1, 2)["order_rule"] == "shuffled"
    steps = launch.plan(ab, 4, rule="abba")
    assert [st.stack for st in steps] == [ab[0], ab[1], ab[1], ab[0], ab[1], ab[0], ab[0], ab[1]]
    assert steps[2].bench_args(ab)[-2:] == ["--order", "abba"]
    assert launch.plan(ab, 2) == launch.plan(ab, 2, rule="shuffled")


def test_bench_run_records_the_order_rule_in_every_schedule():
    from bench.run.session import round_schedules

    sched = round_schedules(["keras3-jax"], 3, f"keras3-jax {CANDIDATE}", None, 4, "abba")
    assert sched["keras3-jax"]["order_rule"] == "abba" and sched["keras3-jax"]["position"] == 2


#: make's own flags from a parent make (`make test` runs the unit tests as a parallel job): not for a child make
PARENT_MAKE = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")


def child_make_env() -> dict[str, str]:
    """This process's environment without the parent make's jobserver flags."""
    return {k: v for k, v in os.environ.items() if k not in PARENT_MAKE}


def make_n(*args: str) -> str:
    env = child_make_env()
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return subprocess.run(["make", "-n", "--no-print-directory", *args, f"PYTHON={sys.executable}", "DEVICE=cpu",
                           "DOCKER=docker", "COMPOSE=docker compose"], cwd=ROOT, capture_output=True, text=True,
                          env=env).stdout


def test_make_compare_versions_runs_bench_all_of_the_two_stacks_in_abba_rounds_into_its_own_run():
    out = make_n("compare-versions", "BASE=keras3-jax", f"CANDIDATE={CANDIDATE}")
    run = f"versions-keras3-jax-vs-{CANDIDATE}-classic-smoke-cpu"
    assert f'bench-all STACKS="keras3-jax {CANDIDATE}" ORDER=abba' in out
    assert "REPEATS=$(" in out and f"RUN={run}" in out.replace("\\\n", " ")
    assert versions.COMPARE_ROUNDS == 4
    # the launch loop (make -n runs it: its line holds $(MAKE)) gives ABBA over the default 4 rounds
    assert re.findall(r"== round (\d) of 4 \(order abba\): (\S+)", out) == [
        ("1", "keras3-jax"), ("2", CANDIDATE), ("3", CANDIDATE), ("4", "keras3-jax")]
    assert out.count(f'--round-stacks "keras3-jax {CANDIDATE}" --order abba') == 8
    assert f"--out /results/runs/{run}" in out
    assert f"-o /results/{run}.csv" in out
    assert "docker build -f images/Dockerfile" in out and f"-t dlbench/{CANDIDATE}:cpu" in out
    out = make_n("compare-versions", "BASE=keras3-jax", f"CANDIDATE={CANDIDATE}", "REPEATS=6", "SUITE=tuning")
    assert "REPEATS=6" in out and "== round 6 of 6" in out and "versions-keras3-jax-vs-" in out


def test_make_version_stack_and_compare_versions_refuse_missing_input():
    for target, args in (("version-stack", ["BASE=keras3-jax"]), ("compare-versions", ["BASE=keras3-jax"])):
        r = subprocess.run(["make", "--no-print-directory", target, *args], cwd=ROOT, capture_output=True, text=True,
                           env=child_make_env())
        assert r.returncode == 2 and r.stderr.startswith(f"usage: make {target} ")
    assert '-m bench.host versions add --base "keras3-jax" --pins "keras==3.14.0"' in make_n(
        "version-stack", "BASE=keras3-jax", "PINS=keras==3.14.0")


def test_make_lock_relocks_derived_stacks_too():
    lock_sh = (ROOT / "images/lock.sh").read_text()
    assert "python3 -m bench.host versions refresh" in lock_sh and "for s in sys.argv[1:] or STACKS" in lock_sh


@pytest.fixture
def installed(monkeypatch):
    """importlib.metadata as in a container holding ``versions``."""
    have: dict[str, str] = {}

    def version(name):
        if name not in have:
            raise md.PackageNotFoundError(name)
        return have[name]

    monkeypatch.setattr(environment.md, "version", version)
    monkeypatch.setattr(worker, "capture", lambda: {"python": "3.11"})
    return have


def env_of(stack: str) -> tuple[dict, list]:
    rec = Record()
    worker.add_env(rec, Cell(stack=stack, suite="classic", workload="mnist_mlp", task="fit", size="smoke",
                             device="cpu"))
    return rec.env.model_dump(exclude_unset=True), rec.notes


def test_a_derived_stacks_record_carries_its_base_and_the_pins_as_installed(installed):
    installed.update({"keras": "3.14.1", "keras-hub": "0.29.1"})
    env, notes = env_of(CANDIDATE)
    assert env["stack_base"] == "keras3-jax" and env["pins_ok"] is True and not notes
    assert env["pins"] == {"keras": "3.14.1", "keras-hub": "0.29.1"} and env["python"] == "3.11"
    env, _ = env_of("keras3-jax")
    assert (env["stack_base"], env["pins"], env["pins_ok"]) == (None, {}, None)


def test_a_pin_the_image_does_not_hold_is_visible_in_the_record(installed):
    installed.update({"keras": "3.15.1", "keras-hub": "0.29.1"})  # e.g. the base's layer won over the stack's lock
    env, notes = env_of(CANDIDATE)
    assert env["pins"]["keras"] == "3.15.1" and env["pins_ok"] is False
    assert notes and "3.15.1" in notes[0] and "keras==3.14.1" in notes[0]
    del installed["keras"]
    env, _ = env_of(CANDIDATE)
    assert env["pins"]["keras"] is None and env["pins_ok"] is False


def test_a_pin_matches_its_installed_version_whatever_the_trailing_zeros():
    assert environment._release("3.14.0") == environment._release("3.14") != environment._release("3.14.1")


def test_make_push_leaves_version_stacks_out():
    out = make_n("push", "REGISTRY=r.example/x", "FLAVOR=cpu")
    assert "keras3-jax " in out.replace(";", " ") and CANDIDATE not in out
