"""The profile block from spans (``bench.instruments.profile.summary``): nesting and self times on a CPU, device work on
a GPU tied to its launch's scope, the window, the busy fraction, and categories that sum to the op time."""

from __future__ import annotations

import pytest

from bench.core.opcategories import KEYS
from bench.instruments.profile.spans import DEVICE, MARK, OP, Span, from_chrome
from bench.instruments.profile.summary import WINDOW, nest, summarise, union_us


def span(name, start, dur, kind=OP, lane="1:1", **kw):
    return Span(name, float(start), float(dur), lane, kind, **kw)


def test_union_merges_overlaps_and_keeps_gaps():
    assert union_us([(0, 10), (5, 15), (20, 25)]) == 20
    assert union_us([]) == 0


def test_self_time_leaves_out_the_ops_nested_in_an_op_through_marks_too():
    spans = [span(WINDOW, 0, 100, MARK), span("aten::linear", 0, 100), span("aten::addmm", 10, 30),
             span("Optimizer.step#SGD.step", 50, 40, MARK), span("aten::add_", 60, 20)]
    scopes, nested, owner = nest(spans)
    assert nested == {1: 50.0}  # addmm directly, add_ through the mark
    assert owner == {2: "aten::linear", 3: "aten::linear", 4: "aten::linear"}
    assert scopes[4] == f"1:1|{WINDOW}|aten::linear|Optimizer.step#SGD.step"
    block = summarise(spans, steps=1)
    assert block["device"] == "cpu" and block["window_ms"] == pytest.approx(0.1)
    assert block["device_busy_fraction"] == pytest.approx(1.0) and block["host_fraction"] == pytest.approx(0.0)
    assert block["categories"]["matmul_conv"] == pytest.approx(0.08)  # linear's 50 µs self + addmm's 30
    assert block["categories"]["optimizer"] == pytest.approx(0.02)
    assert block["op_ms"] == pytest.approx(sum(block["categories"].values())) == pytest.approx(0.1)
    assert list(block["categories"]) == list(KEYS)


def test_the_window_clips_and_the_idle_share_is_what_no_op_covers():
    spans = [span(WINDOW, 100, 100, MARK), span("aten::mm", 50, 100), span("aten::relu", 170, 10),
             span("aten::mystery", 190, 40)]
    block = summarise(spans, steps=2)
    assert block["busy_ms"] == pytest.approx((50 + 10 + 10) / 1000)
    assert block["device_busy_fraction"] == pytest.approx(0.7) and block["steps"] == 2
    assert block["categories"]["matmul_conv"] == pytest.approx(0.05)
    assert block["other_ops"] == [{"name": "aten::mystery", "calls": 1, "ms": pytest.approx(0.01)}]
    assert [o["name"] for o in block["top_ops"]] == ["aten::mm", "aten::relu", "aten::mystery"]
    assert sum(o["share"] for o in block["top_ops"]) == pytest.approx(1.0)


def test_without_a_window_mark_the_ops_span_the_window_and_an_empty_trace_is_an_error():
    assert summarise([span("aten::mm", 10, 20)], 1)["window_ms"] == pytest.approx(0.02)
    with pytest.raises(ValueError):
        summarise([], 1)


def torch_gpu_trace():
    """A Chrome trace as torch.profiler writes one with CUDA activities (kineto's categories and args): a GEMM
    launched by aten::addmm, an add kernel launched inside Optimizer.step, a host-to-device copy; kernel names
    as torch 2.13.0 and cuBLAS name them (tests/core/test_opcategories.py cites each)."""
    x = lambda cat, name, ts, dur, pid=1, tid=1, **args: {"ph": "X", "cat": cat, "name": name, "ts": ts,  # noqa: E731
                                                         "dur": dur, "pid": pid, "tid": tid, "args": args}
    return {"traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}},
        x("Trace", "PyTorch Profiler (0)", 0, 400),
        x("user_annotation", WINDOW, 80, 200),
        x("cpu_op", "aten::copy_", 82, 8),
        x("cuda_runtime", "cudaMemcpyAsync", 84, 4, correlation=10),
        x("cpu_op", "aten::addmm", 100, 50),
        x("cuda_runtime", "cudaLaunchKernel", 110, 5, correlation=11),
        x("user_annotation", "Optimizer.step#Adam.step", 200, 50),
        x("cpu_op", "aten::add_", 205, 40),
        x("cuda_runtime", "cudaLaunchKernel", 210, 5, correlation=12),
        x("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 90, 5, 0, 7, correlation=10, device=0, stream=7),
        x("kernel", "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_"
                    "k_off_kernel__5x_cublas", 120, 30, 0, 7, correlation=11, device=0, stream=7),
        x("kernel", "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
                    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
          220, 20, 0, 7, correlation=12, device=0, stream=7),
        x("gpu_user_annotation", WINDOW, 85, 190, 0, 7),
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 11, "pid": 0, "tid": 7, "ts": 120},
    ]}


def test_a_torch_gpu_trace_counts_device_work_and_places_a_kernel_by_its_launchs_scope():
    spans = from_chrome(torch_gpu_trace())
    assert {s.kind for s in spans} == {OP, MARK, DEVICE}
    block = summarise(spans, steps=1)
    assert block["device"] == "gpu" and block["ops"] == 3
    assert block["busy_ms"] == pytest.approx(0.055)  # 5 + 30 + 20 µs: the host's ops do not count on a GPU
    assert block["device_busy_fraction"] == pytest.approx(55 / 200)
    cats = block["categories"]
    assert cats["memcpy_h2d"] == pytest.approx(0.005) and cats["matmul_conv"] == pytest.approx(0.03)
    assert cats["optimizer"] == pytest.approx(0.02)  # an elementwise kernel, launched inside Optimizer.step
    assert cats["elementwise"] == 0 and block["other_ops"] == []


def test_a_gpu_kernel_no_name_rule_knows_goes_by_the_aten_op_that_launched_it():
    trace = torch_gpu_trace()
    x = lambda cat, name, ts, dur, pid=1, tid=1, **args: {"ph": "X", "cat": cat, "name": name, "ts": ts,  # noqa: E731
                                                         "dur": dur, "pid": pid, "tid": tid, "args": args}
    trace["traceEvents"] += [
        x("cpu_op", "aten::convolution", 160, 30),
        x("cpu_op", "aten::_convolution", 161, 28),
        x("cuda_runtime", "cudaLaunchKernel", 165, 5, correlation=13),
        x("kernel", "void vendor::engine_v2<float>(float*)",  # a name no rule knows
          160, 15, 0, 7, correlation=13, device=0, stream=7),
    ]
    block = summarise(from_chrome(trace), steps=1)
    assert block["categories"]["matmul_conv"] == pytest.approx(0.03 + 0.015)
    assert block["other_ops"] == []
