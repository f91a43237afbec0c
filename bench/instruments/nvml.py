"""NVML (nvidia-ml-py's ``pynvml``) for the cell's GPU: the one place that imports it, initialises it, finds the
cell's device, describes its errors and shuts it down, and ``Gpu``, the one class that reads a GPU through it (no
``nvmlDevice*`` or ``nvmlSystem*`` call outside it: ``tests/instruments/test_nvml.py``). Facts relied on:
docs/platform.md, "NVML".

Seam for tests: every opener takes ``nv``, a pynvml-compatible module; None imports ``pynvml``, so a test either
passes a fake or puts one in ``sys.modules["pynvml"]``.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple


def load(nv: Any = None) -> Any:
    """``nv``, or the ``pynvml`` module (provided by nvidia-ml-py) when None. Raises ImportError without it."""
    if nv is not None:
        return nv
    import pynvml  # provided by nvidia-ml-py

    return pynvml


def init(nv: Any = None) -> Any:
    """``load(nv)`` with ``nvmlInit`` called; raises what the import or ``nvmlInit`` raises (no library, no driver)."""
    nv = load(nv)
    nv.nvmlInit()
    return nv


def nvml_index(env: Mapping[str, str] | None = None) -> int | str:
    """The NVML device of the cell's first visible GPU: an index, or a UUID from CUDA_VISIBLE_DEVICES
    (``env``, default ``os.environ``).

    NVML ignores CUDA_VISIBLE_DEVICES, so the mapping is done here.
    """
    first = (env if env is not None else os.environ).get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    if not first:
        return 0
    return int(first) if first.isdigit() else first


def describe_error(e: BaseException) -> str:
    """``"<type>: <message>"`` of an NVML (or import) error, for a record's reason."""
    return f"{type(e).__name__}: {e}".strip()


def function_not_found(nv: Any, e: BaseException) -> bool:
    """Whether ``e`` says the driver's NVML (or the ``pynvml`` module) lacks the function called: pynvml raises
    ``NVMLError`` with ``NVML_ERROR_FUNCTION_NOT_FOUND`` (``NVMLError_FunctionNotFound``) for a symbol the driver's
    library does not export, and a module without the wrapper raises AttributeError."""
    if isinstance(e, AttributeError):
        return True
    return getattr(e, "value", None) == getattr(nv, "NVML_ERROR_FUNCTION_NOT_FOUND", 13)


def shutdown(nv: Any) -> None:
    """``nvmlShutdown``; never raises (a failed shutdown changes no reading)."""
    with contextlib.suppress(Exception):
        nv.nvmlShutdown()


class Process(NamedTuple):
    """A compute process NVML lists on a GPU: its ``pid`` and the device memory it uses (bytes; None where NVML
    does not say, which nvidia-ml-py 13.615.71 turns from ``NVML_VALUE_NOT_AVAILABLE`` into None)."""

    pid: int | None
    used_memory_bytes: int | None


class Gpu:
    """One GPU as NVML sees it: it owns the GPU's NVML handle and is the one class that calls NVML's device and system
    functions (``nvmlDevice*``, ``nvmlSystem*``); outside this module no NVML function or constant is used
    (``tests/instruments/test_nvml.py``). It reads and converts; it records nothing and keeps no reading.

    Errors: a reading raises what pynvml raises unless its docstring says otherwise ("NotSupported" below: it raises
    ``NVMLError_NotSupported`` where the GPU or driver has no such reading), and each caller keeps its own handling
    (a null with the reason, a fallback, an ``available: False`` block). nvidia-ml-py 13.615.71 raises
    ``pynvml.NVMLError``, built as the subclass named for the return code (``_extractNVMLErrorsAsClasses``), whose
    ``value`` is the code and whose str is NVML's text: ``NVMLError_NotSupported`` ("Not Supported": this GPU or
    driver has no such counter), ``NVMLError_FunctionNotFound`` ("Function Not Found": the driver's library lacks the
    function; ``function_not_found``), ``NVMLError_NoPermission``, ``NVMLError_GpuIsLost``, ... A pynvml without the
    wrapper raises AttributeError.

    Args:
        nv: an initialised pynvml-compatible module (``init``; tests pass fakes).
        device: the GPU's NVML index, or its UUID (``GPU-...``, or ``MIG-...`` for a MIG slice), looked up by UUID
            (``nvml_index``). Raises NVML's error (``NVMLError_NotFound``, ``NVMLError_InvalidArgument``) when there
            is no such GPU.
    """

    def __init__(self, nv: Any, device: int | str):
        self.nv, self.device = nv, device
        self.handle = (nv.nvmlDeviceGetHandleByUUID(device) if isinstance(device, str)
                       else nv.nvmlDeviceGetHandleByIndex(device))
        self._old: set[str] = set()  # readings whose newer NVML call this driver lacks (``_newest``)

    @classmethod
    def open(cls, nv: Any = None) -> Gpu:
        """The cell's GPU (``nvml_index()``) on ``init(nv)``; raises what the import, ``nvmlInit`` or the lookup
        raise. ``close`` shuts NVML down."""
        return cls(init(nv), nvml_index())

    def close(self) -> None:
        """``shutdown``: ``nvmlShutdown``; never raises."""
        shutdown(self.nv)

    # ---- identity ------------------------------------------------------------------------------------
    def name(self) -> str:
        """NVML's name of the GPU (``NVIDIA H100 80GB HBM3``; a MIG slice's carries its profile), as text. Raises
        NVML's error."""
        return _text(self.nv.nvmlDeviceGetName(self.handle))

    def uuid(self) -> str:
        """NVML's UUID of the GPU (``GPU-...``; ``MIG-...`` for a MIG slice), as text. Raises NVML's error."""
        return _text(self.nv.nvmlDeviceGetUUID(self.handle))

    def architecture(self) -> int | None:
        """NVML's architecture number (``NVML_DEVICE_ARCH_*``: 7 Ampere, 9 Hopper); None where the driver does not
        say (``NVML_DEVICE_ARCH_UNKNOWN``, or any error: FunctionNotFound on old drivers, a fake without it)."""
        try:
            arch = int(self.nv.nvmlDeviceGetArchitecture(self.handle))
        except Exception:
            return None
        return None if arch == getattr(self.nv, "NVML_DEVICE_ARCH_UNKNOWN", 0xFFFFFFFF) else arch

    def is_mig_slice(self, name: str | None = None) -> bool:
        """Whether the handle is a MIG device (a slice of a GPU), as ``nvmlDeviceGetHandleByUUID`` returns for a
        ``MIG-...`` UUID in CUDA_VISIBLE_DEVICES: ``nvmlDeviceIsMigDeviceHandle`` says so (nvidia-ml-py 13.615.71
        returns a ``c_uint``), or, where the driver cannot answer (any error), its NVML name ``name`` carries the
        profile (``NVIDIA A100-SXM4-40GB MIG 1g.5gb``). Never raises."""
        try:
            answer = self.nv.nvmlDeviceIsMigDeviceHandle(self.handle)
            if int(getattr(answer, "value", answer)):
                return True
        except Exception:  # FunctionNotFound on old drivers, a fake without it: the name decides
            pass
        return bool(re.search(r"\bMIG\b", str(name or "")))

    def mig_mode(self, name: str | None = None) -> bool | None:
        """Whether the GPU is in MIG mode (its current mode), True for a handle that is itself a MIG slice
        (``is_mig_slice(name)``); None where NVML does not say (any error: NotSupported on GPUs without MIG,
        FunctionNotFound on old drivers). In MIG mode a container gets one slice, but NVML's power and energy are
        the parent GPU's and its utilisation rates are not read at all (NotSupported on MIG-enabled GPUs, nvml.h):
        MFU against the whole GPU's peak and energy per step are not comparable
        with a full GPU's. Never raises."""
        if self.is_mig_slice(name):
            return True
        try:
            current, _pending = self.nv.nvmlDeviceGetMigMode(self.handle)
        except Exception:
            return None
        return int(current) == int(getattr(self.nv, "NVML_DEVICE_MIG_ENABLE", 1))

    # ---- the host's NVML -----------------------------------------------------------------------------
    def device_count(self) -> int:
        """How many GPUs NVML lists on the host (its indices are 0 .. count - 1). Raises NVML's error."""
        return int(self.nv.nvmlDeviceGetCount())

    def driver_version(self) -> str:
        """The driver's version (``580.65.06``), as text. Raises NVML's error."""
        return _text(self.nv.nvmlSystemGetDriverVersion())

    def cuda_driver_version(self) -> int:
        """The CUDA version the driver supports, as NVML gives it: 1000 x major + 10 x minor (13000 for 13.0).
        Raises NVML's error (FunctionNotFound on a driver without the ``_v2`` call)."""
        return int(self.nv.nvmlSystemGetCudaDriverVersion_v2())

    # ---- readings ------------------------------------------------------------------------------------
    def memory_total_bytes(self) -> int:
        """Device memory in all (bytes). Raises NVML's error."""
        return int(self.nv.nvmlDeviceGetMemoryInfo(self.handle).total)

    def memory_used_bytes(self) -> int:
        """Device memory in use, all processes' (bytes; ``nvmlDeviceGetMemoryInfo``'s ``used``, the v1 call). It
        may include memory the driver or firmware sets aside for itself (nvml.h, ``nvmlMemory_t``: "the driver/GPU
        always sets aside a small amount of memory for bookkeeping"; the headers disagree on whether v2's ``used``
        leaves ``reserved`` out, so the v1 reading is kept): a GPU no process uses reads above zero, and a
        difference of two readings cancels it. Raises NVML's error."""
        return int(self.nv.nvmlDeviceGetMemoryInfo(self.handle).used)

    def utilization_pct(self) -> tuple[float, float]:
        """(GPU, memory) utilisation rates (%) over NVML's last sample period. NotSupported (on MIG-enabled
        GPUs, nvml.h)."""
        util = self.nv.nvmlDeviceGetUtilizationRates(self.handle)
        return float(util.gpu), float(util.memory)

    def sm_clock_mhz(self) -> float:
        """The current SM clock (MHz). NotSupported."""
        return float(self.nv.nvmlDeviceGetClockInfo(self.handle, self.nv.NVML_CLOCK_SM))

    def mem_clock_mhz(self) -> float:
        """The current memory clock (MHz). NotSupported."""
        return float(self.nv.nvmlDeviceGetClockInfo(self.handle, self.nv.NVML_CLOCK_MEM))

    def temperature_c(self) -> float:
        """The GPU's temperature (degC, the GPU sensor's): ``nvmlDeviceGetTemperatureV``, or on a driver or
        ``pynvml`` without it the older ``nvmlDeviceGetTemperature`` (deprecated in nvidia-ml-py 13.615.71, "will be
        removed in CUDA 14.0"), which reads the same sensor. NotSupported."""
        nv, h, sensor = self.nv, self.handle, self.nv.NVML_TEMPERATURE_GPU
        return float(self._newest("temperature", lambda: nv.nvmlDeviceGetTemperatureV(h, sensor),
                                  lambda: nv.nvmlDeviceGetTemperature(h, sensor)))

    def instant_power_mw(self) -> int | None:
        """Board power now (mW), the field ``NVML_FI_DEV_POWER_INSTANT``; None where the pynvml module lacks the
        field's id or NVML returns the field without a value (its ``nvmlReturn`` not success, e.g. NOT_SUPPORTED);
        raises NVML's error when the call itself fails (a driver older than the field)."""
        fi = getattr(self.nv, "NVML_FI_DEV_POWER_INSTANT", None)
        if fi is None:
            return None
        v = self.nv.nvmlDeviceGetFieldValues(self.handle, [fi])[0]
        return v.value.uiVal if int(v.nvmlReturn) == 0 else None

    def power_usage_mw(self) -> int:
        """``nvmlDeviceGetPowerUsage`` (mW): a 1-s average on Ampere (except GA100) and newer, instantaneous on
        GA100 and older (``bench.instruments.telemetry.power_source``). NotSupported (no power sensor)."""
        return self.nv.nvmlDeviceGetPowerUsage(self.handle)

    def energy_mj(self) -> int:
        """The total-energy counter (mJ since the driver loaded; unsigned 64-bit, so it may wrap). NotSupported before
        Volta."""
        return int(self.nv.nvmlDeviceGetTotalEnergyConsumption(self.handle))

    def clocks_event_reasons(self) -> int:
        """The current clock-event reasons (bitmask; ``event_reason_bit`` names the bits).
        ``nvmlDeviceGetCurrentClocksEventReasons`` is the name NVML took in driver R535; R525/R530 (the CUDA 12
        images' minimum driver) export only the older ``nvmlDeviceGetCurrentClocksThrottleReasons``, which returns
        the same bits (nvidia-ml-py 13.615.71 ``pynvml``: ``nvmlClocksThrottleReason*`` and
        ``nvmlClocksEventReason*`` share their values), so a FunctionNotFound switches to it for the rest of this
        object's life; any other error (NotSupported) is raised as it is."""
        nv, h = self.nv, self.handle
        return int(self._newest("clocks_event_reasons", lambda: nv.nvmlDeviceGetCurrentClocksEventReasons(h),
                                lambda: nv.nvmlDeviceGetCurrentClocksThrottleReasons(h)))

    def event_reason_bit(self, reason: str) -> int:
        """The bit of clock-event reason ``reason`` (``SwPowerCap``: ``nvmlClocksEventReasonSwPowerCap``); 0 where
        the pynvml module does not name it."""
        return int(getattr(self.nv, f"nvmlClocksEventReason{reason}", 0))

    def _newest(self, reading: str, new: Callable[[], Any], old: Callable[[], Any]) -> Any:
        """``new()``, NVML's newer call for ``reading``; where the driver or ``pynvml`` lacks it
        (``function_not_found``) ``old()``, for the rest of this object's life. Any other error is raised as it
        is."""
        if reading not in self._old:
            try:
                return new()
            except Exception as e:
                if not function_not_found(self.nv, e):
                    raise
                self._old.add(reading)
        return old()

    def compute_processes(self) -> list[Process]:
        """The compute processes NVML lists on the GPU (inside a container: those of its PID namespace only,
        ``bench.instruments.gpu_state.seen_from``). Raises NVML's error."""
        return [Process(getattr(p, "pid", None), getattr(p, "usedGpuMemory", None))
                for p in self.nv.nvmlDeviceGetComputeRunningProcesses(self.handle)]


def _text(v: Any) -> str:
    """NVML's string as text: nvidia-ml-py 13 decodes its bytes; older versions and fakes may give bytes."""
    return v.decode() if isinstance(v, bytes) else str(v)
