"""``Record``: one cell's result record, the one typed object from the worker to the collector."""

from __future__ import annotations

import typing
from typing import Any, Literal

from pydantic import ValidationError, ValidatorFunctionWrapHandler, field_validator

from bench.results.schema.blocks import Data, Memory, Metrics, Model, Output, Process, Repeats
from bench.results.schema.declare import SCHEMA_VERSION, Block, entry
from bench.results.schema.effective import EffectiveSettings
from bench.results.schema.env import Env, Telemetry
from bench.results.schema.profile import Profile

#: Statuses a cell can end in. Only ``ok`` carries timings.
Status = Literal["ok", "failed", "timeout", "oom", "unsupported"]
#: The statuses, in ``Status``' order (the one list).
STATUSES: tuple[str, ...] = typing.get_args(Status)
#: Fields a record must hold to be read at all.
REQUIRED = ("schema_version", "cell_id", "stack", "workload", "task", "size", "device", "status")


#: ``gpu_before.seen_from`` of a process count that saw every process on the GPU: the host's PID namespace
#: (``bench.instruments.gpu_state.seen_from``; a container's own namespace hides other tenants).
HOST_PIDS = "host pid namespace"


class Record(Block):
    """One cell's result record (one JSON file; ``bench.results.record.new_record`` makes its skeleton)."""

    schema_version: int = entry("integer version of this record layout", default=SCHEMA_VERSION)
    cell_id: str = entry("stack__suite__workload__task__size__variant, then __key=value+... for each measurement "
                         "input off its default (batch_size, epochs, samples, steps, seq_len, data); also the file "
                         "name (paper suite: variant bs<N>)", default="")
    stack: str = entry("the cell's stack", default="")
    suite: str | None = entry("the cell's suite")
    workload: str = entry("the cell's workload", default="")
    task: str = entry("the cell's task (fit, predict, generate...)", default="")
    size: str = entry("smoke or full", default="")
    variant: str | None = entry("the settings set's name (default: out of the box)")
    device: str = entry("cpu or gpu, as resolved for the run", default="")
    status: Status = entry("ok | failed | timeout | oom | unsupported", default="failed")
    reason: str | None = entry("why a cell is not ok (null when ok)")
    batch_size: int | None = entry("examples per step")
    data: Data = entry("the data the cell used", default=None)
    settings: EffectiveSettings = entry("every precision/compile setting in effect: requested and effective values, "
                                        "as the engine reported them; a cell whose engine reported none (failed, "
                                        "unsupported, killed) holds only what the runner set (compile_cache): what "
                                        "it asked for is settings_requested", default=None)
    settings_requested: dict[str, Any] = entry("the knobs the cell asked for (its variant), before the framework "
                                               "resolved them", default={})
    baseline: bool | None = entry("true for the out-of-the-box variant of a sweep")
    repeat: int | None = entry("1-based repeat index in a per-repeat record (null in the aggregated cell record)")
    schedule: dict[str, Any] | None = entry("rounds (make bench-all): seed, round of rounds, the round's shuffled "
                                            "stack order and this stack's position in it")
    metrics: Metrics = entry("the timed results", default=None)
    repeats: Repeats | None = entry("the repeats and their spread (a repeated cell's record)")
    telemetry: Telemetry = entry("NVML telemetry over the timed window", default=None)
    profile: Profile | None = entry("bench run --profile: where the time goes over a few steady steps after the "
                                    "timed window, from the framework's profiler (repeat 1's)")
    history: dict[str, Any] = entry("per-epoch train loss/accuracy and validation loss/accuracy where the source had "
                                    "them", default={})
    model: Model = entry("the model's parameter counts", default=None)
    memory: Memory = entry("peak memory", default=None)
    output: Output | None = entry("paper suite: the last step's output")
    process: Process = entry("the cell's process", default=None)
    env: Env = entry("Python, framework and CUDA/cuDNN versions, GPU and driver (NVML), CPU, image, git commit, host",
                     default=None)
    gpu_before: dict[str, Any] | None = entry("GPU cells: the GPU as the cell started: processes, "
                                              "process_memory_bytes, temperature_c, seen_from (whose processes the "
                                              "count covers: host pid namespace | container pid namespace)")
    cooldown: dict[str, Any] | None = entry("GPU cells with --cooldown: idle_c, idle_source (where the idle "
                                            "temperature was read), target_c, start_c, end_c, waited_s, reached, "
                                            "max_s")
    notes: list[str] = entry("warnings that travel with the row (e.g. a CPU run is not a GPU benchmark)", default=[])
    started_utc: str | None = entry("when the worker started (UTC, ISO 8601; a worker that left no record, killed "
                                    "or crashed: when the runner started its process; null in such records before "
                                    "2026-11-27)")
    finished_utc: str | None = entry("when it finished (UTC, ISO 8601; a worker that left no record: when the "
                                     "runner saw its process end)")
    traceback: str | None = entry("a failed cell's traceback (not in the CSV)")

    @field_validator("settings", mode="wrap")
    @classmethod
    def _settings_as_recorded(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        """The settings block is a mapping first: a record whose effective settings do not fit their declared types
        (the knobs' values changed type across schema versions, e.g. tf32 was a bool in version 2) still loads,
        its values as recorded (``bench.results.schema.validate.problems`` checks the block as a mapping only)."""
        try:
            return handler(value)
        except ValidationError:
            if isinstance(value, dict):
                return EffectiveSettings.model_construct(**value)
            raise
