"""The one table that places op and kernel names in categories (``bench.core.opcategories``): real names of each
kind, from the pinned libraries, each with where it comes from. The CPU names were read from this harness's own
profiles of smoke cells (torch 2.13.0, jax/jaxlib 0.10.2 with XLA's CPU runtime, TensorFlow 2.21.0 with oneDNN,
keras 3.15.1); the GPU names from the libraries' sources or, for closed libraries (cuBLAS, cuDNN), from the traces
their users published, cited per name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from bench.core.opcategories import CATEGORIES, IDLE, KEYS, OTHER, RULES, bare, classify, label

ROOT = Path(__file__).resolve().parents[2]

#: (name, detail, scope, category, where the name comes from)
NAMES = [
    # PyTorch on a CPU: ATen ops, and the annotations torch puts around the optimizer's step
    ("aten::addmm", "", "1:1", "matmul_conv", "torch 2.13.0 profile of mnist_mlp (nn.Linear)"),
    ("aten::mkldnn_convolution", "", "1:1", "matmul_conv", "torch 2.13.0 profile of mnist_cnn"),
    ("aten::convolution_backward", "", "1:1", "matmul_conv", "torch 2.13.0 profile of mnist_cnn"),
    ("aten::threshold_backward", "", "1:1", "elementwise", "torch 2.13.0 profile (ReLU's gradient)"),
    ("aten::max_pool2d_with_indices", "", "1:1", "reduction", "torch 2.13.0 profile of mnist_cnn (as XLA's "
     "reduce-window)"),
    ("aten::embedding_dense_backward", "", "1:1", "reduction", "torch 2.13.0 profile of babi_rnn (as XLA's scatter)"),
    ("aten::_log_softmax_backward_data", "", "1:1", "reduction", "torch 2.13.0 profile (CrossEntropyLoss)"),
    ("aten::nll_loss_forward", "", "1:1", "reduction", "torch 2.13.0 native_functions.yaml"),
    ("aten::native_layer_norm", "", "1:1", "normalization", "torch 2.13.0 native_functions.yaml"),
    ("aten::_scaled_dot_product_flash_attention_for_cpu", "", "1:1", "attention",
     "torch 2.13.0 native_functions.yaml (SDPA on a CPU)"),
    ("aten::sqrt_", "", "1:1|Optimizer.step#Adadelta.step", "optimizer",
     "torch/optim/optimizer.py@v2.13.0 profile_hook_step around torch.optim.Adadelta's update"),
    ("aten::copy_", "", "1:1|Optimizer.step#Adadelta.step", "optimizer", "the same annotation wins over the copy"),
    ("aten::copy_", "", "1:1", "memcpy_d2d", "torch 2.13.0 on a CPU: a copy within host memory"),
    ("aten::mul", "", "1:1|aten::_foreach_mul", "optimizer",
     "keras/src/backend/torch/optimizers/torch_adadelta.py@v3.15.1 torch._foreach_mul_ (its per-tensor path)"),
    ("aten::empty_strided", "", "1:1", OTHER, "torch 2.13.0: an allocation, no category"),
    ("autograd::engine::evaluate_function: AddmmBackward0", "", "1:1", OTHER, "torch 2.13.0 autograd bookkeeping"),
    ("aten::add", "", "1:1|enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "data_input",
     "torch/utils/data/dataloader.py@v2.13.0 _profile_name"),
    # XLA on a CPU (JAX): thunks named by their HLO instruction, described from the program's HLO
    ("ynn_fusion.2", "dot fusion", "jit(train)/jvp()/dot_general", "matmul_conv",
     "jax 0.10.2 XLA:CPU thunk; its HloProto says the YNNPACK fusion holds a dot"),
    ("ynn_fusion", "add fusion reduce", "jit(train_step)/transpose(jvp(dense))/reduce_sum", "reduction",
     "jax 0.10.2 XLA:CPU under keras 3.15.1: a YNNPACK fusion holding a reduce"),
    ("dot.1", "", "", "matmul_conv", "jax 0.10.2 XLA:CPU DotThunk named after its instruction"),
    ("broadcast_maximum_fusion", "broadcast fusion maximum", "jit(train)/jvp()/jit(relu)/max", "elementwise",
     "jax 0.10.2 XLA:CPU loop fusion (ReLU)"),
    ("wrapped_reduce-window", "fusion reduce-window", "jit(train)/jvp(MaxPool)/reduce_window_max", "reduction",
     "jax 0.10.2 XLA:CPU (max pooling)"),
    ("multiply_add_fusion.3", "add broadcast fusion multiply", "jit(train_step)/rm_sprop/add", "optimizer",
     "keras 3.15.1 on JAX: the RMSprop optimizer's name scope rm_sprop in the op_name metadata"),
    ("add_sqrt_fusion.2", "add fusion sqrt", "jit(train)/optax/sqrt", "optimizer",
     "bench/models/engines/jax/epochs.py's optax scope in the op_name metadata"),
    ("copy.3", "copy", "", "memcpy_d2d", "xla/hlo/ir/hlo_opcode.h copy"),
    # TensorFlow on a CPU (oneDNN): op types, their full names carrying Keras' scopes, tf.data's threads
    ("_MklNativeFusedMatMul", "", "StatefulPartitionedCall/sequential_1/dense_1/Relu", "matmul_conv",
     "TensorFlow 2.21.0 profile of mnist_mlp (oneDNN rewrite of MatMul + BiasAdd + Relu)"),
    ("_MklNativeConv2DBackpropFilter", "", "StatefulPartitionedCall/gradient_tape/conv2d/Conv2DBackpropFilter",
     "matmul_conv", "TensorFlow 2.21.0 profile of mnist_cnn"),
    ("_MklSoftmax", "", "StatefulPartitionedCall/sequential_1/dense_1_2/Softmax", "reduction",
     "TensorFlow 2.21.0 profile"),
    ("Mul", "", "StatefulPartitionedCall/rm_sprop/Mul", "optimizer",
     "keras 3.15.1 RMSprop on TensorFlow: name scope rm_sprop (base_optimizer.py auto_name)"),
    ("Mul", "", "StatefulPartitionedCall/RMSprop/Mul", "optimizer",
     "tf-keras 2.21.0 RMSprop: name scope RMSprop"),
    ("ReluGrad", "", "StatefulPartitionedCall/gradient_tape/sequential_1/dense_1/ReluGrad", "elementwise",
     "TensorFlow 2.21.0 profile"),
    ("BiasAddGrad", "", "StatefulPartitionedCall/gradient_tape/dense/BiasAdd/BiasAddGrad", "reduction",
     "TensorFlow 2.21.0 profile"),
    ("GatherV2", "", "/host:CPU/tf_data_private_threadpool/-8760490979565729484|ExecutorState::Process|GatherV2",
     "data_input", "TensorFlow 2.21.0 profile: tf.data's private thread pool"),
    ("IteratorGetNext", "", "StatefulPartitionedCall/IteratorGetNext", "data_input", "TensorFlow 2.21.0"),
    ("ReadVariableOp", "", "StatefulPartitionedCall/Add_1/ReadVariableOp", OTHER,
     "TensorFlow 2.21.0: a variable read, no category"),
    ("Einsum", "", "StatefulPartitionedCall/bert_backbone/transformer_layer_0/self_attention_layer/einsum/Einsum",
     "attention", "keras-hub 0.32.0 TransformerEncoder's attention scores"),
    ("Einsum", "", "StatefulPartitionedCall/transformer_layer_0/self_attention_layer/query/einsum/Einsum",
     "matmul_conv", "keras 3.15.1 MultiHeadAttention's query projection (sublayer query)"),
    ("_MklLayerNorm", "", "StatefulPartitionedCall/transformer_layer_0/self_attention_layer_norm/LayerNorm",
     "normalization", "keras-hub 0.32.0 TransformerEncoder's self_attention_layer_norm"),
    # GPU: PyTorch's kernels and kineto's copy names
    ("Memcpy HtoD (Pageable -> Device)", "", "", "memcpy_h2d", "kineto CuptiActivity.cpp memcpyName (torch 2.13.0)"),
    ("Memcpy DtoH (Device -> Pageable)", "", "", "memcpy_d2h", "kineto CuptiActivity.cpp memcpyName"),
    ("Memcpy DtoD (Device -> Device)", "", "", "memcpy_d2d", "kineto CuptiActivity.cpp memcpyName"),
    ("Memset (Device)", "", "", "memcpy_d2d", "kineto CuptiActivity.cpp: 'Memset ({})': device memory traffic"),
    ("Memset 3", "", "", "memcpy_d2d", "jax 0.10.2's CUDA plugin, cupti_buffer_events.cc: 'Memset <n>'"),
    ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::"
     "CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128l>, "
     "cute::C<128l>, cute::C<128l> >, 128, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false> > > >"
     "(flash::enable_sm90_or_later<...>::Params)", "", "", "attention",
     "flash-attention 3 hopper/ FlashAttnFwdSm90: a CUTLASS device_kernel by its bare name, attention by its template"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
     "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)", "", "",
     "elementwise", "aten/src/ATen/native/cuda/CUDALoops.cuh@v2.13.0"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
     "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
     "unsigned int, float, 4, 4> >(at::native::ReduceOp<...>)", "", "", "reduction",
     "aten/src/ATen/native/cuda/Reduce.cuh@v2.13.0"),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
     "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)", "", "",
     "reduction", "aten/src/ATen/native/cuda/SoftMax.cu@v2.13.0"),
    ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
     "TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, "
     "(at::native::ADAM_MODE)1, false>, float*, double, double, double, double, double, bool, float*, float*>(...)",
     "", "", "optimizer", "aten/src/ATen/native/cuda/MultiTensorApply.cuh@v2.13.0"),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, "
     "float const*, float const*, float*, float*, float*)", "", "", "normalization",
     "aten/src/ATen/native/cuda/layer_norm_kernel.cu@v2.13.0"),
    ("void at::native::batch_norm_collect_statistics_kernel<at::native::InvStd, float, float, float, int>(...)",
     "", "", "normalization", "aten/src/ATen/native/cuda/Normalization.cuh@v2.13.0"),
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::half_t, "
     "Flash_kernel_traits<64, 128, 128, 4, cutlass::half_t> >, false, true, false, false, true, true, false, "
     "false>(pytorch_flash::Flash_fwd_params)", "", "", "attention",
     "aten/src/ATen/native/transformers/cuda/flash_attn@v2.13.0"),
    ("fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, cutlass::arch::Sm80, "
     "true, 64, 64, 64, true, true>::Params)", "", "", "attention",
     "aten/src/ATen/native/transformers/cuda/mem_eff_attention@v2.13.0 (generated kernel names)"),
    ("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__"
     "5x_cublas", "", "", "matmul_conv", "cuBLAS 12/13 on an H100, as PyTorch profiles print it"),
    ("ampere_sgemm_128x64_tn", "", "", "matmul_conv", "cuBLAS on an A100 (PyTorch profiler tables)"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x5_tn_align4>(cutlass_80_tensorop_s1688gemm_"
     "128x128_16x5_tn_align4::Params)", "", "", "matmul_conv", "CUTLASS kernels cuBLAS dispatches"),
    ("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_warpsize2x2x1_g1_"
     "tensor16x8x8_kernel_cudnn", "", "", "matmul_conv", "cuDNN 9 forward convolution (PyTorch/TF profiles)"),
    ("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>(...)", "", "", "normalization",
     "cuDNN batch-norm forward training"),
    ("cudnn_generated_fort_native_sdpa_sm90_knob_7_64x128x128_4x1x1_kernel0_0", "", "", "attention",
     "cuDNN 9 SDPA (runtime-fused) kernels"),
    ("triton_poi_fused_add_relu_0", "", "", "elementwise", "torch/_inductor/codegen/triton.py@v2.13.0 prefixes"),
    ("triton_red_fused_sum_1", "", "", "reduction", "torch/_inductor/codegen/triton.py@v2.13.0 prefixes"),
    ("triton_per_fused__log_softmax_2", "", "", "reduction", "torch/_inductor/codegen/triton.py@v2.13.0"),
    ("triton_tem_fused_mm_0", "", "", "matmul_conv", "torch/_inductor/select_algorithm.py@v2.13.0 templates"),
    # GPU: XLA's kernels (JAX, TensorFlow with XLA) and TensorFlow's
    ("MemcpyH2D", "", "", "memcpy_h2d", "xla/backends/profiler/gpu/cupti_tracer.cc GetTraceEventTypeName"),
    ("MemcpyD2H", "", "", "memcpy_d2h", "xla/backends/profiler/gpu/cupti_tracer.cc GetTraceEventTypeName"),
    ("MemcpyD2D", "", "", "memcpy_d2d", "xla/backends/profiler/gpu/cupti_tracer.cc GetTraceEventTypeName"),
    ("loop_add_fusion", "", "", "elementwise", "xla/service/gpu/transforms/rename_fusions.cc: kind_heroes_fusion"),
    ("loop_multiply_fusion_2", "add broadcast fusion multiply", "jit(train)/jvp(relu)/mul", "elementwise",
     "rename_fusions.cc, a uniquified name as a kernel"),
    ("input_reduce_fusion", "", "", "reduction", "xla/service/gpu/transforms/rename_fusions.cc (kInput, reduce)"),
    ("gemm_fusion_dot_1", "dot fusion", "jit(train)/jvp(Dense_0)/dot_general", "matmul_conv",
     "xla/service/gpu/transforms/gemm_fusion.cc: Triton GEMM fusions"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel"
     "__5x_cublas", "custom-call __cublas$lt$matmul", "jit(train)/dot_general", "matmul_conv",
     "cuBLASLt through xla/service/gpu/cublas_cudnn.cc's __cublas$lt$matmul"),
    ("void Eigen::internal::EigenMetaKernel<Eigen::TensorEvaluator<Eigen::TensorAssignOp<Eigen::TensorMap<"
     "Eigen::Tensor<float, 1, 1, long>, 16>, ...>, Eigen::GpuDevice>, long>(...)", "Mul",
     "sequential/dense/Mul", "elementwise", "TensorFlow 2.21.0 cwise ops on Eigen's GPU device"),
    ("void tensorflow::functor::BlockReduceKernel<float*, float*, 256, tensorflow::functor::Sum<float> >(...)",
     "Sum", "sequential/Sum", "reduction", "tensorflow/core/kernels/reduction_gpu_kernels.cu.h"),
    ("void Eigen::internal::EigenMetaKernel<...>(...)", "Mul", "StatefulPartitionedCall/adam/Mul", "optimizer",
     "keras 3.15.1 Adam on TensorFlow, a GPU kernel whose op is in the adam scope"),
    # GPU: cuBLAS 12.8+ on Hopper names its GEMMs nvjet_* (forums.developer.nvidia.com/t/348958: an H100 NVL's
    # torch.profiler trace, sm90_xmma/cutlass kernels under CUDA 12.1 became nvjet_tst_* under 12.8)
    ("nvjet_tst_256x256_64x4_1x2_h_bz_coopA_NNT", "", "", "matmul_conv", "cuBLAS 12.8 on H100 (forum trace)"),
    ("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NNT", "", "", "matmul_conv", "cuBLAS 12.x half-precision GEMM on H100"),
    ("nvjet_sm90_tst_64x16_64x16_2x4_2cta_h_bz_splitK_TNT", "", "", "matmul_conv", "cuBLAS 13 on H100"),
    # GPU: what a demangled name holds in its brackets places nothing: a cuDNN pooling kernel's parameters name
    # cudnn::reduced_divisor (a division helper), its op (TensorFlow's MaxPool) places it
    ("void cudnn::ops::pooling_fw_4d_kernel<float, float, cudnn::maxpooling_func<float, (cudnnNanPropagation_t)0>, "
     "0, false>(cudnnTensorStruct, float const*, cudnnTensorStruct, float*, cudnnPoolingStruct, float, float, int, "
     "cudnn::reduced_divisor, cudnn::reduced_divisor)", "MaxPool", "sequential/max_pooling2d/MaxPool",
     "reduction", "cuDNN's pooling kernel under TensorFlow 2.21.0's MaxPool (GPU), as the other pooling ops"),
    ("void splitKreduce_kernel<32, 16, int, float, float, float, float, true, false, false>(cublasSplitKParams<"
     "float>, float const*, float const*, float*, float const*, float const*, float const*, float const*, float*, "
     "void*, long, float*, int*)", "", "", "matmul_conv", "cuBLAS split-K GEMM's reduction step"),
    ("std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float, float, float, float, false, "
     "true, true, false, 7, false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, "
     "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float> >(...)", "", "",
     "matmul_conv", "cuBLAS gemv (a batch-1 nn.Linear on a GPU)"),
    # GPU: a kernel no name rule knows, placed by the ATen op that launched it (torch's correlation id)
    ("void at::native::(anonymous namespace)::max_pool_forward_nchw<float>(int, float const*, long, long, long, "
     "int, int, int, int, int, int, int, int, int, int, float*, long*)", "aten::max_pool2d_with_indices", "",
     "reduction", "aten/src/ATen/native/cuda/DilatedMaxPool2d.cu@v2.13.0 launched by max_pool2d_with_indices"),
    ("my_vendor_kernel_v3", "aten::mm", "", "matmul_conv", "an unknown kernel name launched by aten::mm"),
    ("my_vendor_kernel_v3", "aten::convolution_backward", "", "matmul_conv", "launched by convolution_backward"),
    ("my_vendor_kernel_v3", "aten::native_layer_norm", "", "normalization", "launched by native_layer_norm"),
    ("my_vendor_kernel_v3", "aten::_foreach_addcdiv_", "", "optimizer", "launched by a _foreach_ update"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<"
     "char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)", "aten::addmm", "",
     "elementwise", "a name rule wins over the launching op (addmm's bias add)"),
    # recurrent layers: cuDNN's kernels on a GPU (torch's nn.LSTM), oneDNN's layer on a CPU, one category
    ("void RNN_persist_fp<float, float, float, 128, 4, 3, 32, true, false, true>(RNN_persistent_args<float>)",
     "aten::_cudnn_rnn", "", "matmul_conv",
     "cuDNN 9.20.0.48 libcudnn_adv.so.9 symbol _Z14RNN_persist_fpI... (arguments illustrative)"),
    ("RNN_blockPersist_bp_LSTM_HMMA", "", "", "matmul_conv", "cuDNN 9.20.0.48 libcudnn_adv.so.9"),
    ("void elemWiseRNNcell<float, float, float, (cudnnRNNMode_t)2, (cudnnRNNBiasMode_t)2>(int, int, int, int, "
     "int, bool, float const*, float const*, float const*, float const*, float const*, float const*, float*, "
     "float*, float*, float*, float*)", "aten::_cudnn_rnn", "", "elementwise",
     "cuDNN 9.20.0.48 libcudnn_adv.so.9 symbol elemWiseRNNcell (arguments illustrative): the gates between GEMMs"),
    ("aten::mkldnn_rnn_layer", "", "1:1", "matmul_conv", "torch 2.13.0 profile of babi_rnn on a CPU (oneDNN LSTM)"),
    # torch.compile's kernels, named by inductor's category (torch/_inductor/wrapper_benchmark.py@v2.13.0)
    ("triton_for_fused_0", "", "", "elementwise", "torch/_inductor/codegen/triton.py@v2.13.0: a foreach kernel"),
    ("triton_spl_fused_cumsum_0", "", "", "reduction", "torch/_inductor/codegen/triton.py@v2.13.0: a split scan"),
]


@pytest.mark.parametrize(("name", "detail", "scope", "category", "source"), NAMES,
                         ids=[f"{n[:40]}-{c}" for n, _, _, c, _ in NAMES])
def test_real_names_land_in_their_category(name, detail, scope, category, source):
    assert classify(name, detail, scope) == category, source


def test_every_category_has_a_name_of_its_own_in_the_table():
    assert {c for *_, c, _ in NAMES} == set(KEYS)


def test_the_categories_and_rules_are_one_table():
    assert KEYS[-1] == OTHER and len(set(KEYS)) == len(KEYS) == len(CATEGORIES)
    assert all(r.category in KEYS and r.category != OTHER and r.source and r.fields for r in RULES)
    assert label(IDLE) == "idle (host)" and label("matmul_conv") == "matmul / convolution"


def test_an_unknown_name_is_other():
    assert classify("void my_custom_kernel<float>(float*)") == OTHER
    assert classify("") == OTHER


def test_no_other_module_spells_a_category():
    """The categories' keys appear as literals in bench/core/opcategories.py alone (the report, schema and summary
    read ``KEYS``); "optimizer" is also a settings key and "other" a common word, so they are left out."""
    keys = set(KEYS) - {OTHER, "optimizer"}
    table = ROOT / "bench" / "core" / "opcategories.py"
    found = []
    for path in (ROOT / "bench").rglob("*.py"):
        if path == table:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in keys:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value!r}")
    assert not found, found


@pytest.mark.parametrize(("name", "kept"), [
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*)",
     "void at::native::vectorized_layer_norm_kernel"),
    ("std::enable_if<!(false), void>::type internal::gemvx::kernel<int, float>(cublasGemvParamsEx<int, float>)",
     "std::enable_if::type internal::gemvx::kernel"),
    ("Memcpy HtoD (Pageable -> Device)", "Memcpy HtoD"),
    ("loop_add_fusion", "loop_add_fusion"),
    ("(unnamed)", "(unnamed)"),
])
def test_a_name_is_read_without_its_template_arguments_and_parameters(name, kept):
    assert bare(name) == kept
