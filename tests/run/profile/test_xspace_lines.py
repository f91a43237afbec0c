"""What of an XSpace counts as the device's work and what the profilers said went wrong (``spans.from_xspace``,
``xspace.xspace_messages``, ``spans.chrome_messages``), on planes built here as jax 0.10.2's CUDA plugin names them
(xla/backends/profiler/gpu/cupti_collector.cc: ``Stream #<id>(<event types>)`` lines, CUPTI's overhead records by
their kind) and protobuf bytes written by hand (tsl/profiler/protobuf/xplane.proto: XSpace errors 2, warnings 3)."""

from __future__ import annotations

from bench.run.profile.spans import DEVICE, chrome_messages, from_xspace
from bench.run.profile.summary import summarise
from bench.run.profile.xspace import Event, Line, Plane, xspace_messages

GEMM = "nvjet_tst_256x256_64x4_1x2_h_bz_coopA_NNT"


def _event(name: str, start_us: float, dur_us: float) -> Event:
    return Event(name, start_us * 1000.0, dur_us * 1000.0, {})


def gpu_planes() -> list[Plane]:
    window = Plane("/host:CPU", [Line("python", [_event("dlbench.profiled_steps", 0, 100)])])
    gpu = Plane("/device:GPU:0", [
        Line("Stream #7(Kernel,MemcpyH2D,Overhead)", [_event(GEMM, 10, 30), _event("MemcpyH2D", 50, 5),
                                                      _event("INSTRUMENTATION", 60, 20), _event("<UNKNOWN>", 85, 10)]),
        # kThreadIdOverhead's line, a kind the collector does not name among them
        Line("Stream #9223372036854775807(Overhead)", [_event("BUFFER_FLUSH", 0, 90), _event("SOME_NEW_KIND", 0, 9)]),
        Line("CUPTI overhead", [_event("RESOURCE", 0, 90)]),  # a later XLA's name for that line
        Line("XLA Ops", [_event(GEMM, 10, 30)]),  # derived: repeats the stream's kernels
    ])
    return [window, gpu]


def test_only_the_streams_kernels_and_copies_are_device_work():
    spans = from_xspace(gpu_planes())
    assert [s.name for s in spans if s.kind == DEVICE] == [GEMM, "MemcpyH2D"]
    block = summarise(spans, steps=1)
    assert block["busy_ms"] == 0.035 and block["other_ops"] == []


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
