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
    assert f"rmi {ref}" in calls and not any(c.startswith("push") for c in calls)


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
