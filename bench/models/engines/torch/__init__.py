"""The PyTorch family's run-time code (its line in ``bench.core.families.FAMILIES``; its settings in
``bench.core.families.torch``): ``epochs`` (the epoch engine: a plain PyTorch loop), ``data`` (its data pipelines and
the augmentation), ``steps`` (the paper suite's step-timed PyTorch tasks), ``adapter`` (PyTorch's, also Keras' on
PyTorch) and ``handloop`` (the free-running loop of ``bench.run.fidelity``). Nothing here imports PyTorch before a
cell calls it.
"""
