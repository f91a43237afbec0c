"""The GPU path through the pinned pynvml's own wrappers (nvidia-ml-py 13.615.71) on a fake driver library
(tests/helpers/fake_libnvml.py): what the record's ``env.gpu``, the telemetry and the GPU-between-cells check hold on
an H100, an old driver, a MIG slice and a GPU without MIG, in NVML's units converted once."""

from __future__ import annotations

import time

import pynvml
import pytest

from bench.instruments import environment, gpu_state
from bench.instruments.nvml import Gpu, init
from bench.instruments.telemetry.sampler import NullTelemetry, Telemetry, for_device
from bench.models.flops import MIG_PEAK_REASON, peak_flops
from tests.helpers.fake_libnvml import R525_LACKS, Device, FakeLibNvml

MIG_UUID = "MIG-2f4e1c3a-7b5d-5e6f-8a9b-0c1d2e3f4a5b"


def driver(monkeypatch, *devices: Device, **kw) -> FakeLibNvml:
    lib = FakeLibNvml(list(devices) or [Device()], **kw)
    lib.install(monkeypatch)
    return lib


def test_an_h100s_env_gpu_holds_what_the_driver_reports(monkeypatch):
    driver(monkeypatch)
    info = environment.gpu_info({})
    assert info == {"available": True, "count": 1, "nvml_device": 0, "name": "NVIDIA H100 80GB HBM3",
                    "uuid": "GPU-5b3b6e33-1d0c-4b7e-9a61-0123456789ab", "driver": "580.65.06", "cuda_driver": "13.0",
                    "memory_total_bytes": 85_520_809_984, "mig_mode": False}


def test_an_h100_samples_in_watts_megahertz_and_degrees_from_a_background_thread(monkeypatch):
    """``for_device`` on a GPU: the sampler's own thread reads every metric through pynvml, the instant power field
    (mW) as W, and nothing is reported unsupported."""
    lib = driver(monkeypatch)
    tel = for_device("gpu", interval_s=0.005)
    assert isinstance(tel, Telemetry) and tel.power_source == "instant" and tel.arch == pynvml.NVML_DEVICE_ARCH_HOPPER
    tel.mark()
    time.sleep(0.1)
    lib.devices[0].energy_mj += 31_800  # the counter moves by 31.8 J within the epoch
    tel.end_epoch()
    tel.stop()
    assert tel._thread is None and len(tel.samples) >= 5
    s = tel.summary(steps_per_epoch=10, examples_per_epoch=1280)
    assert s["available"] and s["unsupported"] == {} and s["gpu_name"] == "NVIDIA H100 80GB HBM3"
    assert s["power_w"]["mean"] == pytest.approx(318.0) and s["sm_clock_mhz"]["max"] == 1980.0
    assert s["mem_clock_mhz"]["max"] == 2619.0 and s["temperature_c"]["max"] == 41.0
    assert s["gpu_util_pct"]["mean"] == 97.0 and s["memory_used_peak_bytes"] == 1_048_576_000
    assert s["power_capped_fraction"] == 1.0 and s["throttled"] is False and s["throttle_reasons"] == ["SwPowerCap"]
    assert s["energy_counter_j"] == pytest.approx(31.8) and s["energy_method"] == "counter"


def test_a_driver_without_the_newer_calls_reads_the_same_through_the_older_ones(monkeypatch):
    """A R525 driver's library lacks ``nvmlDeviceGetTemperatureV`` and ``nvmlDeviceGetCurrentClocksEventReasons``:
    pynvml raises its FunctionNotFound, and the temperature and clock-event reasons come from the older calls."""
    lib = driver(monkeypatch, driver="525.147.05", cuda=12000, lacks=R525_LACKS)
    tel = for_device("gpu", background=False)
    sample = tel.sample_once()
    assert sample.temperature_c == 41.0 and sample.clocks_event_reasons == 0x4 and tel.unsupported == {}
    assert {"nvmlDeviceGetTemperature", "nvmlDeviceGetCurrentClocksThrottleReasons"} <= set(lib.calls)
    assert environment.gpu_info({})["cuda_driver"] == "12.0"


def test_a_mig_slice_is_known_and_its_missing_readings_say_why(monkeypatch):
    """A MIG UUID in CUDA_VISIBLE_DEVICES: the handle is the slice's (``nvmlDeviceIsMigDeviceHandle``, a ``c_uint``
    in pynvml), its utilisation is NotSupported (nvml.h) and recorded null with NVML's reason, and MFU has no peak."""
    slice_ = Device(name="NVIDIA A100-SXM4-40GB MIG 1g.5gb", uuid=MIG_UUID, arch=pynvml.NVML_DEVICE_ARCH_AMPERE,
                    mig_slice=True, mig_mode=None, util=None)
    driver(monkeypatch, slice_)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", MIG_UUID)
    info = environment.gpu_info()
    assert info["nvml_device"] == MIG_UUID and info["mig_mode"] is True
    tel = for_device("gpu", background=False)
    sample = tel.sample_once()
    assert sample.gpu_util_pct is None and sample.mem_util_pct is None
    assert tel.unsupported == {"utilization": "NVMLError_NotSupported: Not Supported"}
    assert peak_flops(info["name"], "bfloat16", tf32=False) == (None, MIG_PEAK_REASON)


def test_a_gpu_without_mig_records_mig_mode_unknown_and_the_averaged_power_note(monkeypatch):
    """An L4 (Ada): ``nvmlDeviceGetMigMode`` NotSupported is ``mig_mode`` null, not False; without the instant
    power field's value the sampler reads ``nvmlDeviceGetPowerUsage``, a 1-s average on Ada, and says so."""
    driver(monkeypatch, Device(name="NVIDIA L4", arch=pynvml.NVML_DEVICE_ARCH_ADA, mig_mode=None, instant_mw=None))
    assert environment.gpu_info({})["mig_mode"] is None
    tel = for_device("gpu", background=False)
    assert tel.power_source == "average" and tel.sample_once().power_w == pytest.approx(312.456)
    tel.mark()
    tel.stop()
    assert any("a 1-s average on NVIDIA L4" in n for n in tel.summary(1, 1)["notes"])


def test_a_driver_without_field_values_reads_the_averaged_power(monkeypatch):
    """A library without ``nvmlDeviceGetFieldValues``: the instant power's probe gets pynvml's FunctionNotFound and
    the sampler reads ``nvmlDeviceGetPowerUsage`` (mW) for the whole cell, never a mix."""
    driver(monkeypatch, lacks=("nvmlDeviceGetFieldValues",))
    tel = for_device("gpu", background=False)
    assert tel.power_source == "average" and tel.sample_once().power_w == pytest.approx(312.456)
    assert tel.unsupported == {}

def test_a_gpu_uuid_nvml_does_not_know_leaves_no_telemetry_and_says_why(monkeypatch):
    lib = driver(monkeypatch)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-00000000-0000-0000-0000-000000000000")
    tel = for_device("gpu")
    assert isinstance(tel, NullTelemetry) and tel.reason == "NVML device query failed: NVMLError_NotFound: Not Found"
    assert "nvmlShutdown" in lib.calls
    assert environment.gpu_info()["reason"] == "NVML query failed: NVMLError_NotFound: Not Found"


def test_other_processes_and_the_uuid_between_cells(monkeypatch):
    """``nvmlDeviceGetComputeRunningProcesses`` through pynvml's two calls (count, then the list); a process whose
    memory NVML does not give (``NVML_VALUE_NOT_AVAILABLE``, None in pynvml) is counted, its bytes left out."""
    driver(monkeypatch, Device(procs=[(4242, 3 * 2**30), (77, None)]))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    state = gpu_state.snapshot()
    assert state["processes"] == 2 and state["process_memory_bytes"] == 3 * 2**30 and state["temperature_c"] == 41.0
    assert "2 other compute process(es)" in gpu_state.busy_note(state)
    assert gpu_state.gpu_uuid() == "GPU-5b3b6e33-1d0c-4b7e-9a61-0123456789ab"


def test_no_process_on_the_gpu_is_an_empty_list(monkeypatch):
    driver(monkeypatch)
    assert Gpu(init(), 0).compute_processes() == []
    assert gpu_state.busy_note(gpu_state.snapshot()) is None


def test_a_host_of_two_gpu_models_numbered_by_index_gets_the_device_order_note(monkeypatch):
    driver(monkeypatch, Device(), Device(name="NVIDIA L4", uuid="GPU-11111111-2222-3333-4444-555555555555"))
    info = environment.gpu_info({"CUDA_VISIBLE_DEVICES": "1"})
    assert info["name"] == "NVIDIA L4" and info["count"] == 2 and "CUDA_DEVICE_ORDER=PCI_BUS_ID" in (
        info["nvml_device_note"])
    assert "nvml_device_note" not in environment.gpu_info({"CUDA_VISIBLE_DEVICES": "1",
                                                           "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})


def test_a_process_list_nvml_refuses_keeps_the_temperature_and_the_cooldown(monkeypatch):
    """A MIG-enabled GPU's own handle lists processes only to a privileged caller (nvml.h,
    ``nvmlDeviceGetComputeRunningProcesses``: NO_PERMISSION otherwise). That error threw the temperature away with
    it: ``gpu_before`` said NVML failed and the cooldown recorded "no GPU temperature" though NVML read 41 degC."""
    driver(monkeypatch, Device(name="NVIDIA A100-SXM4-80GB", mig_mode=pynvml.NVML_DEVICE_MIG_ENABLE, procs=None))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    state = gpu_state.snapshot()
    assert state["available"] is True and state["temperature_c"] == 41.0 and state["processes"] is None
    assert state["reason"] == "NVML query failed: processes: NVMLError_NoPermission: Insufficient Permissions"
    assert gpu_state.busy_note(state) is None
    block = gpu_state.Cooldown(60, sleep=lambda s: None).wait()
    assert block["idle_c"] == 41.0 and block["reached"] is True and "reason" not in block


def test_a_temperature_nvml_does_not_give_keeps_the_process_count(monkeypatch):
    """The converse: a GPU without the temperature reading still has its other processes counted and noted."""
    driver(monkeypatch, Device(temperature_c=None, procs=[(4242, 2**30)]))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    state = gpu_state.snapshot()
    assert state["processes"] == 1 and state["temperature_c"] is None
    assert state["reason"] == "NVML query failed: temperature: NVMLError_NotSupported: Not Supported"
    assert "1 other compute process(es)" in gpu_state.busy_note(state)


def test_neither_reading_is_an_unavailable_gpu_state(monkeypatch):
    driver(monkeypatch, Device(temperature_c=None, procs=None))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    state = gpu_state.snapshot()
    assert state == {"available": False, "reason": "NVML query failed: processes: NVMLError_NoPermission: "
                     "Insufficient Permissions; temperature: NVMLError_NotSupported: Not Supported"}


def test_a_cpu_cell_on_a_gpu_host_records_no_gpu(monkeypatch):
    """A CPU cell's process runs with an empty CUDA_VISIBLE_DEVICES (``cellenv.cell_env``): CUDA shows it no GPU.
    ``nvml_index`` read the empty entry as unset, GPU 0, so on a GPU host the CPU cell's ``env.gpu`` named GPU 0 as
    its GPU, and its repeats across a preemption to another GPU failed as 'ran on 2 GPUs'."""
    from bench.core.stacks import STACKS
    from bench.results.repeats import aggregate
    from bench.results.schema import Env, Metrics, Record
    from bench.run.cellenv import cell_env

    lib = driver(monkeypatch)
    env = cell_env(STACKS["pytorch"], "cpu")
    assert environment.gpu_info(env) == {"available": False,
                                         "reason": "no GPU visible to the process: CUDA_VISIBLE_DEVICES is empty"}
    first = environment.gpu_info(env)
    lib.devices[0].uuid = "GPU-ffffffff-1d0c-4b7e-9a61-0123456789ab"  # the resumed VM's GPU
    records = [Record(stack="pytorch", device="cpu", status="ok", repeat=i + 1, env=Env(gpu=gpu),
                      metrics=Metrics(ms_per_step_mean=10.0 + i)) for i, gpu in enumerate((first,
                                                                                        environment.gpu_info(env)))]
    assert aggregate(records).status == "ok"
    assert environment.gpu_info({**env, "CUDA_VISIBLE_DEVICES": "0"})["available"] is True


@pytest.mark.parametrize("gpu", [Device(), Device(name="NVIDIA A100-SXM4-40GB MIG 1g.5gb", uuid=MIG_UUID, util=None,
                                                  mig_slice=True, instant_mw=None, temperature_c=None, procs=None)])
def test_what_the_gpu_path_writes_is_a_valid_record(monkeypatch, gpu):
    """The blocks an H100 and a MIG slice give (``env.gpu``, ``telemetry`` with an idle reading and two epochs,
    ``gpu_before``) validate as a record's, nulls and reasons included, so a real GPU's readings are not lost to
    the record's strict validation."""
    from bench.results.schema import Record
    from bench.results.schema.validate import problems

    driver(monkeypatch, gpu)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", gpu.uuid)
    tel = for_device("gpu", interval_s=0.01)
    tel.measure_idle(0.03)
    for _ in range(2):
        tel.mark()
        time.sleep(0.03)
        tel.end_epoch()
    tel.stop()
    rec = {"stack": "pytorch", "device": "gpu", "status": "ok", "telemetry": tel.summary(10, 100),
           "env": {"gpu": environment.gpu_info()}, "gpu_before": gpu_state.snapshot()}
    assert problems(Record.model_validate(rec).model_dump(exclude_unset=True)) == []
    assert rec["telemetry"]["available"] and rec["env"]["gpu"]["available"]
