"""The closed vocabularies that several layers share, each defined once as a ``Literal``: type hints use it, and
the values (CLI choices, checks) come from it with ``typing.get_args``. Standard library only."""

from __future__ import annotations

from typing import Literal

#: Where a run's cells run: ``auto`` resolves to ``gpu`` when every selected stack's framework sees a GPU, else ``cpu``.
Device = Literal["auto", "cpu", "gpu"]
#: A device once resolved (``auto`` decided).
RunDevice = Literal["cpu", "gpu"]
#: A workload's size: ``smoke`` (tiny and fast, the harness's test) or ``full`` (the published sizes);
#: ``bench.models.workloads.SIZES`` lists them.
Size = Literal["smoke", "full"]
#: A suite (``bench run --suite``): each workload's spec names one (``bench.models.workloads.register`` refuses any
#: other), and the host checks ``SUITE`` against it before an image is built (``bench.core.request.check_suite``).
Suite = Literal["classic", "tuning", "paper"]
#: The suites that run the variants of their own grid (``bench/run/sweeps/<file>``, ``bench.run.sweep.default_grid``):
#: ``--set``, ``--compile`` and ``--no-augment`` would not change them, so ``bench run`` and the host refuse those.
DEFAULT_GRIDS = {"tuning": "tuning.yaml"}
