"""The record's ``env`` block (``bench.run.environment``): framework-reported versions, the distributions and the
environment variables it names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.run import environment

ROOT = Path(__file__).resolve().parents[1]

#: A process that imports JAX alone (no Flax, which imports ``jax.extend`` itself), as keras3-jax's cells do.
JAX_ONLY_CODE = """
import json, sys
import jax
assert "jax.extend" not in sys.modules, "this check needs a process where nothing imported jax.extend"
from bench.run.environment import framework_cuda
print("FRAMEWORK_CUDA" + json.dumps(framework_cuda()))
"""


def test_jax_backend_is_read_in_a_process_that_imported_only_jax():
    """jax 0.10.2's ``import jax`` leaves ``jax.extend`` unimported: the record must still hold the platform, not
    ``AttributeError: module 'jax' has no attribute 'extend'`` (keras3-jax imports JAX without Flax)."""
    pytest.importorskip("jax")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    p = subprocess.run([sys.executable, "-c", JAX_ONLY_CODE], capture_output=True, text=True, timeout=300,
                       cwd=ROOT, env=env)
    line = next((x for x in p.stdout.splitlines() if x.startswith("FRAMEWORK_CUDA")), None)
    assert line, p.stderr[-3000:]
    jax_block = json.loads(line[len("FRAMEWORK_CUDA"):])["jax"]
    assert "error" not in jax_block, jax_block
    assert jax_block["platform"] == "cpu" and jax_block["platform_version"]


def _lock_names() -> set[str]:
    names = set()
    for lock in ROOT.glob("images/*/requirements-*.lock"):
        for line in lock.read_text().splitlines():
            if "==" in line and not line.startswith((" ", "#")):
                names.add(line.split("==")[0].strip().lower())
    return names


@pytest.mark.parametrize("name", ["jax-cuda12-pjrt", "jax-cuda12-plugin", "triton", "flax", "optax",
                                  "torchvision", "nvidia-cublas-cu12", "nvidia-cublas"])
def test_the_gpu_runtime_packages_the_locks_pin_are_recorded(name):
    """The GPU runtime a record ran on: XLA's CUDA plugin, Triton, the model libraries, cuBLAS under both the
    CUDA 12 name and the CUDA 13 one (torch 2.13's lock), each a name some image lock pins."""
    assert name in _lock_names()
    assert name in environment.DISTRIBUTIONS

