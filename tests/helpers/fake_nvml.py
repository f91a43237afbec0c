"""Fake ``pynvml`` modules: one GPU on a controllable clock (FakeNvml, for the telemetry sampler), one GPU between
cells (GpuBetweenCells: its temperatures, compute processes and UUID, for the busy check, the cooldown and a resume)
and a host of two (two_gpu_pynvml, for device selection)."""

from __future__ import annotations

import types

from bench.instruments.telemetry.energy import ENERGY_COUNTER_MODULUS
from bench.instruments.telemetry.sampler import Telemetry


class NotSupported(Exception):
    """What the fake raises for a metric the GPU does not report (NVML's NVMLError_NotSupported)."""


class FakeClock:
    """A clock in seconds that moves only when told to (``advance``)."""

    def __init__(self):
        self.t = 100.0

    def __call__(self) -> float:
        return self.t

    def advance(self, dt: float) -> None:
        self.t += dt


class GpuBetweenCells(types.SimpleNamespace):
    """A pynvml stand-in whose GPU is ``uuid``, at ``temps`` (one per read, the last repeated), with the compute
    processes ``procs`` ((pid, bytes of GPU memory) pairs)."""

    NVML_TEMPERATURE_GPU = 0

    def __init__(self, temps=(40,), procs=(), uuid="GPU-a"):
        super().__init__(temps=list(temps), procs=list(procs), uuid=uuid)

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetUUID(self, h):
        return self.uuid.encode()

    def nvmlDeviceGetTemperature(self, h, sensor):
        return self.temps.pop(0) if len(self.temps) > 1 else self.temps[0]

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return [types.SimpleNamespace(pid=p, usedGpuMemory=m) for p, m in self.procs]


class FakeNvml(types.SimpleNamespace):
    """Power is constant ``watts``; the energy counter integrates it from ``start_mj`` (optionally stalled), and
    with ``update_s`` moves only every ``update_s`` seconds, as the driver's does (~20-100 ms)."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 0, 1, 0
    NVML_FI_DEV_POWER_INSTANT = 186
    nvmlClocksEventReasonGpuIdle = 0x1
    nvmlClocksEventReasonSwPowerCap = 0x4
    nvmlClocksEventReasonHwSlowdown = 0x8
    nvmlClocksEventReasonHwThermalSlowdown = 0x40
    nvmlClocksEventReasonHwPowerBrakeSlowdown = 0x80
    nvmlClocksEventReasonSwThermalSlowdown = 0x20

    def __init__(self, clock: FakeClock, watts: float = 200.0, start_mj: int = 0, unsupported=(),
                 stall: bool = False, reasons: int = 0, instant: bool = True, name: bytes = b"Fake H100",
                 arch: int | None = 9, update_s: float = 0.0):
        super().__init__()
        self.update_s = update_s
        self.clock, self.watts, self.start_mj, self.t0 = clock, watts, start_mj, clock()
        self.unsupported, self.stall, self.reasons, self.instant = set(unsupported), stall, reasons, instant
        self.name, self.arch = name, arch

    def _check(self, metric):
        if metric in self.unsupported:
            raise NotSupported("Not Supported")

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetHandleByIndex(self, i):
        return ("h", i)

    def nvmlDeviceGetHandleByUUID(self, u):
        return ("h", u)

    def nvmlDeviceGetName(self, h):
        return self.name

    def nvmlDeviceGetArchitecture(self, h):
        if self.arch is None:  # an old driver
            raise NotSupported("Function Not Found")
        return self.arch

    def nvmlDeviceGetUtilizationRates(self, h):
        self._check("util")
        return types.SimpleNamespace(gpu=90, memory=40)

    def nvmlDeviceGetMemoryInfo(self, h):
        return types.SimpleNamespace(used=int(1e9 + 1e6 * (self.clock() - self.t0)), total=int(80e9))

    def nvmlDeviceGetFieldValues(self, h, ids):
        ret = 0 if self.instant else 3
        return [types.SimpleNamespace(nvmlReturn=ret, value=types.SimpleNamespace(uiVal=int(self.watts * 1000)))]

    def nvmlDeviceGetPowerUsage(self, h):
        self._check("power")
        return int(self.watts * 1000)

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        self._check("energy")
        if self.stall:
            return self.start_mj
        elapsed = self.clock() - self.t0
        if self.update_s:
            elapsed = int(round(elapsed / self.update_s, 9)) * self.update_s  # the last update before now
        return (self.start_mj + int(self.watts * elapsed * 1000)) % ENERGY_COUNTER_MODULUS

    def nvmlDeviceGetClockInfo(self, h, which):
        self._check("clocks")
        return 1980 if which == 0 else 2619

    def nvmlDeviceGetTemperature(self, h, sensor):
        return 60

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        self._check("reasons")
        return self.reasons


def make(clock, **kw) -> Telemetry:
    """A foreground sampler of GPU 0 on ``FakeNvml(clock, **kw)``: a sample every 0.5 s of ``clock``, whose
    sleep advances the clock."""
    nv = FakeNvml(clock, **kw)
    return Telemetry(nv, index=0, interval_s=0.5, clock=clock, sleep=lambda s: clock.advance(s), background=False)


def two_gpu_pynvml(names=("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"), uuids=("GPU-aaa", "GPU-bbb")):
    """A fake pynvml holding two GPUs (index -> name, UUID), as nvidia-ml-py 13 answers (str, not bytes)."""

    def handle(i):
        if not 0 <= i < len(names):
            raise RuntimeError("Invalid Argument")
        return i

    def by_uuid(u):
        if u not in uuids:
            raise RuntimeError("Not Found")
        return uuids.index(u)

    def mig(h):
        raise RuntimeError("Not Supported")

    return types.SimpleNamespace(
        NVML_DEVICE_MIG_ENABLE=1, nvmlInit=lambda: None, nvmlShutdown=lambda: None,
        nvmlDeviceGetHandleByIndex=handle, nvmlDeviceGetHandleByUUID=by_uuid,
        nvmlSystemGetCudaDriverVersion_v2=lambda: 13000, nvmlDeviceGetCount=lambda: len(names),
        nvmlDeviceGetName=lambda h: names[h], nvmlDeviceGetUUID=lambda h: uuids[h],
        nvmlSystemGetDriverVersion=lambda: "580.65.06",
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(total=80 * 2**30), nvmlDeviceGetMigMode=mig)
