"""The plain-JAX family's run-time code (its line in ``bench.core.families.FAMILIES``; its settings in
``bench.core.families.jax``): ``epochs`` (the epoch engine: a plain JAX loop over a Flax NNX model), ``data`` (its data
pipelines and the augmentation), ``adapter`` (JAX's, also Keras' on JAX) and ``handloop`` (the free-running loop of
``bench.run.fidelity``). It has no step engine. Nothing here imports JAX before a cell calls it.
"""
