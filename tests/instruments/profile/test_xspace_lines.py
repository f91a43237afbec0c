"""What of an XSpace counts as the device's work and what the profilers said went wrong (``spans.from_xspace``,
``xspace.xspace_messages``, ``spans.chrome_messages``), on planes built here as jax 0.10.2's CUDA plugin names them
(xla/backends/profiler/gpu/cupti_collector.cc: ``Stream #<id>(<event types>)`` lines, ``CUPTI overhead`` for a stream
whose line holds CUPTI's overhead records, those records by their kind) and protobuf bytes written by hand
(tsl/profiler/protobuf/xplane.proto: XSpace errors 2, warnings 3)."""

from __future__ import annotations

from bench.instruments.profile.spans import DEVICE, chrome_messages, from_xspace
from bench.instruments.profile.summary import summarise
from bench.instruments.profile.xspace import Event, Line, Plane, xspace_messages

GEMM = "nvjet_tst_256x256_64x4_1x2_h_bz_coopA_NNT"


def _event(name: str, start_us: float, dur_us: float) -> Event:
    return Event(name, start_us * 1000.0, dur_us * 1000.0, {})


def gpu_planes() -> list[Plane]:
    window = Plane("/host:CPU", [Line("python", [_event("dlbench.profiled_steps", 0, 100)])])
    gpu = Plane("/device:GPU:0", [
        # as XLA's collector names them (GetDeviceXLineName, GetTraceEventTypeName: a kernel is "Compute")
        Line("Stream #7(Compute,MemcpyH2D)", [_event(GEMM, 10, 30), _event("MemcpyH2D", 50, 5)]),
        # a stream whose line also holds CUPTI's overhead records takes their name, kernels and all; the records tied
        # to no stream (kThreadIdOverhead) sit on a line of that name too
        Line("CUPTI overhead", [_event(GEMM, 60, 10), _event("INSTRUMENTATION", 60, 20), _event("<UNKNOWN>", 85, 10),
                                _event("BUFFER_FLUSH", 0, 90), _event("RESOURCE", 0, 90)]),
        Line("XLA Ops", [_event(GEMM, 10, 30)]),  # derived: repeats the stream's kernels
    ])
    return [window, gpu]


def test_only_the_streams_kernels_and_copies_are_device_work():
    spans = from_xspace(gpu_planes())
    assert [s.name for s in spans if s.kind == DEVICE] == [GEMM, "MemcpyH2D", GEMM]
    block = summarise(spans, steps=1)
    assert block["busy_ms"] == 0.045 and block["other_ops"] == []


def _varint(n: int) -> bytes:
    out = b""
    while True:
        byte, n = n & 0x7F, n >> 7
        out += bytes([byte | (0x80 if n else 0)])
        if not n:
            return out


def _len_field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def test_the_xspaces_errors_and_warnings_are_read():
    data = (_len_field(1, _len_field(2, b"/device:GPU:0")) + _len_field(2, b"CUPTI error: not initialized")
            + _len_field(3, b"Detected GPU events dropped on 1 Device(s)") + _len_field(4, b"host"))
    assert xspace_messages(data) == ["error: CUPTI error: not initialized",
                                     "warning: Detected GPU events dropped on 1 Device(s)"]


def test_kinetos_errors_and_warnings_are_read_from_its_trace():
    trace = {"traceEvents": [], "WARNING": ["State: CollectTrace stopped by GPU profiler. (Buffer size configured "
                                            "is 1 MB)"], "ERROR": "CUPTI_ERROR_NOT_INITIALIZED", "INFO": ["ok"]}
    assert chrome_messages(trace) == ["error: CUPTI_ERROR_NOT_INITIALIZED", "warning: State: CollectTrace stopped by "
                                      "GPU profiler. (Buffer size configured is 1 MB)"]
    assert chrome_messages({"traceEvents": []}) == []


def test_an_xla_kernel_takes_the_scope_of_its_launch_on_the_host():
    """XLA's GPU launches carry ``hlo_op`` and the kernel's ``correlation_id`` on a host thread: the kernel is read
    in the launch's scope (here under an optimizer's annotation), as a PyTorch kernel is."""
    launch = Event("loop_add_fusion", 20_000.0, 2_000.0, {"hlo_op": "loop_add_fusion", "hlo_module": "jit_step",
                                                         "correlation_id": 42})
    host = Plane("/host:CPU", [Line("python", [_event("dlbench.profiled_steps", 0, 100), _event("adam", 10, 30),
                                               launch])])
    kernel = Event("loop_add_fusion", 40_000.0, 5_000.0, {"correlation_id": 42})
    spans = from_xspace([host, Plane("/device:GPU:0", [Line("Stream #7(Kernel)", [kernel])])])
    assert next(s for s in spans if s.lane == "/host:CPU/python" and s.name == "loop_add_fusion").link == 42
    assert summarise(spans, steps=1)["categories"]["optimizer"] == 0.005


def _pinned_tensorflow_library(name: str):
    """``name`` in the installed TensorFlow wheel (found, not imported), or None."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("tensorflow")
    path = Path(spec.origin).parent / name if spec and spec.origin else None
    return path if path and path.is_file() else None


def test_tensorflows_gpu_tracer_is_the_collector_whose_line_names_these_planes_use():
    """tf.profiler on a GPU (keras2-tf, keras3-tf) writes its device planes through the same CUPTI collector as jax's
    CUDA plugin: the pinned TensorFlow 2.21 wheel carries XLA's GPU tracer (xla/backends/profiler/gpu/
    device_tracer_cuda.cc) and its cupti_collector.cc with the ``Stream #`` line prefix, and the plane names this
    module's planes use. So the lines above are what the TF stacks' GPU profiles hold too (``CUPTI overhead``, built
    from immediates in the binary, cannot be found by a string search); a TensorFlow whose tracer is another fails."""
    import mmap

    import pytest

    from bench.instruments.profile.spans import GPU_PLANE, HOST_PLANES, STREAM_LINE

    cc, framework = (_pinned_tensorflow_library(n) for n in ("libtensorflow_cc.so.2", "libtensorflow_framework.so.2"))
    if cc is None or framework is None:
        pytest.skip("no TensorFlow wheel installed here (the images hold it)")

    def holds(path, *needles: bytes) -> list[bytes]:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            return [n for n in needles if m.find(n) < 0]

    assert not holds(cc, b"xla/backends/profiler/gpu/device_tracer_cuda.cc\0",
                     b"xla/backends/profiler/gpu/cupti_collector.cc\0", b"\0" + STREAM_LINE.encode() + b"\0",
                     b"\0" + GPU_PLANE.encode() + b"\0")
    assert not holds(framework, *(b"\0" + p.encode() + b"\0" for p in HOST_PLANES))
