"""What a workload's source publishes, stated once in the workload's folder (``<folder>/spec.py``) with where the
source says it. The registration takes its parameter count, batch and epochs from it, and the tests hold the
registry and every family's build to it (tests/models/workloads/test_workloads.py, tests/contract/test_parity.py).
Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class PublishedOptimizer(NamedTuple):
    """The source's optimizer, with its framework's defaults filled in for what the source left unset (Keras' names,
    as ``bench.models.workloads.training.OptimizerSpec``): None where a hyper-parameter is not part of the rule."""

    name: str
    learning_rate: float
    rho: float | None = None
    epsilon: float | None = None
    beta_1: float | None = None
    beta_2: float | None = None
    decay: float = 0.0


@dataclass(frozen=True)
class Published:
    """The published facts of one epoch-trained workload.

    Attributes:
        params: the model's parameter count (the source script's ``model.summary()``, or the figure the source
            states).
        batch_size: examples per step of the run the source timed.
        epochs: epochs of that run.
        optimizer: its optimizer (``PublishedOptimizer``).
        where: where the source states each fact (file@tag:lines, or the post), in the order above.
    """

    params: int
    batch_size: int
    epochs: int
    optimizer: PublishedOptimizer
    where: str
