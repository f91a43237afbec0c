"""A fake ``libnvidia-ml.so.1`` under the real ``pynvml`` (nvidia-ml-py 13.615.71): the C functions as pynvml calls
them (``_nvmlGetFunctionPointer`` takes them from its ``nvmlLib``), each filling the ctypes objects pynvml passes, so
that a test runs the pinned library's own wrappers (its structs, ``c_uint`` returns, byte strings, its errors built
from NVML's return codes) between ``bench.instruments.nvml.Gpu`` and a GPU. A function the driver lacks
(``lacks``) is missing from the library, which pynvml turns into ``NVMLError_FunctionNotFound``, as it does for an
old driver's library; a reading a GPU does not offer returns ``NVML_ERROR_NOT_SUPPORTED``.

The other fakes (tests/helpers/fake_nvml.py) stand in for pynvml itself; this one checks what they assume of it.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

import pynvml

OK, NOT_SUPPORTED = pynvml.NVML_SUCCESS, pynvml.NVML_ERROR_NOT_SUPPORTED
#: NVML's texts of its return codes (nvmlErrorString), as pynvml's errors print them.
TEXTS = {pynvml.NVML_ERROR_NOT_SUPPORTED: b"Not Supported", pynvml.NVML_ERROR_FUNCTION_NOT_FOUND: b"Function Not Found",
         pynvml.NVML_ERROR_NOT_FOUND: b"Not Found", pynvml.NVML_ERROR_INVALID_ARGUMENT: b"Invalid Argument",
         pynvml.NVML_ERROR_NO_PERMISSION: b"Insufficient Permissions"}
#: What a driver of the CUDA 12 images' minimum (R525) lacks of what ``Gpu`` calls: the temperature's V call (R555)
#: and the clock-event reasons under their R535 name.
R525_LACKS = ("nvmlDeviceGetTemperatureV", "nvmlDeviceGetCurrentClocksEventReasons")


@dataclass
class Device:
    """One device as the driver reports it; None for a reading it does not offer (NOT_SUPPORTED; for ``procs``
    NO_PERMISSION: nvml.h lists a MIG-enabled GPU's processes through its own handle only to a privileged caller).
    Units as NVML's: mW, mJ, MHz, degC, bytes, percent."""

    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = "GPU-5b3b6e33-1d0c-4b7e-9a61-0123456789ab"
    arch: int = pynvml.NVML_DEVICE_ARCH_HOPPER
    mig_slice: bool = False
    mig_mode: int | None = pynvml.NVML_DEVICE_MIG_DISABLE
    temperature_c: int | None = 41
    power_mw: int | None = 312_456
    instant_mw: int | None = 318_000
    energy_mj: int | None = 9_876_543_210
    sm_mhz: int | None = 1980
    mem_mhz: int | None = 2619
    util: tuple[int, int] | None = (97, 41)
    memory: tuple[int, int] = (85_520_809_984, 1_048_576_000)  # total, used
    reasons: int | None = 0x4  # SwPowerCap
    procs: list[tuple[int, int | None]] | None = field(default_factory=list)  # (pid, bytes; None: NOT_AVAILABLE)


class FakeLibNvml:
    """The library of a driver ``driver`` (CUDA ``cuda``: 1000 x major + 10 x minor) with ``devices`` in NVML's
    index order, lacking the functions named in ``lacks``. ``calls`` lists the functions pynvml took from it."""

    def __init__(self, devices: list[Device], driver: str = "580.65.06", cuda: int = 13000, lacks=()):
        self.devices, self.driver, self.cuda, self.lacks = devices, driver, cuda, frozenset(lacks)
        self.calls: list[str] = []
        self._handles = [pynvml.struct_c_nvmlDevice_t() for _ in devices]
        # pynvml sets ``restype`` on this one: a plain function takes the attribute, a bound method would not
        self.nvmlErrorString = lambda code: TEXTS.get(code, b"Unknown Error")

    def __getattribute__(self, name: str):
        if name.startswith("nvml"):
            if name in object.__getattribute__(self, "lacks"):
                raise AttributeError(name)  # pynvml: NVMLError_FunctionNotFound
            object.__getattribute__(self, "calls").append(name)
        return object.__getattribute__(self, name)

    def install(self, monkeypatch) -> None:
        """Make the real pynvml use this library (as if ``nvmlInit`` had loaded it), with its caches emptied."""
        monkeypatch.setattr(pynvml, "nvmlLib", self)
        monkeypatch.setattr(pynvml, "_nvmlGetFunctionPointer_cache", {})
        monkeypatch.setattr(pynvml.NVMLError, "_errcode_to_string", {})

    def _dev(self, handle) -> Device:
        address = ctypes.addressof(handle.contents)
        return self.devices[[ctypes.addressof(h) for h in self._handles].index(address)]

    def _handle(self, i: int, out) -> int:
        out._obj.contents = self._handles[i]
        return OK

    @staticmethod
    def _put(ref, value) -> int:
        if value is None:
            return NOT_SUPPORTED
        ref._obj.value = value
        return OK

    # ---- the library ---------------------------------------------------------------------------------
    def nvmlInitWithFlags(self, flags):
        return OK

    def nvmlShutdown(self):
        return OK

    def nvmlDeviceGetCount_v2(self, count):
        return self._put(count, len(self.devices))

    def nvmlDeviceGetHandleByIndex_v2(self, index, out):
        return self._handle(index.value, out) if index.value < len(self.devices) else pynvml.NVML_ERROR_INVALID_ARGUMENT

    def nvmlDeviceGetHandleByUUID(self, uuid, out):
        uuids = [d.uuid.encode() for d in self.devices]
        return self._handle(uuids.index(uuid.value), out) if uuid.value in uuids else pynvml.NVML_ERROR_NOT_FOUND

    def nvmlDeviceGetName(self, handle, buf, size):
        buf.value = self._dev(handle).name.encode()
        return OK

    def nvmlDeviceGetUUID(self, handle, buf, size):
        buf.value = self._dev(handle).uuid.encode()
        return OK

    def nvmlSystemGetDriverVersion(self, buf, size):
        buf.value = self.driver.encode()
        return OK

    def nvmlSystemGetCudaDriverVersion_v2(self, version):
        return self._put(version, self.cuda)

    def nvmlDeviceGetArchitecture(self, handle, arch):
        return self._put(arch, self._dev(handle).arch)

    def nvmlDeviceIsMigDeviceHandle(self, handle, answer):
        return self._put(answer, int(self._dev(handle).mig_slice))

    def nvmlDeviceGetMigMode(self, handle, current, pending):
        mode = self._dev(handle).mig_mode
        self._put(pending, mode)
        return self._put(current, mode)

    def nvmlDeviceGetMemoryInfo(self, handle, memory):
        memory._obj.total, memory._obj.used = self._dev(handle).memory
        memory._obj.free = memory._obj.total - memory._obj.used
        return OK

    def nvmlDeviceGetUtilizationRates(self, handle, util):
        rates = self._dev(handle).util
        if rates is None:
            return NOT_SUPPORTED
        util._obj.gpu, util._obj.memory = rates
        return OK

    def nvmlDeviceGetClockInfo(self, handle, which, mhz):
        d = self._dev(handle)
        return self._put(mhz, d.sm_mhz if which.value == pynvml.NVML_CLOCK_SM else d.mem_mhz)

    def nvmlDeviceGetTemperatureV(self, handle, temp):
        assert temp._obj.version == pynvml.nvmlTemperature_v1 and temp._obj.sensorType == pynvml.NVML_TEMPERATURE_GPU
        celsius = self._dev(handle).temperature_c
        if celsius is None:
            return NOT_SUPPORTED
        temp._obj.temperature = celsius
        return OK

    def nvmlDeviceGetTemperature(self, handle, sensor, temp):
        return self._put(temp, self._dev(handle).temperature_c)

    def nvmlDeviceGetFieldValues(self, handle, count, values):
        for v in values._obj[:count.value]:
            mw = self._dev(handle).instant_mw if v.fieldId == pynvml.NVML_FI_DEV_POWER_INSTANT else None
            v.valueType, v.nvmlReturn = pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, NOT_SUPPORTED if mw is None else OK
            v.value.uiVal = mw or 0
        return OK

    def nvmlDeviceGetPowerUsage(self, handle, mw):
        return self._put(mw, self._dev(handle).power_mw)

    def nvmlDeviceGetTotalEnergyConsumption(self, handle, mj):
        return self._put(mj, self._dev(handle).energy_mj)

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle, reasons):
        return self._put(reasons, self._dev(handle).reasons)

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle, reasons):
        return self._put(reasons, self._dev(handle).reasons)

    def nvmlDeviceGetComputeRunningProcesses_v3(self, handle, count, procs):
        listed = self._dev(handle).procs
        if listed is None:
            return pynvml.NVML_ERROR_NO_PERMISSION
        if procs is None:  # pynvml asks the count first
            count._obj.value = len(listed)
            return pynvml.NVML_ERROR_INSUFFICIENT_SIZE if listed else OK
        for i, (pid, used) in enumerate(listed):
            procs[i].pid = pid
            procs[i].usedGpuMemory = pynvml.NVML_VALUE_NOT_AVAILABLE_ulonglong.value if used is None else used
        count._obj.value = len(listed)
        return OK
