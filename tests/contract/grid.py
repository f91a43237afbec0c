"""The contract grid, generated from the registries: every framework family (``bench.core.families.FAMILIES``) x
every workload (``bench.models.workloads.WORKLOADS``) x each of its tasks. A new family or workload adds rows here, not
test files.

Each family's row in ``MODELS`` says how a test builds, counts and runs that family's model of a workload; it is the
one place a new family must add a line (``test_every_family_has_a_model_row`` fails until it does)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from bench.core.families import FAMILIES
from bench.models import datasets
from bench.models.workloads import WORKLOADS, StepWorkload, Workload
from tests.conftest import has

#: The epoch-trained workloads (classic and tuning suites), in registry order.
FIT_WORKLOADS = [n for n, w in WORKLOADS.items() if isinstance(w, Workload)]
#: The step-timed workloads (paper suite), in registry order.
STEP_WORKLOADS = [n for n, w in WORKLOADS.items() if isinstance(w, StepWorkload)]


def synthetic_batch(name: str, n: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``n`` synthetic examples of workload ``name`` in the Dataset's (Keras') layout, after its ``prepare``, and the
    dataset's meta (``num_classes``...)."""
    w = WORKLOADS[name]
    assert isinstance(w, Workload)
    ds = datasets.synthetic(w.dataset, n, 2, "test")
    ds = w.prepare(ds) if w.prepare else ds
    return ds.x_train, ds.meta


def _keras(w: Workload, meta: dict[str, Any], xs: tuple[Any, ...]) -> tuple[int, tuple[int, ...]]:
    import keras  # conftest sets KERAS_BACKEND=torch: the Keras 3 build, on the backend installed here

    model = w.build_keras(keras, meta)
    out = model(list(xs) if len(xs) > 1 else xs[0], training=False)
    return int(model.count_params()), tuple(keras.ops.shape(out))


def _torch(w: Workload, meta: dict[str, Any], xs: tuple[Any, ...]) -> tuple[int, tuple[int, ...]]:
    import torch

    from bench.models.engines.torch.data import to_tensors
    from bench.models.engines.torch.epochs import effective_param_count

    model = w.build_torch(meta)
    out = model(*to_tensors(torch, xs, w.torch_layout, torch.device("cpu")))
    return effective_param_count(model), tuple(out.shape)


def _flax(w: Workload, meta: dict[str, Any], xs: tuple[Any, ...]) -> tuple[int, tuple[int, ...]]:
    import jax
    import jax.numpy as jnp
    from flax import nnx

    from bench.models.engines.jax.epochs import param_count

    assert w.build_flax is not None
    model = w.build_flax(meta, nnx.Rngs(params=0, dropout=1))
    # the Flax twins take the Keras layout; traced for its shape only (eager JAX dispatches op by op: seconds)
    out = nnx.eval_shape(lambda m, *a: m(*a), model, *[jnp.asarray(x) for x in xs])
    return param_count(jax, nnx.state(model, nnx.Param)), tuple(out.shape)


@dataclass(frozen=True)
class FamilyModel:
    """How the tests run one family's model of a workload.

    Attributes:
        needs: the modules it imports (the row is skipped where one is not installed).
        count_and_forward: (workload, meta, inputs in the Keras layout) -> (parameters as the family's engine
            records them, shape of the logits).
    """

    needs: tuple[str, ...]
    count_and_forward: Callable[[Workload, dict[str, Any], tuple[Any, ...]], tuple[int, tuple[int, ...]]]


#: One row per family of ``FAMILIES``.
MODELS: dict[str, FamilyModel] = {
    "keras": FamilyModel(("keras", "torch"), _keras),
    "torch": FamilyModel(("torch",), _torch),
    "jax": FamilyModel(("jax", "flax", "optax"), _flax),
}


def family_rows(workloads: list[str]) -> list[Any]:
    """``pytest.param(family, workload)`` for every family x workload, skipped where the family's modules are
    missing, with ids ``family-workload``."""
    rows = []
    for family in FAMILIES:
        needs = MODELS[family].needs if family in MODELS else ()
        missing = [m for m in needs if not has(m)]
        marks = [pytest.mark.skipif(bool(missing), reason=f"{', '.join(missing)} not installed")]
        rows += [pytest.param(family, name, marks=marks, id=f"{family}-{name}") for name in workloads]
    return rows


def cell_rows() -> list[Any]:
    """``pytest.param(family, workload, task)`` for every family x workload x task the registry declares (a
    step-timed workload's tasks are its published cells' tasks), ids ``family-workload-task``."""
    rows = []
    for family in FAMILIES:
        for name, w in WORKLOADS.items():
            tasks = w.tasks if isinstance(w, Workload) else tuple(dict.fromkeys(t for t, _ in w.cells))
            rows += [pytest.param(family, name, task, id=f"{family}-{name}-{task}") for task in tasks]
    return rows
