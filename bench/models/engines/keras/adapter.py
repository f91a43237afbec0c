"""TensorFlow's adapter (``bench.models.engines.frameworks.Framework``): the framework the Keras family drives on its
TensorFlow stacks (Keras on JAX or PyTorch uses those families' adapters: the stack's ``backend`` picks one).
Its methods import TensorFlow lazily.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.models.engines.frameworks import Framework


class TensorFlow(Framework):
    """TensorFlow: ``tf.config`` GPU list, TF32 switch and memory info; ``sync_devices`` as the barrier."""

    module = "tensorflow"

    def gpu_devices(self) -> list[str]:
        import tensorflow as tf

        return [d.name for d in tf.config.list_physical_devices("GPU")]

    def gpu_matmul(self, a) -> float:
        import tensorflow as tf

        with tf.device("/GPU:0"):
            return float(tf.reduce_sum(tf.matmul(a, a)).numpy())

    def gemm_call(self, dtype: str, n: int, device: str) -> Callable[[], Any]:
        import tensorflow as tf

        with tf.device("/GPU:0" if device == "gpu" else "/CPU:0"):
            a = tf.random.normal((n, n), dtype=dtype)
            b = tf.random.normal((n, n), dtype=dtype)
        mm = tf.function(tf.matmul)
        return lambda: mm(a, b)

    def set_tf32(self, enabled: bool) -> None:
        import tensorflow as tf

        tf.config.experimental.enable_tensor_float_32_execution(enabled)

    def tf32_switches(self) -> dict[str, Any]:
        """``tensor_float_32_execution_enabled()``: one switch for matmuls and convolutions (on by default)."""
        import tensorflow as tf

        return {"tf_tensor_float_32_execution": tf.config.experimental.tensor_float_32_execution_enabled()}

    def peak_bytes(self) -> int | None:
        import tensorflow as tf

        return int(tf.config.experimental.get_memory_info("GPU:0")["peak"])

    def barrier(self, device: str) -> Callable[[], None]:
        """``tf.test.experimental.sync_devices()``."""
        import tensorflow as tf

        return tf.test.experimental.sync_devices


#: The adapter ``bench.models.engines.frameworks.framework("tensorflow")`` returns.
ADAPTER = TensorFlow()
