"""An image's registry tag, the code under it and the commit its records name (``env.git_commit``, which its build
bakes in) are one build's: ``make build`` labels an image with its inputs' tag (``bench/host/imagetag.py``), ``make
push`` pushes it only under the tag its label names, and ``make images`` builds where a pulled image's label is not the
tag it pulled. Run against a fake docker that logs its calls."""

import subprocess
import sys
from pathlib import Path

import pytest

from bench.host import imagetag

ROOT = Path(__file__).resolve().parents[2]
LABEL = "dlbench.inputs"


def fake_docker(tmp_path: Path, label: str) -> tuple[Path, Path]:
    """A docker whose every image carries ``label`` as its inputs label (empty: none), that pulls any name and prints
    a digest for a push; (its path, the log of its calls)."""
    log, fake = tmp_path / "docker.log", tmp_path / "docker"
    fake.write_text(f"""#!/bin/sh
echo "$@" >> {log}
case "$1 $4" in
  *{LABEL}*) echo "{label}";;
  image*) echo "${{5%%:*}}@sha256:0123";;
  push*) echo "${{2##*:}}: digest: sha256:0123 size: 2412";;
esac
""")
    fake.chmod(0o755)
    return fake, log


def make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-s", *args, f"PYTHON={sys.executable}"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_a_built_image_is_labelled_with_its_inputs_tag(tmp_path):
    fake, log = fake_docker(tmp_path, "")
    p = make("build-pytorch", "FLAVOR=cpu", "DEVICE=cpu", f"DOCKER={fake}")
    assert p.returncode == 0, p.stderr
    (build,) = [c for c in log.read_text().splitlines() if c.startswith("build ")]
    assert f"--label {LABEL}={imagetag.tag('pytorch', 'cpu')} -t dlbench/pytorch:cpu" in build


@pytest.mark.parametrize("label", ["cpu-000000000000", ""])
def test_make_push_refuses_an_image_built_from_other_inputs_than_its_tag(tmp_path, label):
    """``make push`` tagged whatever image ``dlbench/<stack>:<flavor>`` was with this tree's inputs: one built before
    bench/ or a lock changed was pushed under the new inputs' tag, and whoever pulled it ran other code than the tag
    says, its records naming the commit of a build the tag does not describe."""
    fake, log = fake_docker(tmp_path, label)
    p = make("push", "REGISTRY=reg/x", "FLAVOR=cpu", "PUSH_STACKS=pytorch", f"DOCKER={fake}", f"RESULTS_DIR={tmp_path}")
    ref = f"reg/x/pytorch:{imagetag.tag('pytorch', 'cpu')}"
    assert p.returncode != 0
    assert (f"push: dlbench/pytorch:cpu was built from other inputs ({label or 'no ' + LABEL + ' label'}) than this "
            f"tree's ({ref.rsplit(':', 1)[1]}): make build first") in p.stderr
    calls = log.read_text().splitlines()
    assert not any(c.startswith(("push", "tag")) for c in calls), calls


def test_make_images_builds_where_a_pulled_image_is_not_labelled_with_the_tag_it_pulled(tmp_path):
    """An image pushed without the check (or by another tool) may hold other inputs than its tag names: it is not
    taken as this tree's image."""
    fake, log = fake_docker(tmp_path, "cpu-000000000000")
    p = make("images", "REGISTRY=reg/x", "STACKS=pytorch", "FLAVOR=cpu", "DEVICE=cpu", f"DOCKER={fake}",
             f"RESULTS_DIR={tmp_path}")
    assert p.returncode == 0, p.stderr
    ref = f"reg/x/pytorch:{imagetag.tag('pytorch', 'cpu')}"
    assert f"pytorch: {ref} pulled, but its {LABEL} label does not name that tag" in p.stdout
    calls = log.read_text().splitlines()
    assert f"tag {ref} dlbench/pytorch:cpu" not in calls
    assert any(c.startswith("build ") and "STACK=pytorch" in c for c in calls)


def test_an_image_built_on_another_base_says_so_in_its_label_and_is_not_pushed_under_the_tag(tmp_path):
    """The tag hashes the build's files, not ``BASE_IMAGE``: an image built on another base carried the same label as
    one on the pinned base, so ``make push`` shared it under the pinned base's tag."""
    fake, log = fake_docker(tmp_path, "")
    assert make("build-pytorch", "FLAVOR=cpu", "DEVICE=cpu", "BASE_IMAGE=my/base:1", f"DOCKER={fake}").returncode == 0
    (build,) = [c for c in log.read_text().splitlines() if c.startswith("build ")]
    assert f"--label {LABEL}={imagetag.tag('pytorch', 'cpu')}+base=my/base:1 -t" in build


def test_make_push_checks_every_image_before_it_pushes_any(tmp_path):
    """Pushing the default stacks' images after ``make build`` failed at ``pytorch-cu12`` (not a default stack, so not
    built) once six images were pushed, and the failed push's list of them was thrown away: ``make cloud-k8s`` then
    pulled by tag. It pushes the images of STACKS (what ``make build`` builds), each checked before any is pushed; one
    not built stops the push in one line, the last good list kept."""
    log, fake = tmp_path / "docker.log", tmp_path / "docker"
    fake.write_text(f"""#!/bin/sh
echo "$@" >> {log}
case "$1 $4 $5" in
  *{LABEL}*dlbench/jax:cpu) exit 1;;
  *{LABEL}*) s="${{5#dlbench/}}"; {sys.executable} -m bench.host imagetag "${{s%%:*}}" "${{s#*:}}";;
  push*) echo "x: digest: sha256:0123 size: 1";;
esac
""")
    fake.chmod(0o755)
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "cpu.txt").write_text("last good\n")
    args = ("push", "REGISTRY=reg/x", "FLAVOR=cpu", f"DOCKER={fake}", f"RESULTS_DIR={tmp_path}")
    p = make(*args, "STACKS=pytorch jax")
    assert p.returncode != 0 and "push: dlbench/jax:cpu is not built: make build-jax FLAVOR=cpu" in p.stderr, p.stderr
    calls = log.read_text().splitlines()
    assert not any(c.startswith(("push", "tag")) for c in calls), calls
    assert (tmp_path / "images" / "cpu.txt").read_text() == "last good\n"
    log.unlink()
    assert make(*args).returncode != 0  # the default stacks, jax among them
    inspected = {c.split()[-1] for c in log.read_text().splitlines() if c.startswith("image inspect")}
    assert "dlbench/pytorch-cu12:cpu" not in inspected and "dlbench/keras3-torch:cpu" in inspected
    p = make(*args, "STACKS=pytorch")
    assert p.returncode == 0, p.stderr
    assert [ln.split()[0] for ln in (tmp_path / "images" / "cpu.txt").read_text().splitlines()] == [
        f"reg/x/pytorch:{imagetag.tag('pytorch', 'cpu')}", f"reg/x/collector:{imagetag.tag('collector', 'latest')}"]
