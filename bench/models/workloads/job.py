"""What a step engine times for one task of a ``bench.models.workloads.StepWorkload`` (``Job``, built inside the
cell by the model's ``keras_job`` / ``torch_job``) and the check of a step's output (``check_output``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Job:
    """What an engine times for one task of a ``StepWorkload`` on one stack (built inside the cell).

    Attributes:
        model: the framework model (``keras.Model`` or ``torch.nn.Module``): its parameters are counted,
            and for ``fit`` trained.
        inputs / targets: one batch of host arrays for Keras ``fit``/``predict`` (None with ``call``).
        loss: Keras loss for ``fit``. optimizer: ``adamw`` or ``adam`` (Keras' defaults on every stack).
        call: ``call(model) -> result`` for one timed step when the step is not a Keras ``fit``/``predict``
            step: a PyTorch step (loss for ``fit``, which the engine back-propagates; outputs otherwise),
            a ``generate`` call (returns tokens generated per sequence), an SD denoising step.
        precision: ``float32`` or ``bfloat16`` (the dtype the weights and compute use).
        generated_tokens: tokens each ``generate`` call must produce per sequence (fixed length).
        recorded: settings the job fixed that the record's ``settings`` block must carry (e.g. generate's
            ``prompt_tokens``).
        notes: differences from the source the record's ``notes`` must carry.
    """

    model: Any
    inputs: Any = None
    targets: Any = None
    loss: Any = None
    optimizer: str | None = None
    call: Callable[[Any], Any] | None = None
    precision: str = "float32"
    generated_tokens: int | None = None
    recorded: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def checked_tokens(self, produced: Any) -> int | None:
        """``produced`` (tokens per sequence of the last ``generate`` call) when it is the fixed length, None
        for a task that generates nothing.

        Raises:
            RuntimeError: generation stopped short of (or ran past) ``generated_tokens``.
        """
        if self.generated_tokens is None:
            return None
        if produced != self.generated_tokens:
            raise RuntimeError(f"generate produced {produced} tokens per sequence, expected {self.generated_tokens} "
                               "(generation must run to the fixed length)")
        return int(produced)


def _arrays(x: Any) -> list[Any]:
    """The arrays inside a step's output: an array or tensor, or a dict/tuple/list (or a model output with
    ``values()``, like transformers' ModelOutput) of them; other leaves are left out."""
    if x is None or isinstance(x, (int, float, str)):
        return []
    if isinstance(x, dict) or (hasattr(x, "values") and callable(x.values) and not hasattr(x, "shape")):
        return [a for v in x.values() for a in _arrays(v)]
    if isinstance(x, (tuple, list)):
        return [a for v in x for a in _arrays(v)]
    return [x] if hasattr(x, "shape") else []


def check_output(task: str, produced: Any) -> dict[str, Any] | None:
    """Shapes and finiteness of the last step's output (``predict``: the model's output; ``fit`` on a loop
    that returns it: the loss). None when the step returned no array (Keras ``fit``, ``generate``).

    Returns:
        ``{"shapes": [[...], ...], "finite": True}``.

    Raises:
        RuntimeError: an output holds NaN or Inf (the model did not compute what it should; the cell fails).
    """
    import numpy as np

    arrays = _arrays(produced)
    if task == "generate" or not arrays:
        return None
    shapes, finite = [], True
    for a in arrays:
        if hasattr(a, "detach"):  # torch
            a = a.detach().float().cpu().numpy()
        a = np.asarray(a)
        shapes.append([int(d) for d in a.shape])
        if a.dtype.kind in "fc":
            finite = finite and bool(np.isfinite(a.astype(np.float32)).all())
    if not finite:
        raise RuntimeError(f"{task} produced non-finite values (NaN or Inf) in an output of shapes {shapes}")
    return {"shapes": shapes, "finite": True}
