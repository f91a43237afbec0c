"""JAX's adapter (``bench.models.engines.frameworks.Framework``), for the plain-JAX family and Keras on JAX. Its
methods import JAX lazily.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.models.engines.frameworks import Framework

#: JAX GEMM results kept in flight while the host waits for the oldest (``Jax.run_and_wait``).
GEMM_IN_FLIGHT = 2


class Jax(Framework):
    """JAX: ``jax.devices('gpu')``, ``jax_default_matmul_precision``, ``memory_stats``; ``block_until_ready``."""

    module = "jax"

    def gpu_devices(self) -> list[str]:
        import jax

        try:
            return [str(d) for d in jax.devices("gpu")]
        except RuntimeError:  # no GPU backend initialised
            return []

    def gpu_matmul(self, a) -> float:
        import jax

        x = jax.device_put(a, jax.devices("gpu")[0])
        return float((x @ x).sum())

    def run_and_wait(self, call: Callable[[], Any], reps: int, device: str) -> None:
        """JAX has no device-wide barrier: ``block_until_ready`` waits for the arrays it is given, and
        ``jax.live_arrays()`` (``barrier``) no longer holds a result the caller dropped. So each call's result
        is kept and blocked on, oldest first, with ``GEMM_IN_FLIGHT`` calls queued behind it (the device
        always has the next one while the host waits) and only that many results in memory."""
        import collections

        import jax

        pending: collections.deque = collections.deque()
        for _ in range(reps):
            pending.append(call())
            if len(pending) > GEMM_IN_FLIGHT:
                pending.popleft().block_until_ready()
        jax.block_until_ready(list(pending))

    def gemm_call(self, dtype: str, n: int, device: str) -> Callable[[], Any]:
        import jax
        import jax.numpy as jnp

        put = lambda x: jax.device_put(x, jax.devices(device)[0])  # noqa: E731
        ka, kb = jax.random.split(jax.random.key(0))
        a = put(jax.random.normal(ka, (n, n), dtype=dtype))  # random, as TF and torch: not all-ones bits
        b = put(jax.random.normal(kb, (n, n), dtype=dtype))
        mm = jax.jit(jnp.matmul)
        return lambda: mm(a, b)

    def set_tf32(self, enabled: bool) -> None:
        import jax

        jax.config.update("jax_default_matmul_precision", "tensorfloat32" if enabled else "highest")

    def tf32_switches(self) -> dict[str, Any]:
        """``jax_default_matmul_precision`` (matmuls and convolutions; None: DEFAULT, TF32 on a GPU that has it)."""
        import jax

        # jax's Config declares its flags at run time, so a type checker cannot see them
        return {"jax_default_matmul_precision": jax.config.jax_default_matmul_precision}  # type: ignore[attr-defined]

    def peak_bytes(self) -> int | None:
        import jax

        stats = jax.devices()[0].memory_stats() or {}
        return stats.get("peak_bytes_in_use")

    def barrier(self, device: str) -> Callable[[], None]:
        """``block_until_ready`` on every live array (JAX dispatches asynchronously on CPU too)."""
        import jax

        def jax_barrier() -> None:
            jax.block_until_ready(jax.live_arrays())

        return jax_barrier


#: The adapter ``bench.models.engines.frameworks.framework("jax")`` returns.
ADAPTER = Jax()
