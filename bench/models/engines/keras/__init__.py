"""The Keras family's run-time code (its line in ``bench.core.families.FAMILIES``; its settings in
``bench.core.families.keras``): ``epochs`` (the epoch engine: ``model.fit`` on the four Keras stacks), ``steps`` (the
paper suite's step-timed Keras tasks), ``runtime`` (the stack's Keras module, seeding, the timing callback), ``data``
(the data pipelines and the augmentation), ``adapter`` (TensorFlow's: the framework only Keras runs on here) and
``handloop`` (the free-running ``fit`` loop of ``bench.run.fidelity``). Nothing here imports Keras or TensorFlow
before a cell calls it.
"""
