"""Reading the XPlane profilers' output (``bench.instruments.profile.xspace``, ``spans.from_xspace``) against XSpace and
HloProto messages made by TensorFlow 2.21.0's own generated classes (tsl/profiler/protobuf/xplane.proto,
xla/service/hlo.proto): a GPU plane as XLA's and TensorFlow's device tracers fill it, with kernels XLA named,
a cuBLAS GEMM, a copy, TensorFlow's Eigen kernel and a derived line that must not count twice."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench.instruments.profile.spans import DEVICE, MARK, OP, chrome_from_xspace, from_xspace
from bench.instruments.profile.summary import WINDOW, summarise
from bench.instruments.profile.xspace import fields, hlo_instructions, read_xspace
from tests.conftest import has

pytestmark = pytest.mark.skipif(not has("tensorflow"), reason="TensorFlow's generated protobuf classes make the "
                                                               "fixture")

GEMM = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_"
        "kernel__5x_cublas")
EIGEN = "void Eigen::internal::EigenMetaKernel<Eigen::TensorEvaluator<...>, Eigen::GpuDevice>, long>(...)"

#: Run in its own process: TensorFlow's import is kept out of the test process (see tests/conftest.py).
MAKE = f'''
import sys
from tensorflow.tsl.profiler.protobuf import xplane_pb2
from tensorflow.compiler.xla.service import hlo_pb2

program = hlo_pb2.HloProto()
mod = program.hlo_module
mod.name = "jit_train"
entry = mod.computations.add(name="main", id=1)
fusion = entry.instructions.add(name="fusion.1", opcode="fusion", id=1)
fusion.called_computation_ids.append(2)
gemm = entry.instructions.add(name="custom-call.2", opcode="custom-call", custom_call_target="__cublas$lt$matmul")
gemm.metadata.op_name = "jit(train)/jvp(Dense_0)/dot_general"
body = mod.computations.add(name="fused_computation", id=2)
body.instructions.add(name="param_0", opcode="parameter").metadata.op_name = ""
body.instructions.add(name="add.3", opcode="add").metadata.op_name = "jit(train)/optax/add"
body.instructions.add(name="multiply.4", opcode="multiply").metadata.op_name = "jit(train)/optax/mul"

space = xplane_pb2.XSpace()
meta = space.planes.add(id=0, name="/host:metadata")
meta.stat_metadata[1].name = "Hlo Proto"
meta.event_metadata[1].name = "jit_train(7)"
meta.event_metadata[1].stats.add(metadata_id=1, bytes_value=program.SerializeToString())

host = space.planes.add(id=1, name="/host:CPU")
host.event_metadata[1].name = "{WINDOW}"
host.event_metadata[2].name = "cuLaunchKernel"
host.stat_metadata[1].name = "correlation_id"
line = host.lines.add(id=1, name="python", timestamp_ns=1000)
line.events.add(metadata_id=1, offset_ps=0, duration_ps=200_000_000)
line.events.add(metadata_id=2, offset_ps=5_000_000, duration_ps=1_000_000).stats.add(metadata_id=1, int64_value=5)

gpu = space.planes.add(id=2, name="/device:GPU:0")
for k, name in enumerate(["loop_add_multiply_fusion", "{GEMM}", "MemcpyH2D", "{EIGEN}"], 1):
    gpu.event_metadata[k].name = name
for k, name in enumerate(["hlo_op", "hlo_module", "program_id", "tf_op", "fusion.1", "custom-call.2",
                          "correlation_id"], 1):
    gpu.stat_metadata[k].name = name
stream = gpu.lines.add(id=7, name="Stream #7(Compute)", timestamp_ns=1000)
def event(meta, start_us, dur_us, **stats):
    e = stream.events.add(metadata_id=meta, offset_ps=start_us * 1_000_000, duration_ps=dur_us * 1_000_000)
    for key, value in stats.items():
        stat = e.stats.add(metadata_id=key)
        if isinstance(value, bytes):
            stat.ref_value = int(value)  # a string interned as another stat's name
        elif isinstance(value, int):
            stat.int64_value = value
        else:
            stat.str_value = value
    return e
event(1, 10, 20, **{{"1": b"5", "2": "jit_train", "3": 7, "7": 5}})
event(2, 40, 60, **{{"1": b"6", "2": "jit_train", "3": 7}})
event(3, 110, 10)
event(4, 130, 5, **{{"4": "StatefulPartitionedCall/adam/Mul:Mul"}})
derived = gpu.lines.add(id=8, name="XLA Ops", timestamp_ns=1000)
derived.events.add(metadata_id=2, offset_ps=40_000_000, duration_ps=60_000_000)
open(sys.argv[1], "wb").write(space.SerializeToString())
'''


def _fix_stat_keys(script: str) -> str:
    # the fixture's stat ids are written as strings so that **kwargs can carry them
    return script.replace("e.stats.add(metadata_id=key)", "e.stats.add(metadata_id=int(key))")


@pytest.fixture(scope="module")
def xspace(tmp_path_factory):
    path = tmp_path_factory.mktemp("xspace") / "host.xplane.pb"
    env = {**os.environ, "KERAS_BACKEND": "tensorflow"}  # TensorFlow's import loads Keras: not its torch backend
    p = subprocess.run([sys.executable, "-c", _fix_stat_keys(MAKE), str(path)], capture_output=True, text=True,
                       timeout=300, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    return path.read_bytes()


def test_planes_lines_events_and_programs_decode(xspace):
    planes = {p.name: p for p in read_xspace(xspace)}
    assert set(planes) == {"/host:metadata", "/host:CPU", "/device:GPU:0"}
    assert list(planes["/host:metadata"].programs) == ["jit_train(7)"]
    stream = planes["/device:GPU:0"].lines[0]
    assert stream.name == "Stream #7(Compute)" and len(stream.events) == 4
    first = stream.events[0]
    assert first.name == "loop_add_multiply_fusion" and first.start_ns == 1000 + 10_000 and first.dur_ns == 20_000
    assert first.stats == {"hlo_op": "fusion.1", "hlo_module": "jit_train", "program_id": 7, "correlation_id": 5}


def test_an_instruction_is_described_by_what_it_calls(xspace):
    program = read_xspace(xspace)[0].programs["jit_train(7)"]
    inst = hlo_instructions(program)
    assert inst["fusion.1"].detail == "add fusion multiply" and inst["fusion.1"].scope == "jit(train)/optax"
    assert inst["custom-call.2"].detail == "custom-call __cublas$lt$matmul"
    assert inst["custom-call.2"].scope == "jit(train)/jvp(Dense_0)/dot_general"


def test_the_gpu_plane_counts_each_kernel_once_in_its_category(xspace):
    spans = from_xspace(read_xspace(xspace))
    device = [s for s in spans if s.kind == DEVICE]
    assert [s.name for s in device] == ["loop_add_multiply_fusion", GEMM, "MemcpyH2D", EIGEN]  # XLA Ops left out
    assert {s.kind for s in spans if s.lane.startswith("/host:CPU")} == {MARK} and not [s for s in spans if
                                                                                          s.kind == OP]
    block = summarise(spans, steps=1)
    cats = {k: round(v * 1000, 6) for k, v in block["categories"].items() if v}
    assert cats == {"optimizer": 25.0, "matmul_conv": 60.0, "memcpy_h2d": 10.0}  # fusion (optax) + Eigen (adam)
    assert block["window_ms"] == pytest.approx(0.2) and block["busy_ms"] == pytest.approx(0.095)


def test_the_chrome_trace_holds_every_event_of_every_line(xspace):
    trace = chrome_from_xspace(read_xspace(xspace))
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(complete) == 2 + 4 + 1
    assert {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"} >= {"python", "XLA Ops"}


def test_a_file_that_is_no_protobuf_is_an_error():
    with pytest.raises((ValueError, IndexError)):
        list(fields(b"\x07\x07\x07"))
