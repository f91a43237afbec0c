"""Where the time goes: the one table that maps each framework's op and kernel names to the categories a profile
is summarised in, the same categories on every stack. Standard library only (the report reads the categories too).

A profiled op (``bench.instruments.profile``) carries three texts: its ``name`` (a PyTorch ATen op or a GPU kernel as
the profiler names it, a TensorFlow op's type, an XLA instruction or kernel), its ``detail`` (the HLO opcodes an XLA
instruction and the computations it calls hold, and its custom-call targets; empty elsewhere) and its ``scope``
(the names around it: PyTorch's profiler annotations, a TensorFlow op's full name with its Keras layer and optimizer
name scopes, an XLA instruction's ``op_name`` metadata, the profiler thread it ran on). ``classify`` tries
``RULES`` in order and returns the category of the first rule whose pattern matches its field; an op no rule
places is ``other``, and the summary lists every such name with its time, never dropping one.

Every pattern names where its names come from (``Rule.source``): the pinned libraries' sources (torch 2.13.0,
TensorFlow 2.21.0, jax/jaxlib 0.10.2 and the XLA they build, keras 3.15.1, tf-keras 2.21.0) or, for the kernel
names of closed libraries (cuBLAS, cuDNN), the profiles of them that their users published. The tests in
``tests/core/test_opcategories.py`` place real names of each kind.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Literal

Field = Literal["name", "full", "detail", "scope"]


@dataclass(frozen=True)
class Category:
    """One category of op time: its key in the record (``profile.categories``), a label and what it holds."""

    key: str
    label: str
    meaning: str


#: The categories, in the report's order. ``other`` is last: what no rule places.
CATEGORIES: tuple[Category, ...] = (
    Category("matmul_conv", "matmul / convolution", "matrix products and convolutions (GEMM, cuBLAS, cuDNN, "
             "CUTLASS, Triton GEMM kernels; XLA dot and convolution), their input and weight gradients included, and "
             "the recurrent layers a library runs whole (cuDNN's and oneDNN's LSTM), whose time is their GEMMs"),
    Category("attention", "attention", "fused attention kernels (flash, memory-efficient, cuDNN SDPA) and the "
             "score/softmax/weighting ops inside an attention layer's scope (not its query/key/value/output "
             "projections, which are matmuls)"),
    Category("elementwise", "elementwise and fused", "pointwise ops and fusions of them (activations, adds, casts, "
             "dropout, selects) and layout moves done by a kernel (transpose, concatenate, slice, gather, scatter)"),
    Category("normalization", "normalisation", "batch, layer, group and RMS normalisation, forward and backward"),
    Category("reduction", "reduction", "sums, means, max and argmax, softmax and cross-entropy losses, bias "
             "gradients (sums over the batch), XLA fusions whose hero is a reduce; pooling (a max or mean over "
             "windows: XLA's reduce-window, as every framework's pooling ops) and embedding gradients (a scatter-add: "
             "XLA's scatter, TensorFlow's UnsortedSegmentSum, PyTorch's embedding_dense_backward)"),
    Category("memcpy_h2d", "copy host-to-device", "copies from host to device memory"),
    Category("memcpy_d2h", "copy device-to-host", "copies from device to host memory"),
    Category("memcpy_d2d", "copy device-to-device", "copies within device memory and memsets (device memory "
             "traffic without a kernel of its own; on a CPU, the CPU is the device: copies within host memory, such "
             "as PyTorch's copy_)"),
    Category("optimizer", "optimizer update", "the optimizer's update of the weights: ops under PyTorch's "
             "Optimizer.step annotation or a Keras optimizer's name scope, fused/foreach update kernels"),
    Category("data_input", "data input", "the input pipeline's ops that the profiler sees: tf.data's threads and "
             "iterator ops, PyTorch DataLoader iteration"),
    Category("other", "other", "what no rule places (listed by name in profile.other_ops)"),
)
KEYS: tuple[str, ...] = tuple(c.key for c in CATEGORIES)
OTHER = "other"
#: The share of the profiled wall time with no op running (the device waits for the host): the report's bar adds
#: it to the categories' shares.
IDLE = "idle"


@dataclass(frozen=True)
class Rule:
    """Ops one of whose ``fields`` matches ``pattern`` (``re.search``) are ``category``; ``source`` says where the
    names it matches come from. A TensorFlow op type is an op's ``name`` on a host thread and its GPU kernels'
    ``detail`` (their op), so the op-type rules read both."""

    category: str
    fields: tuple[Field, ...]
    pattern: str
    source: str
    regex: re.Pattern[str] = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", re.compile(self.pattern))


#: Keras 3 optimizers name their scope after the class in snake case (keras/src/optimizers/base_optimizer.py@v3.15.1,
#: ``auto_name``: ``RMSprop`` -> ``rm_sprop``, ``AdamW`` -> ``adam_w``); tf-keras after the class
#: (tf_keras/src/optimizers/optimizer.py@2.21.0, ``name="RMSprop"``), each update under ``tf.name_scope(name)``.
_OPTIMIZER_SCOPES = (r"(?i)(^|[/|])(adam|adam_?w|adamax|nadam|rm_?sprop|adadelta|adagrad|adafactor|sgd|ftrl|lion|lamb"
                     r"|optax)(_\d+)?(/|\||$)")
#: A layer of Keras' attention (keras/src/layers/attention/multi_head_attention.py@v3.15.1: sublayers ``query``,
#: ``key``, ``value``, ``attention_output``; keras-hub's transformer blocks name theirs ``self_attention*``), its
#: projections left to the matmul rule and the norms and dropout around it (keras-hub 0.32.0:
#: ``self_attention_layer_norm``, Gemma's ``pre_attention_norm``, ``self_attention_dropout``) to theirs.
_ATTENTION_SCOPE = (r"(?i)^(?!.*((/|^)(query|key|value|attention_output|q_proj|k_proj|v_proj|o_proj|out_proj|"
                    r"query_dense|key_dense|value_dense|output_dense)(_\d+)?(/|$)|attention_layer_?norm|"
                    r"attention_norm|attention_dropout)).*attention")

#: ATen ops by category (torch 2.13.0 aten/src/ATen/native/native_functions.yaml): an op's ``name`` on a CPU, and on
#: a GPU the ``detail`` of the kernels it launched (``bench.instruments.profile.summary``), read after every kernel-name
#: rule.
_ATEN_MATMUL = (r"^aten::(mm|addmm|bmm|baddbmm|addbmm|matmul|linear|einsum|_?convolution|conv\dd|conv_transpose\dd|"
                r"mkldnn_convolution|_mkldnn_convolution|cudnn_convolution|convolution_backward|_convolution_mode|"
                r"_nnpack_spatial_convolution|mkldnn_rnn_layer|_cudnn_rnn\w*)$")
_ATEN_REDUCTION = (r"(?i)^aten::(sum|mean|amax|amin|max|min|argmax|argmin|prod|norm|var|std|logsumexp|_?softmax|"
                   r"_?log_softmax|_softmax_backward_data|_log_softmax_backward_data|nll_loss\w*|cross_entropy\w*|"
                   r"binary_cross_entropy\w*|cumsum|max_pool2d|max_pool2d_with_indices|max_pool2d_with_indices_backward|avg_pool2d|"
                   r"avg_pool2d_backward|adaptive_avg_pool2d|embedding_dense_backward|embedding_backward)$")
_ATEN_ELEMENTWISE = (r"^aten::(add|add_|sub|sub_|mul|mul_|div|div_|relu|relu_|threshold|threshold_|threshold_backward|"
                     r"sigmoid|sigmoid_|sigmoid_backward|tanh|tanh_|tanh_backward|hardsigmoid|hardsigmoid_backward|"
                     r"hardtanh|gelu|gelu_backward|silu|silu_backward|elu|leaky_relu|clamp|clamp_|clamp_min|clamp_min_|"
                     r"clamp_max|exp|exp_|log|log_|sqrt|sqrt_|rsqrt|pow|pow_|neg|abs|where|addcmul|addcmul_|addcdiv|"
                     r"addcdiv_|lerp_|fill_|zero_|zeros_like|ones_like|dropout|native_dropout|native_dropout_backward|"
                     r"bernoulli_|masked_fill|masked_fill_|eq|ne|lt|gt|le|ge|_to_copy|to|cat|stack|index|index_select|"
                     r"gather|scatter|scatter_add_|embedding|constant_pad_nd|"
                     r"flip|roll|square|reciprocal|sign|erf|cos|sin|_unsafe_view|copy|mish|softplus|hardswish|"
                     r"lstm_cell|_thnn_fused_lstm_cell)$")

_LAUNCHED = ("torch 2.13.0: the profiler links each CUDA kernel to the cudaLaunchKernel that launched it by its "
             "correlation id (kineto's Chrome trace: args.correlation), inside the ATen op that called it (torch/"
             "autograd/profiler_util.py@v2.13.0 FunctionEvent.kernels)")

#: The fields a rule reads: an op's name (its full name: ``FULL``), its detail, its scope, or a TensorFlow op type (name
#: or detail).
NAME: tuple[Field, ...] = ("name",)
#: A kernel's name with its template arguments (``bare`` takes them out of ``name``).
FULL: tuple[Field, ...] = ("full",)
DETAIL: tuple[Field, ...] = ("detail",)
SCOPE: tuple[Field, ...] = ("scope",)
TF_TYPE: tuple[Field, ...] = ("name", "detail")

RULES: tuple[Rule, ...] = (
    # transfers first: a transfer is a transfer whatever annotation it runs under
    Rule("memcpy_h2d", NAME, r"(?i)^memcpy ?(htod|h2d)",
         "kineto libkineto/src/CuptiActivity.cpp (torch 2.13.0) memcpyName: 'Memcpy HtoD (Pageable -> Device)'; "
         "xla/backends/profiler/gpu/cupti_tracer.cc GetTraceEventTypeName: 'MemcpyH2D'"),
    Rule("memcpy_d2h", NAME, r"(?i)^memcpy ?(dtoh|d2h)",
         "as memcpy_h2d: 'Memcpy DtoH (Device -> Pageable)', 'MemcpyD2H'"),
    Rule("memcpy_d2d", NAME, r"(?i)^memcpy ?(dtod|d2d|ptop|p2p)",
         "as memcpy_h2d: 'Memcpy DtoD (Device -> Device)', 'MemcpyD2D', 'MemcpyP2P'"),
    Rule("memcpy_d2d", NAME, r"(?i)^memset( |$)",
         "kineto libkineto/src/CuptiActivity.cpp (torch 2.13.0): 'Memset ({})', such as 'Memset (Device)'; jax "
         "0.10.2's CUDA plugin (xla/backends/profiler/gpu/cupti_buffer_events.cc): 'Memset <n>'"),
    # the optimizer's update, by the annotation or name scope it runs under, then its fused kernels
    Rule("optimizer", SCOPE, r"Optimizer\.step#",
         "torch/optim/optimizer.py@v2.13.0 profile_hook_step: record_function('Optimizer.step#<cls>.step')"),
    Rule("optimizer", SCOPE, _OPTIMIZER_SCOPES,
         "Keras 3 and tf-keras optimizers' name scopes; the jax epochs engine's optax scope (_OPTIMIZER_SCOPES)"),
    Rule("optimizer", SCOPE, r"(^|\|)aten::_foreach_",
         "torch 2.13.0: the ops a _foreach_* op runs one tensor at a time (its slow path, on a CPU); Keras 3's "
         "torch optimizers update with _foreach_* (keras/src/backend/torch/optimizers/torch_adadelta.py@v3.15.1)"),
    Rule("optimizer", NAME,
         r"_foreach_|multi_tensor_apply|fused_adam|_fused_sgd|ResourceApply|ApplyAdam|ApplyRMSProp|ApplyAdadelta",
         "torch 2.13.0 aten::_foreach_*, aten/src/ATen/native/cuda/MultiTensorApply.cuh multi_tensor_apply_kernel, "
         "FusedAdamKernel.cu; TensorFlow 2.21.0 core/kernels/training_ops.cc ResourceApply* kernels"),
    # the input pipeline
    Rule("data_input", SCOPE, r"enumerate\(DataLoader\)#",
         "torch/utils/data/dataloader.py@v2.13.0: record_function('enumerate(DataLoader)#<cls>.__next__')"),
    Rule("data_input", SCOPE, r"(^|[|/])tf_data_",
         "TensorFlow 2.21.0 tf.data threads: 'tf_data_private_threadpool', 'tf_data_iterator_resource' lanes"),
    Rule("data_input", TF_TYPE,
         r"^(IteratorGetNext|IteratorGetNextSync|IteratorGetNextAsOptional|MultiDeviceIteratorGetNextFromShard|"
         r"OptionalGetValue)$",
         "TensorFlow 2.21.0 core/kernels/data/iterator_ops.cc op types"),
    # copies the framework makes on the device itself (on a CPU: within host memory), outside the update and input
    Rule("memcpy_d2d", NAME, r"^aten::(copy_|clone)$", "torch 2.13.0 ATen on a CPU: copy_ moves host memory"),
    Rule("memcpy_d2d", DETAIL, r"^((copy|copy-start|copy-done|fusion)( |$))+$",
         "xla/hlo/ir/hlo_opcode.h: an XLA instruction that is only a copy"),
    # attention: fused kernels, then ops in an attention layer's scope
    Rule("attention", NAME,
         r"(?i)scaled_dot_product|flash_fwd|flash_bwd|pytorch_flash|fmha|_efficient_attention|flash_attention|"
         r"native_sdpa|dot_product_attention",
         "torch 2.13.0 aten::_scaled_dot_product_flash_attention(_for_cpu), aten/src/ATen/native/transformers/"
         "cuda/flash_attn (pytorch_flash::flash_fwd_kernel), mem_eff_attention (fmha_cutlassF_*); cuDNN SDPA "
         "'cudnn_generated_fort_native_sdpa_*'"),
    Rule("attention", FULL, r"\bflash::|FlashAttn",
         "flash-attention 3 (Dao-AILab/flash-attention hopper/): 'cutlass::device_kernel<flash::enable_sm90_or_later<"
         "flash::FlashAttnFwdSm90<...>>>', a CUTLASS kernel by its bare name: read with its template arguments"),
    Rule("attention", DETAIL, r"__cudnn\$fmha",
         "xla/service/gpu/cublas_cudnn.cc: kCudnnfMHA* custom-call targets"),
    Rule("attention", SCOPE, _ATTENTION_SCOPE, "Keras attention layers' name scopes (_ATTENTION_SCOPE)"),
    # matrix products and convolutions
    Rule("matmul_conv", DETAIL, r"(^| )(dot|convolution)( |$)|__cublas|__cudnn\$conv|__onednn\$(matmul|conv)",
         "xla/hlo/ir/hlo_opcode.h (dot, convolution); xla/service/gpu/cublas_cudnn.cc ('__cublas$gemm', "
         "'__cublas$lt$matmul', '__cudnn$convForward', ...)"),
    Rule("matmul_conv", NAME, _ATEN_MATMUL, "torch 2.13.0 aten/src/ATen/native/native_functions.yaml"),
    Rule("matmul_conv", TF_TYPE,
         r"^_?(Mkl|MklNative|Fused)?(Batch)?(MatMul|Conv\dD|Conv2D|Conv3D|Einsum)|^DepthwiseConv2dNative|"
         r"^Conv\dDBackprop|^_Mkl(Native)?Conv|^_MklNativeFused(MatMul|Conv)|^_MklMatMul",
         "TensorFlow 2.21.0 op types (core/ops/math_ops.cc MatMul, BatchMatMulV2; nn_ops.cc Conv2D...; oneDNN "
         "graph rewrites _MklNativeFusedMatMul, _MklNativeConv2D)"),
    Rule("matmul_conv", NAME,
         r"(?i)gemm|gemv|sgemm|hgemm|cutlass|xmma_(fprop|dgrad|wgrad|gemm)|implicit_convolve|winograd|convolve_|"
         r"conv2d_|cudnn::(\w+::)*\w*conv|triton_(tem|mm|bmm)|^(dot|convolution)(\.\d+)?$|_dot_|^gemm_fusion|cublas|"
         r"^sm\d+_xmma|^nvjet_|splitKreduce|RNN_persist_|RNN_blockPersist_",
         "cuBLAS/cuDNN/CUTLASS kernels as profiles name them ('sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_...', "
         "'ampere_sgemm_128x64_tn', 'cutlass_80_tensorop_s1688gemm_...', 'sm80_xmma_fprop_implicit_gemm_...', "
         "'implicit_convolve_sgemm'); torch/_inductor/select_algorithm.py 'triton_tem_fused_mm'; XLA CPU "
         "'dot.N' thunks; xla/service/gpu/transforms/gemm_fusion.cc 'gemm_fusion_dot...'; cuBLAS 12.8+ on Hopper "
         "'nvjet_tst_256x256_...', 'nvjet_sm90_tst_...' (forums.developer.nvidia.com/t/348958, an H100 NVL's "
         "torch.profiler trace: sm90_xmma/cutlass GEMMs under CUDA 12.1 became nvjet_tst_* under 12.8); cuBLAS's "
         "split-K GEMM's 'splitKreduce_kernel'; cuDNN 9.20.0.48's recurrent layers, whose time is their GEMMs "
         "(libcudnn_adv.so.9: 'RNN_persist_fp', 'RNN_persist_bp', 'RNN_blockPersist_fp_LSTM...'; their ATen ops, "
         "oneDNN's aten::mkldnn_rnn_layer on the CPU and aten::_cudnn_rnn, are in the ATen matmul list)"),
    # normalisation
    Rule("normalization", NAME,
         r"(?i)batch_?norm|layer_?norm|group_?norm|instance_?norm|rms_?norm|FusedBatchNorm|bn_fw|bn_bw|_norm_kernel|"
         r"layernorm|rmsnorm|welford",
         "torch 2.13.0 aten::native_batch_norm, native_layer_norm, cudnn_batch_norm and their CUDA kernels "
         "(batch_norm_collect_statistics_kernel, vectorized_layer_norm_kernel); TensorFlow FusedBatchNormV3; "
         "cuDNN 'cudnn::bn_fw_tr_1C11_kernel_NCHW'"),
    Rule("normalization", DETAIL, r"(^| )batch-norm",
         "xla/hlo/ir/hlo_opcode.h batch-norm-training, -inference, -grad"),
    # reductions
    Rule("reduction", DETAIL, r"(^| )(reduce|reduce-window|sort|scatter|all-reduce)( |$)",
         "xla/hlo/ir/hlo_opcode.h: an XLA instruction or fusion with a reduce in it"),
    Rule("reduction", NAME, _ATEN_REDUCTION,
         "torch 2.13.0 native_functions.yaml reductions, softmax and losses"),
    Rule("reduction", TF_TYPE,
         r"^(Sum|Mean|Max|Min|Prod|ArgMax|ArgMin|All|Any|BiasAddGrad|Softmax|LogSoftmax|_MklSoftmax|"
         r"SoftmaxCrossEntropyWithLogits|SparseSoftmaxCrossEntropyWithLogits|Cumsum|UnsortedSegmentSum|L2Loss|MaxPool|"
         r"MaxPoolGrad|AvgPool|AvgPoolGrad|_MklMaxPool|_MklNativeMaxPool|_MklNativeMaxPoolGrad)$",
         "TensorFlow 2.21.0 op types (core/ops/math_ops.cc, nn_ops.cc)"),
    Rule("reduction", NAME,
         r"(?i)reduce_kernel|softmax|reduc(e|tion)|triton_(red|per|spl)_|argmax|logsumexp|nll_loss|cross_entropy",
         "torch 2.13.0 CUDA kernels (aten/src/ATen/native/cuda/Reduce.cuh reduce_kernel, SoftMax.cu "
         "cunn_SoftMaxForward, Loss.cu nll_loss_forward_reduce_cuda_kernel_2d); torch/_inductor/codegen/triton.py "
         "kernel prefixes triton_red_/triton_per_/triton_spl_ (split scan; torch/_inductor/wrapper_benchmark.py "
         "_kernel_category_choices, its first 3 letters); xla/service/gpu/transforms/rename_fusions.cc "
         "'input_reduce_fusion'; XLA CPU 'wrapped_reduce'; TensorFlow's GPU BlockReduceKernel"),
    # elementwise and fused
    Rule("elementwise", DETAIL,
         r"(^| )(add|multiply|subtract|divide|maximum|minimum|exponential|exponential-minus-one|log|log-plus-one|"
         r"sqrt|rsqrt|cbrt|tanh|logistic|select|compare|convert|broadcast|negate|power|abs|and|or|not|xor|clamp|"
         r"transpose|concatenate|slice|dynamic-slice|dynamic-update-slice|pad|gather|iota|reverse|sign|floor|ceil|"
         r"round-nearest-even|round-nearest-afz|erf|sine|cosine|rng-bit-generator|rng|bitcast-convert|reshape|"
         r"remainder|atan2|is-finite|shift-left|shift-right-logical|shift-right-arithmetic|popcnt|"
         r"reduce-precision)( |$)",
         "xla/hlo/ir/hlo_opcode.h elementwise and data-movement opcodes"),
    Rule("elementwise", NAME, _ATEN_ELEMENTWISE,
         "torch 2.13.0 native_functions.yaml pointwise and indexing ops"),
    Rule("elementwise", TF_TYPE,
         r"^(Mul|AddV2|Add|AddN|Sub|RealDiv|Div|DivNoNan|Relu|ReluGrad|Relu6|Elu|Selu|Sigmoid|SigmoidGrad|Tanh|"
         r"TanhGrad|Rsqrt|RsqrtGrad|Sqrt|SqrtGrad|Square|SquaredDifference|Exp|Log|Log1p|Cast|Select|SelectV2|"
         r"Maximum|Minimum|Neg|BiasAdd|Equal|NotEqual|Less|LessEqual|Greater|GreaterEqual|LogicalAnd|LogicalOr|"
         r"LogicalNot|BitwiseAnd|BitwiseOr|Pow|Softplus|Reciprocal|Sign|Abs|FloorDiv|FloorMod|ClipByValue|OnesLike|"
         r"ZerosLike|Fill|Transpose|ConcatV2|Pack|Unpack|Slice|StridedSlice|StridedSliceGrad|GatherV2|"
         r"ResourceGather|ScatterNd|Tile|Pad|StatelessRandomUniformV2|StatelessRandomGetKeyCounter|_FusedBatchNormEx|Erf|Gelu|"
         r"Identity|Reshape|ExpandDims|Squeeze|OneHot|Range|MatrixBandPart)$",
         "TensorFlow 2.21.0 op types (core/ops/math_ops.cc, array_ops.cc, nn_ops.cc)"),
    Rule("elementwise", NAME,
         r"(?i)elementwise|pointwise|EigenMetaKernel|triton_(poi|for)_|elemWiseRNNcell|"
         r"^(loop|input|output)_\w+_fusion|"
         r"_fusion(\.\d+|_\d+)?$|^wrapped_|fill_kernel|cat_batched|CatArrayBatched|indexSelect|scatter_gather|"
         r"transpose|dropout|gelu|relu|sigmoid|tanh|bitcast|slice|concatenate|broadcast|fusion",
         "torch 2.13.0 CUDA kernels (aten/src/ATen/native/cuda/Loops.cuh vectorized_elementwise_kernel, "
         "CUDALoops.cuh unrolled_elementwise_kernel, Shape.cu CatArrayBatchedCopy); TensorFlow's GPU cwise ops "
         "(Eigen's EigenMetaKernel); torch/_inductor triton_poi_fused_* and triton_for_* (foreach: many "
         "tensors' pointwise work in one kernel); cuDNN 9.20.0.48's RNN gate kernel 'elemWiseRNNcell'; "
         "xla/service/gpu/transforms/rename_fusions.cc '<kind>_<heroes>_fusion' (loop_add_fusion); XLA CPU "
         "'<ops>_fusion', 'wrapped_<op>'"),
    # a GPU kernel no name rule placed: by the ATen op that launched it (its detail; bench.instruments.profile.summary)
    Rule("optimizer", DETAIL, r"^aten::(_foreach_|_fused_)", _LAUNCHED),
    Rule("attention", DETAIL, r"^aten::_?\w*(scaled_dot_product|flash_attention|efficient_attention)", _LAUNCHED),
    Rule("matmul_conv", DETAIL, _ATEN_MATMUL, _LAUNCHED),
    Rule("normalization", DETAIL, r"^aten::\w*(batch_norm|layer_norm|group_norm|instance_norm|rms_norm)", _LAUNCHED),
    Rule("reduction", DETAIL, _ATEN_REDUCTION, _LAUNCHED),
    Rule("elementwise", DETAIL, _ATEN_ELEMENTWISE, _LAUNCHED),
)


#: What a demangled kernel name holds besides its function's name: an anonymous namespace (part of the name) and
#: the bracketed template arguments and parameter list (``void at::native::elementwise_kernel<...>(int, ...)``).
_ANON = "(anonymous namespace)::"
_OPEN, _CLOSE = "<(", ">)"


def bare(name: str) -> str:
    """``name`` with every bracketed template argument list and parameter list taken out (``cutlass::Kernel2<
    cutlass_80_..._gemm>(...)`` -> ``cutlass::Kernel2``, ``std::enable_if<...>::type internal::gemvx::kernel<...>
    (...)`` -> ``std::enable_if::type internal::gemvx::kernel``), so that a rule never matches a type or helper named
    in them (``cudnn::reduced_divisor`` in a pooling kernel's parameters). An ``->`` is no bracket (kineto's
    'Memcpy HtoD (Pageable -> Device)'); a name that would be left empty stays as it is."""
    text, out, depth = name.replace(_ANON, ""), [], 0
    for i, ch in enumerate(text):
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE and depth and not (ch == ">" and i and text[i - 1] == "-"):
            depth -= 1
        elif not depth:
            out.append(ch)
    return " ".join("".join(out).split()) or name


def classify(name: str, detail: str = "", scope: str = "") -> str:
    """The category key (``KEYS``) of an op from its ``name`` (read without its template arguments and parameters:
    ``bare``), ``detail`` and ``scope`` (module docstring): the first rule of ``RULES`` that matches; ``OTHER`` when
    none does."""
    texts = {"name": bare(name), "full": name, "detail": detail, "scope": scope}
    for rule in RULES:
        if any(rule.regex.search(texts[f]) for f in rule.fields):
            return rule.category
    return OTHER


def label(key: str) -> str:
    """A category's label (``IDLE``: its own), the key itself when unknown."""
    if key == IDLE:
        return "idle (host)"
    return next((c.label for c in CATEGORIES if c.key == key), key)
