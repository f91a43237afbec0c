"""What the MNIST CNN tuning study's post ("Performance of PyTorch vs. Keras 3 with tensorflow/torch backends for a
small NN-model on a Nvidia 4060 TI - I", the source of ``mnist_cnn_tuning_4060ti.csv``) states about its input
pipelines in its text, beyond its table. The engines build their pipelines from these values and the report pairs
published times by them, so each is stated once, here.

- tf.data: the post set both parameters it could to ``tf.data.AUTOTUNE``, the parallel calls that produce the
  batches (``batch(num_parallel_calls=...)``) and the prefetch buffer (``prefetch(buffer_size=...)``), and shuffled
  every tf.data run with a width of 20,000 examples (it says so again for its ``jit_compile`` runs).
- PyTorch: its tensor datasets went through a ``DataLoader`` with the standard parameters and ``num_workers=0``
  (its table gives ``num_workers`` per row; the torchvision rows ran 0 and 6). That sentence covers the tensor
  datasets only (``LOADER_STATED_FOR``): the torchvision rows' other loader options (``pin_memory``,
  ``persistent_workers``...) are not stated, and PyTorch's defaults are our assumption there.
"""

from __future__ import annotations

#: The post's tf.data shuffle width, in examples (every tf.data run, the ``jit_compile`` ones included).
TF_DATA_SHUFFLE_BUFFER = 20_000
#: The tf.data arguments the post set to ``tf.data.AUTOTUNE``: (call, argument).
TF_DATA_AUTOTUNED = (("batch", "num_parallel_calls"), ("prefetch", "buffer_size"))
#: ``DataLoader`` worker processes of the post's tensor-dataset runs (the loader otherwise on PyTorch's defaults).
TENSOR_DATASET_NUM_WORKERS = 0
#: The PyTorch pipelines whose ``DataLoader`` options the post states ("with standard parameters"); any other
#: (``torchvision_dataset_transforms``) runs PyTorch's defaults as an assumption.
LOADER_STATED_FOR = ("tensor_dataset",)
