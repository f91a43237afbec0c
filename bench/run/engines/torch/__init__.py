"""The PyTorch family's run-time code (declared in ``bench.core.families``; its settings in
``bench.core.families.torch``): ``fit`` (the epoch engine: a plain PyTorch loop), ``data`` (its data pipelines and
the augmentation), ``steps`` (the paper suite's step-timed PyTorch tasks). Nothing here imports PyTorch before a
cell calls it.
"""
