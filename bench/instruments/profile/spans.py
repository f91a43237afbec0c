"""One timeline of spans from either kind of trace the frameworks' profilers write: the Chrome trace PyTorch's
profiler exports (``prof.export_chrome_trace``) and the XSpace of the XPlane profilers (``jax.profiler``,
``tf.profiler``, read by ``bench.instruments.profile.xspace``), and the Chrome trace written from an XSpace so that
every stack's trace opens in Perfetto and chrome://tracing.

A span is an ``op`` (work on the host that a framework schedules as a unit: an ATen op, a TensorFlow op, an XLA
CPU thunk), ``device`` work (a GPU kernel, copy or memset) or a ``mark`` (everything else on the host: annotations,
the framework's own events, kernel launches), which the summary uses as the scope of the ops inside it.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.instruments.profile.xspace import Instruction, Plane, hlo_instructions, read_xspace, xspace_messages

#: A profile's files beside its cell's ``<base>``: the Chrome trace (gzipped JSON) and, for the XPlane profilers,
#: TensorBoard's log directory.
TRACE = ".trace.json.gz"
TENSORBOARD = ".tensorboard"

OP, DEVICE, MARK = "op", "device", "mark"


@dataclass(frozen=True)
class Span:
    """One span of the timeline.

    Attributes:
        name: what the op is counted as (ATen op, GPU kernel, TensorFlow op type, XLA instruction).
        start_us, dur_us: start and length (µs, the host's clock; the profilers align device times to it).
        lane: the host thread or device stream it ran on (``plane/line`` or ``pid:tid``).
        kind: ``OP``, ``DEVICE`` or ``MARK``.
        detail: an XLA instruction's opcodes and custom-call targets (``xspace.Instruction``), a TensorFlow
            kernel's op type; empty elsewhere.
        scope: names the op carries itself (a TensorFlow op's full name, an XLA op_name); the summary adds the
            marks around it.
        link: the correlation id that ties a GPU kernel to its launch on the host (None without one).
    """

    name: str
    start_us: float
    dur_us: float
    lane: str
    kind: str
    detail: str = ""
    scope: str = ""
    link: int | None = None

    @property
    def end_us(self) -> float:
        return self.start_us + self.dur_us


#: Chrome-trace categories of PyTorch's profiler (torch/autograd/profiler_util.py@v2.13.0 and kineto's
#: ActivityType names): device work, host ops, and what is neither a mark nor kept (the profiler's own range, the
#: device-side copies of annotations).
TORCH_DEVICE = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
TORCH_OP = frozenset({"cpu_op"})
TORCH_SKIP = frozenset({"Trace", "gpu_user_annotation", "ac2g", "fwdbwd"})


def from_chrome(trace: dict[str, Any]) -> list[Span]:
    """The spans of a Chrome trace as PyTorch's profiler writes it (complete events, ``"ph": "X"``)."""
    out = []
    for e in trace.get("traceEvents", []):
        cat = e.get("cat", "")
        if e.get("ph") != "X" or cat in TORCH_SKIP or "dur" not in e:
            continue
        kind = DEVICE if cat in TORCH_DEVICE else OP if cat in TORCH_OP else MARK
        args = e.get("args") or {}
        link = args.get("correlation")
        out.append(Span(str(e.get("name", "")), float(e["ts"]), float(e["dur"]), f"{e.get('pid')}:{e.get('tid')}",
                        kind, link=int(link) if isinstance(link, int) else None))
    return out


#: A TensorFlow op's event on a host thread: ``<full op name>:<op type>`` (tensorflow/core/common_runtime/
#: executor.cc, the TraceMe of each kernel; core/profiler/utils/tf_op_utils.cc ``ParseTfOpFullname``).
TF_OP = re.compile(r"^(?P<scope>[^:\s]+):(?P<type>[A-Za-z_][A-Za-z0-9_]*)$")
#: TensorFlow op types that run other ops (a function, a loop, an XLA cluster): scopes, not ops, so that their
#: contents are not counted twice (tensorflow/core/ops/functional_ops.cc, compiler/jit/kernels/xla_ops.cc).
TF_CONTAINERS = frozenset({"PartitionedCall", "StatefulPartitionedCall", "While", "StatelessWhile", "If",
                           "StatelessIf", "Case", "StatelessCase", "_XlaRun", "_XlaCompile", "XlaLaunch",
                           "_XlaMerge"})
#: Lines the profiler derives from others (xla/tsl/profiler/utils/xplane_schema.cc): their events repeat what the
#: stream and thread lines hold.
DERIVED_LINES = frozenset({"Steps", "XLA Modules", "XLA Ops", "Async XLA Ops", "Framework Name Scope",
                           "Framework Ops", "TensorFlow Name Scope", "TensorFlow Ops", "Launch Stats", "Source code",
                           "XLA TraceMe", "Host Offload Ops", "_counters_"})
GPU_PLANE = "/device:GPU:"
HOST_PLANES = ("/host:CPU", "/host:CUPTI")
#: A GPU plane's lines of device work: one per stream, ``Stream #<id>`` or ``Stream #<id>(<event types>)``
#: (xla/backends/profiler/gpu/cupti_collector.cc ``GetDeviceXLineName``, the collector of jax 0.10.2's CUDA plugin
#: and of TensorFlow 2.21's GPU tracer), or ``OVERHEAD_LINE``; the rest (derived lines, counters) is no kernel.
STREAM_LINE = "Stream #"
#: The name that collector gives a stream's line once it holds any of CUPTI's overhead records (``GetDeviceXLineName``
#: returns it for a line whose event types include Overhead, whatever else it holds), and the line of the records
#: tied to no stream (``kThreadIdOverhead``): the kernels and copies on it are the device's work all the same.
OVERHEAD_LINE = "CUPTI overhead"
#: CUPTI's overhead records on those lines, named by their kind (cupti_buffer_events.cc
#: ``getActivityOverheadKindString``: ``<UNKNOWN>`` for a kind it does not know, its default; ``Overhead`` when
#: unnamed): the profiler's own cost, not the device's work.
OVERHEAD_EVENTS = frozenset({"Overhead", "COMPILER", "BUFFER_FLUSH", "INSTRUMENTATION", "RESOURCE", "<UNKNOWN>"})


class _Programs:
    """The XLA programs of an XSpace's metadata plane, decoded when an event first names one."""

    def __init__(self, planes: list[Plane]) -> None:
        self.raw = {name: prog for p in planes for name, prog in p.programs.items()}
        self.decoded: dict[str, dict[str, Instruction]] = {}

    def instruction(self, stats: dict[str, Any]) -> Instruction | None:
        module, op = stats.get("hlo_module"), stats.get("hlo_op")
        if not module or not op:
            return None
        key = f"{module}({stats['program_id']})" if "program_id" in stats else module
        if key not in self.raw:
            key = next((k for k in self.raw if k.split("(")[0] == module), key)
        if key not in self.decoded:
            self.decoded[key] = hlo_instructions(self.raw[key]) if key in self.raw else {}
        return self.decoded[key].get(str(op))


def _host_span(event: Any, lane: str, programs: _Programs) -> Span:
    """A host event as an op (an XLA thunk on a CPU, or on a GPU the launch of an XLA kernel, which carries the
    kernel's ``correlation_id``; a TensorFlow op) or a mark, with its correlation id as ``link``."""
    start, dur = event.start_ns / 1000.0, event.dur_ns / 1000.0
    link = event.stats.get("correlation_id")
    link = link if isinstance(link, int) else None
    if "hlo_op" in event.stats:  # an XLA thunk (xla/backends/cpu/runtime/thunk_executor.cc) or GPU kernel launch
        inst = programs.instruction(event.stats)
        return Span(str(event.stats["hlo_op"]), start, dur, lane, OP, inst.detail if inst else "",
                    inst.scope if inst else "", link)
    m = TF_OP.match(event.name)
    if m and m["type"] not in TF_CONTAINERS:
        return Span(m["type"], start, dur, lane, OP, scope=m["scope"], link=link)
    return Span(event.name, start, dur, lane, MARK, link=link)


def _device_span(event: Any, lane: str, programs: _Programs) -> Span:
    inst = programs.instruction(event.stats)
    tf_op = str(event.stats.get("tf_op", ""))
    m = TF_OP.match(tf_op)
    detail = inst.detail if inst else (m["type"] if m else "")
    scope = inst.scope if inst else (m["scope"] if m else tf_op)
    link = event.stats.get("correlation_id")
    return Span(event.name, event.start_ns / 1000.0, event.dur_ns / 1000.0, lane, DEVICE, detail, scope,
                link if isinstance(link, int) else None)


def _device_work(line: str) -> bool:
    """Whether a GPU plane's line named ``line`` holds a stream's kernels and copies."""
    return line.startswith(STREAM_LINE) or line == OVERHEAD_LINE


def from_xspace(planes: list[Plane]) -> list[Span]:
    """The spans of an XSpace's host-thread, CUPTI and GPU planes (derived lines left out; on a GPU plane its
    streams' lines, without CUPTI's overhead records: ``STREAM_LINE``, ``OVERHEAD_LINE``, ``OVERHEAD_EVENTS``), XLA
    instructions described from the programs of its metadata plane (``xspace.hlo_instructions``)."""
    programs, out = _Programs(planes), []
    for plane in planes:
        device = plane.name.startswith(GPU_PLANE)
        if not device and not plane.name.startswith(HOST_PLANES):
            continue
        for line in plane.lines:
            if line.name in DERIVED_LINES or (device and not _device_work(line.name)):
                continue
            lane = f"{plane.name}/{line.name}"
            if device:
                out += [_device_span(e, lane, programs) for e in line.events if e.name not in OVERHEAD_EVENTS]
            else:
                out += [_host_span(e, lane, programs) for e in line.events]
    return out


def chrome_from_xspace(planes: list[Plane]) -> dict[str, Any]:
    """A Chrome trace (JSON object format: ``traceEvents`` of complete events, times in µs) of every line of
    ``planes``, one process per plane and one thread per line, each event's stats as its args (bytes left out)."""
    events: list[dict[str, Any]] = []
    for pid, plane in enumerate(planes):
        events.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": plane.name}})
        for tid, line in enumerate(plane.lines):
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": line.name}})
            events += [{"ph": "X", "name": e.name, "pid": pid, "tid": tid, "ts": e.start_ns / 1000.0,
                        "dur": e.dur_ns / 1000.0,
                        "args": {k: v for k, v in e.stats.items() if not isinstance(v, bytes)}}
                       for e in line.events]
    return {"traceEvents": events, "displayTimeUnit": "ms"}


#: The keys under which kineto's Chrome trace carries what its logger said (libkineto/src/ILoggerObserver.cpp
#: ``LoggerMap``; CuptiActivityProfiler.cpp ``finalizeTrace`` hands them to output_json.cpp as the trace's top-level
#: metadata), such as 'State: CollectTrace stopped by GPU profiler. (Buffer size configured is ...)' in torch 2.13.0.
KINETO_MESSAGES = ("ERROR", "WARNING")


def chrome_messages(trace: dict[str, Any]) -> list[str]:
    """What kineto said went wrong while it traced (``KINETO_MESSAGES``), each ``error: ...`` or ``warning: ...``."""
    out = []
    for key in KINETO_MESSAGES:
        said = trace.get(key)
        said = [said] if isinstance(said, str) else said if isinstance(said, list) else []
        out += [f"{key.lower()}: {m}" for m in said]
    return out


def write_chrome(trace: dict[str, Any], path: Path) -> int:
    """Write ``trace`` gzipped (Perfetto and chrome://tracing open ``.json.gz``); returns its size in bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(trace, f, separators=(",", ":"))
    return path.stat().st_size


def collect_logdir(logdir: Path, base: Path) -> tuple[list[Span], dict[str, Any]]:
    """What an XPlane profiler wrote under ``logdir`` (TensorBoard's ``plugins/profile/<run>/<host>.xplane.pb``):
    its spans (``from_xspace``), what the profiler said went wrong (``warnings``: ``xspace.xspace_messages``), its
    Chrome trace written to ``<base>.trace.json.gz`` and the log directory moved
    to ``<base>.tensorboard`` with the XSpace alone in it (the profiler's own trace conversions left out: the
    Chrome trace above holds the same events).

    Raises:
        FileNotFoundError: no XSpace under ``logdir``.
    """
    import shutil

    found = sorted(logdir.rglob("*.xplane.pb"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise FileNotFoundError(f"the profiler wrote no .xplane.pb under {logdir}")
    data = found[-1].read_bytes()
    planes, said = read_xspace(data), xspace_messages(data)
    trace = base.with_name(base.name + TRACE)
    size = write_chrome(chrome_from_xspace(planes), trace)
    board = base.with_name(base.name + TENSORBOARD)
    shutil.rmtree(board, ignore_errors=True)
    shutil.move(str(logdir), str(board))
    for extra in (p for p in board.rglob("*") if p.is_file() and not p.name.endswith(".xplane.pb")):
        extra.unlink()
    kept = sum(p.stat().st_size for p in board.rglob("*") if p.is_file())
    return from_xspace(planes), {"trace": trace.name, "trace_bytes": size, "tensorboard": board.name,
                                 "tensorboard_bytes": kept, "warnings": said}
