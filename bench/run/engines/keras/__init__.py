"""The Keras family's run-time code (declared in ``bench.core.families``; its settings in
``bench.core.families.keras``): ``fit`` (the epoch engine: ``model.fit`` on the four Keras stacks), ``steps`` (the
paper suite's step-timed Keras tasks), ``runtime`` (the stack's Keras module, seeding, the timing callback), ``data``
(the data pipelines and the augmentation). Nothing here imports Keras before a cell calls it.
"""
