"""``EffectiveSettings``: the record's ``settings`` block, what the engines and the worker recorded in effect."""

from __future__ import annotations

from typing import Any

from bench.core.knobs import DOCS
from bench.results.schema.declare import Block, entry

_TF32_SWITCHES = ("the framework's TF32 switch as the cell ended")
_JAX = "plain-JAX stack: "


def knob(name: str) -> Any:
    """The field of the knob ``name`` (``bench.core.knobs``, whose settings classes declare its meaning, default and
    allowed values): its value as the cell ran it. Typed ``Any``: a knob's values changed type across schema versions
    (``tf32`` was a bool in version 2), and an engine records some as they took effect (Keras' ``jit_compile``)."""
    return entry(DOCS[name])


#: (``train_data_placement``'s older wording, Keras backend (``keras_backend``)) -> the wording recorded since for the
#: same placement.
#: A fixed table of what older records hold: a new family or backend never extends it. Until commit 433937a
#: (2026-11-23) the Keras engine recorded the ``numpy_fit`` pipeline as
#: ``host`` and ``tensors_fit`` as ``backend tensors (device)`` whatever the backend; since then the value names
#: what Keras does on each (bench/models/engines/keras/data.py ``PLACEMENT``, with its Keras sources): tf.data
#: batches on TensorFlow (tf-keras and Keras 3 alike), NumPy slices on JAX (backend arrays too: Keras turns them into
#: NumPy), and on PyTorch NumPy slices or batches gathered from the tensors on their device. The wording changed,
#: not what Keras did: ``bench compare`` reads an older wording as its newer one (``placement_now``).
OLDER_PLACEMENT: dict[tuple[str, str], str] = {
    ("host", "tensorflow"): "host (tf.data)",
    ("host", "jax"): "host (NumPy)",
    ("host", "torch"): "host (NumPy)",
    ("backend tensors (device)", "tensorflow"): "host (tf.data)",
    ("backend tensors (device)", "jax"): "host (NumPy)",
    ("backend tensors (device)", "torch"): "device (torch tensors)",
}


def placement_now(value: Any, backend: Any) -> Any:
    """``train_data_placement`` as it is worded now: an older wording (``OLDER_PLACEMENT``) on Keras backend
    ``backend`` -> the current one; any other value, or an older wording on an unknown backend, as recorded."""
    return OLDER_PLACEMENT.get((value, backend), value) if isinstance(value, str) else value


class EffectiveSettings(Block):
    """``settings``: every knob (``bench.core.knobs``, first, in ``DOCS``' order: ``tests/results/test_schema.py``
    checks the two lists are one) and what took effect, as the engines and the worker recorded it. A record's keys
    beyond these (older engines') load and are kept."""

    data_pipeline: Any = knob("data_pipeline")
    augment: Any = knob("augment")
    steps_per_execution: Any = knob("steps_per_execution")
    jit_compile: Any = knob("jit_compile")
    precision: Any = knob("precision")
    tf32: Any = knob("tf32")
    sync: Any = knob("sync")
    row_lstm: Any = knob("row_lstm")
    progress: Any = knob("progress")
    num_workers: Any = knob("num_workers")
    pin_memory: Any = knob("pin_memory")
    persistent_workers: Any = knob("persistent_workers")
    preload: Any = knob("preload")
    compile: Any = knob("compile")
    grad_scaler: Any = knob("grad_scaler")
    NVIDIA_TF32_OVERRIDE: str | None = entry("as the cell's process had it: '0' (cuBLAS/cuDNN never use TF32) for "
                                             "tf32=off, else unset")
    tf_tensor_float_32_execution: bool | None = entry(_TF32_SWITCHES)
    jax_default_matmul_precision: str | None = entry(_TF32_SWITCHES)
    torch_matmul_allow_tf32: bool | None = entry(_TF32_SWITCHES)
    torch_cudnn_allow_tf32: bool | None = entry(_TF32_SWITCHES)
    torch_float32_matmul_precision: str | None = entry(_TF32_SWITCHES)
    torch_matmul_fp32_precision: str | None = entry("torch 2.9+: torch.backends.cuda.matmul.fp32_precision as the "
                                                    "cell ended ('tf32'; 'ieee'; 'none': inherited, no TF32)")
    torch_cudnn_conv_fp32_precision: str | None = entry("torch 2.9+: torch.backends.cudnn.conv.fp32_precision (cuDNN "
                                                        "convolutions), as torch_matmul_fp32_precision")
    torch_cudnn_rnn_fp32_precision: str | None = entry("torch 2.9+: torch.backends.cudnn.rnn.fp32_precision (cuDNN "
                                                       "RNN kernels), as torch_matmul_fp32_precision")
    torch_cudnn_fp32_precision: str | None = entry(
        "torch 2.9+: the cuDNN-wide torch.backends.cudnn.fp32_precision, which inductor's Triton convolution kernels "
        "(torch.compile max-autotune) follow: TF32 only when 'tf32' (tf32=on sets it, tf32=off 'ieee'; at "
        "tf32=default it is 'none', so such a kernel runs FP32 while cuDNN's convolutions run TF32)")
    tf32_matmul: bool | None = entry("float32 matmuls could use TF32: a GPU cell with no override and the "
                                     "framework's switch on (MFU divides by the peak of the math in effect)")
    tf32_conv: bool | None = entry("float32 convolutions could use TF32 (as tf32_matmul)")
    tf32_rnn: bool | None = entry("float32 LSTMs could use TF32, by the switch that governs the kernel they ran as: "
                                  "cuDNN's RNN kernel for plain PyTorch's nn.LSTM on a GPU (cudnn.allow_tf32), "
                                  "the backend's matmuls for every Keras stack's 2017 LSTMs (no cuDNN: hard_sigmoid) "
                                  "and plain JAX's (bench.models.engines.math_mode.rnn_on_cudnn)")
    compile_cache: str | None = entry("PyTorch-backend stacks: 'fresh per cell' (torch.compile's inductor and Triton "
                                      "caches in an empty directory per cell process), plus any inductor cache switch "
                                      "the environment set")
    train_data_placement: str | None = entry("where each training batch is made, its first word 'host' or 'device' "
                                             "(Keras: 'host (tf.data)', 'host (NumPy)', 'device (torch tensors)'; "
                                             "the PyTorch and JAX loops name their pipeline's; Keras records "
                                             "before 2026-11-23 word it otherwise: OLDER_PLACEMENT)")
    generated_tokens: int | None = entry("paper suite, generate: tokens produced per sequence per call")
    prompt_tokens: int | None = entry("paper suite, generate: prompt length fed per sequence")
    bos_token_id: int | None = entry("paper suite, generate: the prompt's BOS id")
    tokenization_timed: bool | None = entry("paper suite, generate: false: the timed call takes token ids, without "
                                            "the tokenizer the source ran inside it")
    jit_compile_requested: Any = entry("paper suite, Keras: the jit_compile asked for (True, False, 'auto', or 'not "
                                       "requested (Keras default)')")
    jit_compile_requested_by: str | None = entry("who asked: the source's call (file@v0.0.5) or the jit_compile knob")
    generate_function: str | None = entry("paper suite, Keras generate: how the generate function was compiled")
    optimizer: dict[str, Any] | None = entry("epoch suites and the paper suite's Keras fit: the optimizer as built, "
                                             "read back from it: name, "
                                             "learning_rate, its hyper-parameters and lr_schedule; tf-keras "
                                             "(keras2-tf): jit_compile, its own XLA update step as it took effect "
                                             "(on with a GPU unless the cell's jit_compile is false)")
    loss: Any = entry("epoch suites: the loss as the engine computed it")
    labels: dict[str, Any] | None = entry("epoch suites, Keras: the label form fed to fit ('one_hot': "
                                          "keras.utils.to_categorical on the host before fit, as the 2017 scripts; "
                                          "'integer'), the compiled metrics and the source (file@tag:lines)")
    verbose: int | None = entry("Keras: the verbose fit (paper suite: fit and predict) got: 1 draws Keras' progress "
                                "bar, written to a discarded stream; 0 none (the classic suite's default, as the 2017 "
                                "notebooks; schema 3 and older: the verbose knob)")
    batch_end_hook: bool | None = entry("epoch suites, Keras: a callback given to fit overrides a training batch-end "
                                        "hook (the progress knob's keras_tqdm callback; the timing callback under "
                                        "sync every:N or step), so Keras hands it the batch's logs after every step "
                                        "(after every call where steps_per_execution > 1: Keras calls the batch hooks "
                                        "once per call of settings.steps_per_call steps)")
    keras_async_batch_end: bool | None = entry("epoch suites, Keras 3: whether Keras' CallbackList of fit's callbacks "
                                               "dispatches batch-end calls asynchronously, in a thread pool (only on "
                                               "JAX and PyTorch, and only without a batch-end hook: "
                                               "keras/src/callbacks/callback_list.py@v3.15.1:59-84), as Keras' own "
                                               "check gives it")
    keras_async_test_batch_end: bool | None = entry("epoch suites, Keras 3: the same for validation's batch-end "
                                                    "calls (a callback overriding on_test_batch_end turns it off; "
                                                    "keras_tqdm's does not: callback_list.py@v3.15.1:77-78, "
                                                    "200-204), as Keras' own check gives it")
    augmentation: dict[str, Any] | None = entry("epoch suites: how training images were augmented (shift ranges, "
                                                "flip, fill, interpolation, workers, where, implementation)")
    shuffle_buffer: int | None = entry("epoch suites: examples each epoch's shuffle draws from")
    steps_per_call: int | None = entry("epoch suites, Keras: the most steps one call of the compiled train function "
                                       "ran: steps_per_execution capped at the epoch's training steps "
                                       "(metrics.steps_per_epoch), as Keras ends a call at the epoch's last batch "
                                       "(keras/src/trainers/trainer.py@v3.15.1:122-125; tf-keras "
                                       "DataHandler._truncate_execution_to_epoch); an epoch runs ceil(steps_per_epoch "
                                       "/ steps_per_call) calls, its last the remainder (null: a record from before "
                                       "2026-11-27, or another engine)")
    row_lstm_calls_per_forward: int | None = entry("mnist_hierarchical_rnn, Keras: calls of the row LSTM in one "
                                                   "forward pass, counted on the trained model (28: one per image "
                                                   "row; 1: all rows at once, as Keras 2.0.8)")
    row_lstm_form: str | None = entry("mnist_hierarchical_rnn, Keras: the row LSTM's form as measured: 'reshape' (one "
                                      "call on the B*28 rows, 2017's form) or 'per_row' (28 calls of B rows, Keras 3's "
                                      "TimeDistributed); the knob row_lstm is what was asked")
    normalize: dict[str, Any] | None = entry("PyTorch torchvision_dataset_transforms: Normalize's mean and std and "
                                             "where they come from")
    # "model_config" is pydantic's own attribute: the field has another name in Python, its JSON key is the alias
    built_config: dict[str, Any] | None = entry("paper suite: the architecture config built (full: the published "
                                                "one; smoke: tiny)", alias="model_config")
    keras_version: str | None = entry("Keras' version")
    keras_backend: str | None = entry("Keras' backend")
    torch_version: str | None = entry("PyTorch's version")
    jax_version: str | None = entry("plain-JAX stack: JAX's version (jaxlib_version beside it)")
    flax_version: str | None = entry("plain-JAX stack: Flax's version (the NNX models)")
    optax_version: str | None = entry("plain-JAX stack: optax's version (the optimizers)")
    jaxlib_version: str | None = entry(_JAX + "jaxlib's version")
    device: str | None = entry(_JAX + "the JAX device the cell's arrays were placed on (str(jax.Device))")
    param_dtype: str | None = entry(_JAX + "the parameters' dtype (float32 at every precision)")
    compute_dtype: str | None = entry(_JAX + "the dtype the model computes in (the precision knob: float32 or "
                                      "bfloat16)")
    donated_state: bool | None = entry(_JAX + "whether the jitted step donates its state's buffers (jax.jit's "
                                       "donate_argnums: with jit_compile; op by op donates nothing)")
    steps: int | None = entry("paper suite: the timed steps after the first")



#: The ``settings`` fields that say whether float32 math may use TF32: the knob, the switches each framework had as
#: the cell ended, and what the harness derived from them. A CPU has no TF32, so on a CPU row they say nothing of
#: what ran (``bench compare``'s ``differs`` leaves them out there).
TF32_SWITCHES = frozenset({
    "tf32", "NVIDIA_TF32_OVERRIDE", "tf_tensor_float_32_execution", "jax_default_matmul_precision",
    "torch_matmul_allow_tf32", "torch_cudnn_allow_tf32", "torch_float32_matmul_precision",
    "torch_matmul_fp32_precision", "torch_cudnn_conv_fp32_precision", "torch_cudnn_rnn_fp32_precision",
    "torch_cudnn_fp32_precision", "tf32_matmul", "tf32_conv", "tf32_rnn"})
