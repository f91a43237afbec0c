"""Published figures the reports compare against, copied verbatim from their sources (each file's first line
names its source).

- ``keras_io_benchmarks_2024.csv``: the Keras 3 benchmark's Table 2 (A100 40GB, ms/step),
  https://keras.io/getting_started/benchmarks/ (checked 2024-11-18; code haifeng-jin/keras-benchmarks v0.0.5).
- ``mnist_cnn_tuning_4060ti.csv``: the MNIST CNN tuning study (RTX 4060 Ti, seconds for 41 epochs),
  https://machine-learning.anracom.com/2025/04/15/performance-of-pytorch-vs-keras-3-with-tensorflow-torch-backends-for-a-small-nn-model-on-a-nvidia-4060-ti-i-torch-vs-keras3-tf2-and-relevant-parameters/

Beside them, what each source's code or text states that the engines follow: ``keras_benchmarks`` (keras-benchmarks
v0.0.5's requests) and ``tuning_study`` (the tuning study's post on its input pipelines).
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
