"""Published figures the reports compare against, copied verbatim from ``../shared/reference/``.

- ``keras_io_benchmarks_2024.csv``: the Keras 3 benchmark's Table 2 (A100 40GB, ms/step).
- ``mnist_cnn_tuning_4060ti.csv``: the MNIST CNN tuning study (RTX 4060 Ti, seconds for 41 epochs).
"""

from __future__ import annotations

import csv
import io
from importlib import resources


def read_csv(name: str) -> list[dict[str, str]]:
    """Rows of a reference CSV, its leading ``#`` comment lines (the source) skipped.

    Raises:
        FileNotFoundError: no such reference file.
    """
    text = resources.files("bench.core.reference").joinpath(name).read_text()
    return list(csv.DictReader(io.StringIO("\n".join(ln for ln in text.splitlines() if not ln.startswith("#")))))
