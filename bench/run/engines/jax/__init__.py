"""The plain-JAX family's run-time code (declared in ``bench.core.families``; its settings in
``bench.core.families.jax``): ``fit`` (the epoch engine: a plain JAX loop over a Flax NNX model) and ``data`` (its
data pipelines and the augmentation). It has no step engine. Nothing here imports JAX before a cell calls it.
"""
