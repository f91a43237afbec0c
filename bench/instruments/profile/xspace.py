"""Reading what the XPlane profilers write (``jax.profiler``, TensorFlow's ``tf.profiler``): the ``<host>.xplane.pb``
file, an ``XSpace`` protobuf, and the XLA programs (``HloProto``) its metadata plane holds.

The messages are decoded from protobuf's wire format here, fields by number, because their generated Python
classes ship only with TensorFlow (``tensorflow.tsl.profiler.protobuf.xplane_pb2``), whose import costs seconds in
a JAX cell's process, and jaxlib's reader (``jax.profiler.ProfileData``) does not expose the metadata plane's
programs. The field numbers are those of the pinned TensorFlow 2.21.0's descriptors: tsl/profiler/protobuf/
xplane.proto (package tensorflow.profiler) and xla/service/hlo.proto, xla/xla_data.proto (``OpMetadata``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

#: Protobuf wire types (protobuf.dev/programming-guides/encoding): varint, 64-bit, length-delimited, 32-bit.
VARINT, I64, LEN, I32 = 0, 1, 2, 5


def _varint(buf: memoryview, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def fields(buf: bytes | memoryview) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) of each field of one message: an int for a varint or a fixed-size
    field (raw little-endian bits), a memoryview for a length-delimited one.

    Raises:
        ValueError: a wire type protobuf does not define (a corrupt or truncated file).
    """
    view = memoryview(buf)
    i, end = 0, len(view)
    value: Any
    while i < end:
        key, i = _varint(view, i)
        number, wire = key >> 3, key & 7
        if wire == VARINT:
            value, i = _varint(view, i)
        elif wire == LEN:
            size, i = _varint(view, i)
            value, i = view[i:i + size], i + size
        elif wire == I64:
            value, i = int.from_bytes(view[i:i + 8], "little"), i + 8
        elif wire == I32:
            value, i = int.from_bytes(view[i:i + 4], "little"), i + 4
        else:
            raise ValueError(f"protobuf wire type {wire} at byte {i}: not an XSpace")
        yield number, wire, value


def _signed(value: int) -> int:
    """An int64 field's value (varints carry two's complement)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _text(value: memoryview) -> str:
    return bytes(value).decode("utf-8", "replace")


@dataclass
class Event:
    """One XPlane event: its name, start and duration (ns, the host's clock) and its stats (name -> value)."""

    name: str
    start_ns: float
    dur_ns: float
    stats: dict[str, Any]


@dataclass
class Line:
    """A timeline of a plane (a host thread, a GPU stream, or a line derived from them) and its events."""

    name: str
    events: list[Event]


@dataclass
class Plane:
    """A plane (``/host:CPU``, ``/device:GPU:0``, ``/host:metadata``...), its lines and, for the metadata plane,
    the XLA programs it carries (``HloProto`` bytes by the name the profiler gives them, ``jit_train(24)``)."""

    name: str
    lines: list[Line] = field(default_factory=list)
    programs: dict[str, bytes] = field(default_factory=dict)


def _stat(buf: memoryview, stat_names: dict[int, str]) -> tuple[str, Any]:
    """An ``XStat`` (metadata_id 1, double 2, uint64 3, int64 4, str 5, bytes 6, ref 7): (name, value)."""
    name, value = "", None
    for number, _, v in fields(buf):
        if number == 1:
            name = stat_names.get(v, str(v))
        elif number == 2:
            value = struct.unpack("<d", v.to_bytes(8, "little"))[0]
        elif number == 3:
            value = v
        elif number == 4:
            value = _signed(v)
        elif number == 5:
            value = _text(v)
        elif number == 6:
            value = bytes(v)
        elif number == 7:
            value = stat_names.get(v, str(v))
    return name, value


def _map_entry(buf: memoryview) -> tuple[int, memoryview]:
    key, value = 0, memoryview(b"")
    for number, _, v in fields(buf):
        if number == 1:
            key = v
        elif number == 2:
            value = v
    return key, value


def _event_metadata(buf: memoryview) -> tuple[str, list[memoryview]]:
    """An ``XEventMetadata``: (name 2, or display_name 4 when the name is empty; its stats 5, undecoded)."""
    name = display = ""
    stats: list[memoryview] = []
    for number, _, v in fields(buf):
        if number == 2:
            name = _text(v)
        elif number == 4:
            display = _text(v)
        elif number == 5:
            stats.append(v)
    return name or display, stats


def _line(buf: memoryview, names: dict[int, tuple[str, dict[str, Any]]], stat_names: dict[int, str]) -> Line:
    """An ``XLine`` (name 2, display_name 11, timestamp_ns 3, events 4) with its events in absolute ns."""
    name, display, start_ns, raw = "", "", 0, []
    for number, _, v in fields(buf):
        if number == 2:
            name = _text(v)
        elif number == 11:
            display = _text(v)
        elif number == 3:
            start_ns = _signed(v)
        elif number == 4:
            raw.append(v)
    return Line(display or name, [_event(e, start_ns, names, stat_names) for e in raw])


def _event(buf: memoryview, line_ns: int, names: dict[int, tuple[str, dict[str, Any]]],
           stat_names: dict[int, str]) -> Event:
    """An ``XEvent`` (metadata_id 1, offset_ps 2, duration_ps 3, stats 4), its metadata's stats under its own."""
    meta, offset_ps, dur_ps, stats = 0, 0, 0, {}
    for number, _, v in fields(buf):
        if number == 1:
            meta = v
        elif number == 2:
            offset_ps = _signed(v)
        elif number == 3:
            dur_ps = _signed(v)
        elif number == 4:
            key, value = _stat(v, stat_names)
            stats[key] = value
    name, meta_stats = names.get(meta, (str(meta), {}))
    return Event(name, line_ns + offset_ps / 1000.0, dur_ps / 1000.0, {**meta_stats, **stats})


def _plane(buf: memoryview) -> Plane:
    """An ``XPlane`` (name 2, lines 3, event_metadata 4, stat_metadata 5): its lines decoded once the names are."""
    name, lines, event_meta, stat_names = "", [], {}, {}
    for number, _, v in fields(buf):
        if number == 2:
            name = _text(v)
        elif number == 3:
            lines.append(v)
        elif number == 4:
            key, value = _map_entry(v)
            event_meta[key] = value
        elif number == 5:
            key, value = _map_entry(v)
            stat_names[key] = next((_text(s) for n, _, s in fields(value) if n == 2), str(key))
    plane = Plane(name)
    names: dict[int, tuple[str, dict[str, Any]]] = {}
    for key, raw in event_meta.items():
        event_name, raw_stats = _event_metadata(raw)
        stats = dict(_stat(s, stat_names) for s in raw_stats)
        names[key] = (event_name, {k: v for k, v in stats.items() if not isinstance(v, bytes)})
        program = next((v for k, v in stats.items() if isinstance(v, bytes) and k == "Hlo Proto"), None)
        if program is not None:
            plane.programs[event_name] = program
    plane.lines = [_line(v, names, stat_names) for v in lines]
    return plane


def read_xspace(data: bytes) -> list[Plane]:
    """The planes of a serialized ``XSpace`` (planes: field 1).

    Raises:
        ValueError: bytes that are not a protobuf message.
    """
    return [_plane(v) for number, wire, v in fields(data) if number == 1 and wire == LEN]


def xspace_messages(data: bytes) -> list[str]:
    """What the profiler said went wrong, as the ``XSpace`` carries it: its ``errors`` (field 2, ``error: ...``) and
    ``warnings`` (field 3, ``warning: ...``), such as the GPU tracer's count of the CUPTI events it dropped
    (xla/backends/profiler/gpu/device_tracer_cuda.cc ``CollectData``: ``ReportNumEventsIfDropped``).

    Raises:
        ValueError: bytes that are not a protobuf message.
    """
    kinds = {2: "error", 3: "warning"}
    return [f"{kinds[n]}: {_text(v)}" for n, wire, v in fields(data) if n in kinds and wire == LEN]


@dataclass(frozen=True)
class Instruction:
    """What an XLA instruction is made of: ``detail`` (the sorted opcodes of itself and of the computations it calls,
    and their custom-call targets, space-separated) and ``scope`` (its ``op_name`` metadata, or the longest
    '/'-separated prefix common to those of the instructions it calls, as XLA's GPU annotations print it:
    xla/backends/gpu/runtime/annotation.cc, ``GetLongestOpNamePrefix``)."""

    detail: str
    scope: str


#: Opcodes that compute nothing (they name values): left out of an instruction's detail.
_PLUMBING = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast"})


def _instruction(buf: memoryview) -> tuple[str, str, str, str, list[int]]:
    """An ``HloInstructionProto``: (name 1, opcode 2, op_name from metadata 7, custom_call_target 28,
    called_computation_ids 38, packed or not)."""
    name = opcode = op_name = target = ""
    called: list[int] = []
    for number, wire, v in fields(buf):
        if number == 1:
            name = _text(v)
        elif number == 2:
            opcode = _text(v)
        elif number == 7:
            op_name = next((_text(s) for n, _, s in fields(v) if n == 2), "")
        elif number == 28:
            target = _text(v)
        elif number == 38:
            called += _ids(v, wire)
    return name, opcode, op_name, target, called


def _ids(value: Any, wire: int) -> list[int]:
    if wire == VARINT:
        return [value]
    out, i = [], 0
    while i < len(value):
        v, i = _varint(value, i)
        out.append(v)
    return out


def _common_prefix(names: list[str]) -> str:
    parts = [n.split("/") for n in names if n]
    if not parts:
        return ""
    common: list[str] = []
    for tokens in zip(*parts, strict=False):
        if len(set(tokens)) > 1:
            break
        common.append(tokens[0])
    return "/".join(common)


def hlo_instructions(program: bytes) -> dict[str, Instruction]:
    """Every instruction of an ``HloProto`` (hlo_module 1 -> computations 3 -> instructions 2; a computation's
    id is field 5) by name, with what it is made of (``Instruction``)."""
    module = next((v for n, _, v in fields(program) if n == 1), memoryview(b""))
    computations: dict[int, list[tuple[str, str, str, str, list[int]]]] = {}
    for number, _, comp in fields(module):
        if number != 3:
            continue
        cid, instructions = 0, []
        for n, _, v in fields(comp):
            if n == 2:
                instructions.append(_instruction(v))
            elif n == 5:
                cid = v
        computations[cid] = instructions
    return {name: _describe(opcode, op_name, target, called, computations)
            for insts in computations.values() for name, opcode, op_name, target, called in insts}


def _describe(opcode: str, op_name: str, target: str, called: list[int],
              computations: dict[int, list[tuple[str, str, str, str, list[int]]]]) -> Instruction:
    opcodes, targets, names, seen = {opcode}, {target} - {""}, [], set()
    todo = list(called)
    while todo:
        cid = todo.pop()
        if cid in seen:
            continue
        seen.add(cid)
        for _, op, name, tgt, sub in computations.get(cid, []):
            opcodes.add(op)
            targets |= {tgt} - {""}
            names.append(name)
            todo += sub
    detail = " ".join(sorted(opcodes - _PLUMBING) + sorted(targets))
    return Instruction(detail, op_name or _common_prefix(names))
