"""The NVML sampler against a fake ``pynvml``: controllable clock, NotSupported metrics, counters that
wrap, stall or reset, throttle reasons, and the null-with-reason paths."""

from __future__ import annotations

import pytest

from bench.instruments import nvml
from bench.instruments.telemetry import samples
from bench.instruments.telemetry.energy import ENERGY_COUNTER_MODULUS, counter_energy_j
from bench.instruments.telemetry.sampler import Telemetry, for_device
from bench.results.schema import Metrics, Record
from bench.results.schema import Telemetry as TelemetryBlock
from bench.run.scenarios import finish_telemetry
from tests.helpers.fake_nvml import FakeClock, FakeNvml, make


def drive(tel: Telemetry, clock: FakeClock, epochs: int = 3, epoch_s: float = 4.0, dt: float = 0.5) -> None:
    """Run the window protocol by hand: a mark per epoch, samples every ``dt``, then stop."""
    tel.measure_idle(1.0)
    for _ in range(epochs):
        tel.mark()
        for _ in range(int(epoch_s / dt)):
            clock.advance(dt)
            tel.sample_once()
    tel.stop()


def test_energy_from_counter_matches_power_and_derived_figures():
    clock = FakeClock()
    tel = make(clock, watts=200.0)
    drive(tel, clock, epochs=3, epoch_s=4.0)
    s = tel.summary(steps_per_epoch=100, examples_per_epoch=25600)
    assert s["available"] and s["gpu_name"] == "Fake H100"
    assert s["window"] == "epochs 2..N" and s["window_s"] == pytest.approx(8.0)
    assert s["energy_method"] == "counter"
    assert s["energy_j"] == pytest.approx(1600.0, rel=1e-3)  # 200 W x 8 s of steady epochs
    assert s["energy_integrated_j"] == pytest.approx(1600.0, rel=1e-3)
    assert s["energy_counter_vs_integrated"] == pytest.approx(1.0, rel=1e-3)
    assert s["j_per_epoch"] == pytest.approx(800.0, rel=1e-3)
    assert s["j_per_step"] == pytest.approx(8.0, rel=1e-3)
    assert s["examples_per_j"] == pytest.approx(32.0, rel=1e-3)
    assert s["idle_power_w"] == pytest.approx(200.0)
    assert s["power_w"]["mean"] == pytest.approx(200.0) and s["power_source"] == "instant"
    assert s["gpu_util_pct"]["max"] == 90 and s["sm_clock_mhz"]["p50"] == 1980
    assert s["memory_used_peak_bytes"] > 1e9
    assert s["throttled"] is False and s["unsupported"] == {}


def test_counter_that_wraps_is_unwrapped():
    clock = FakeClock()
    # 1 s idle, epoch 1 from 1 s to 6 s, epoch 2 (the steady window) from 6 s to 11 s; wrap at 8 s
    tel = make(clock, watts=100.0, start_mj=ENERGY_COUNTER_MODULUS - 800_000)
    drive(tel, clock, epochs=2, epoch_s=5.0)
    s = tel.summary(10, 100)
    assert s["energy_method"] == "counter"
    assert "wrapped" in s["energy_note"]
    assert s["energy_j"] == pytest.approx(500.0, rel=1e-3)
    assert s["energy_per_epoch_j"] == pytest.approx([500.0, 500.0], rel=1e-3)


def test_counter_that_stalls_falls_back_to_integrated_power_with_reason():
    clock = FakeClock()
    tel = make(clock, watts=150.0, stall=True)
    drive(tel, clock, epochs=2, epoch_s=4.0)
    s = tel.summary(10, 100)
    assert s["energy_counter_j"] is None
    assert "stalled" in s["energy_note"]
    assert s["energy_method"] == "integrated_power"
    assert s["energy_j"] == pytest.approx(600.0, rel=1e-3)


def test_counter_reset_is_not_taken_as_energy():
    j, note = counter_energy_j([(0.0, 5_000_000), (1.0, 1_000)])
    assert j is None and "reset" in note


def test_not_supported_metrics_are_null_with_reason_and_cell_goes_on():
    clock = FakeClock()
    tel = make(clock, unsupported={"energy", "util", "reasons"})
    drive(tel, clock, epochs=2)
    s = tel.summary(10, 100)
    assert s["available"]
    assert s["gpu_util_pct"] == {"mean": None, "p50": None, "max": None}
    assert set(s["unsupported"]) == {"energy", "utilization", "clocks_event_reasons"}
    assert "Not Supported" in s["unsupported"]["energy"]
    assert s["energy_method"] == "integrated_power" and s["energy_j"] == pytest.approx(800.0, rel=1e-3)
    assert s["throttled"] is None


def test_no_power_and_no_energy_gives_null_energy():
    clock = FakeClock()
    tel = make(clock, unsupported={"energy", "power"}, instant=False)
    drive(tel, clock, epochs=2)
    s = tel.summary(10, 100)
    assert s["energy_j"] is None and s["energy_method"] is None and s["j_per_step"] is None
    assert s["idle_power_w"] is None and "power" in s["unsupported"]
    assert s["power_source"] == "average"



class InstantGaps(FakeNvml):
    """The instant power field comes back without a value on every ``gap``-th read (after the probe), and the
    averaged reading says something else (``average_w``): a sample must never take it in the instant's place."""

    gap, average_w = 3, 999.0

    def __init__(self, clock, **kw):
        super().__init__(clock, **kw)
        self.reads = 0

    def nvmlDeviceGetFieldValues(self, h, ids):
        v = super().nvmlDeviceGetFieldValues(h, ids)
        self.reads += 1
        if self.reads > 1 and self.reads % self.gap == 0:
            v[0].nvmlReturn = 3  # NVML_ERROR_NOT_SUPPORTED for this read only
        return v

    def nvmlDeviceGetPowerUsage(self, h):
        return int(self.average_w * 1000)


def test_an_instant_power_reading_without_a_value_is_a_gap_counted_in_the_notes_never_the_averaged_reading():
    clock = FakeClock()
    nv = InstantGaps(clock, watts=200.0)
    tel = Telemetry(nv, index=0, interval_s=0.5, clock=clock, sleep=lambda s: clock.advance(s), background=False)
    drive(tel, clock, epochs=3, epoch_s=4.0)
    s = tel.summary(steps_per_epoch=100, examples_per_epoch=25600)
    assert s["power_source"] == "instant" and tel.instant_missed > 0
    assert s["power_w"]["max"] == pytest.approx(200.0) and s["idle_power_w"] == pytest.approx(200.0)
    assert s["energy_integrated_j"] == pytest.approx(1600.0, rel=1e-3)  # flat power: the gaps change nothing
    assert tel.instant_reads == nv.reads - 1  # the probe's read is not a sample's
    used = tel.intervals()[1:]  # the window: epochs 2..N
    window = [x for x in tel.samples if any(a[0] <= x.t <= b[0] for a, b in used)]
    missed = sum(x.power_w is None for x in window)
    assert 0 < missed < len(window) == s["samples"]
    note = (f"{missed} of the window's {len(window)} power samples ({tel.instant_missed} of {tel.instant_reads} "
            "readings in all, idle included)")
    assert any(n.startswith(note) for n in s["notes"]), s["notes"]
    assert "power" not in s["unsupported"]

def test_a_window_without_power_or_energy_is_a_record_telemetry_block_with_null_epochs():
    """A GPU whose power NVML does not read (a MIG slice): each epoch's J is null, and the cell's record takes the
    block as it is (a measured cell stays ok, its energy null), written and read back strictly."""
    clock = FakeClock()
    tel = make(clock, unsupported={"energy", "power"}, instant=False)
    drive(tel, clock, epochs=3)
    s = tel.summary(10, 100)
    assert s["energy_per_epoch_j"] == [None, None, None]
    rec = Record.model_construct(metrics=Metrics(), notes=[])
    finish_telemetry(rec, s)
    assert rec.telemetry is not None and rec.telemetry.energy_per_epoch_j == [None, None, None]
    assert rec.metrics is not None and rec.metrics.j_per_epoch is None
    back = TelemetryBlock.model_validate_json(rec.telemetry.model_dump_json(exclude_unset=True), strict=True)
    assert back.energy_per_epoch_j == [None, None, None]


@pytest.mark.parametrize("name, arch, expected", [
    (b"NVIDIA A100-SXM4-80GB", 7, "instantaneous on NVIDIA A100-SXM4-80GB"),  # GA100: Ampere, yet instantaneous
    (b"NVIDIA A30", 7, "instantaneous on NVIDIA A30"),
    (b"NVIDIA H100 80GB HBM3", 9, "a 1-s average on NVIDIA H100 80GB HBM3"),
    (b"NVIDIA A10G", 7, "a 1-s average on NVIDIA A10G"),                     # GA102
    (b"NVIDIA RTX A3000 Laptop GPU", 7, "a 1-s average"),                    # GA104, not an A30
    (b"Tesla V100-SXM2-16GB", 5, "instantaneous on Tesla V100-SXM2-16GB"),
    (b"NVIDIA A100-PCIE-40GB", None, "instantaneous"),                       # no architecture: told by name
    (b"NVIDIA H100 PCIe", None, "the architecture of NVIDIA H100 PCIe is unknown"),
])
def test_the_averaged_power_reading_is_described_per_gpu(name, arch, expected):
    """nvml.h: nvmlDeviceGetPowerUsage is a 1-s average on Ampere (except GA100) and newer, instantaneous on GA100
    and older. Without NVML_FI_DEV_POWER_INSTANT, the window's note says which this GPU gave."""
    clock = FakeClock()
    tel = make(clock, instant=False, name=name, arch=arch)
    drive(tel, clock, epochs=2)
    s = tel.summary(10, 100)
    assert s["power_source"] == "average"
    [note] = [n for n in s["notes"] if "nvmlDeviceGetPowerUsage" in n]
    assert expected in note
    if expected.startswith("instantaneous"):
        assert "average" not in note
    elif expected.startswith("a 1-s average"):
        assert "instantaneous" not in note
    clock = FakeClock()
    instant = make(clock, name=name, arch=arch)  # NVML_FI_DEV_POWER_INSTANT offered: no note
    drive(instant, clock, epochs=2)
    assert not any("power" in n for n in instant.summary(10, 100)["notes"])


def test_a_power_cap_is_reported_apart_from_throttling():
    """SwPowerCap is a loaded A100/H100's normal state: its own share, not a throttling flag."""
    clock = FakeClock()
    tel = make(clock, reasons=FakeNvml.nvmlClocksEventReasonSwPowerCap | FakeNvml.nvmlClocksEventReasonGpuIdle)
    drive(tel, clock, epochs=2)
    s = tel.summary(10, 100)
    assert s["throttled"] is False and s["throttle_reasons"] == ["SwPowerCap"]
    assert s["throttle_fraction"] == 0.0 and s["power_capped_fraction"] == pytest.approx(1.0)


def test_thermal_and_hardware_reasons_flag_the_window():
    clock = FakeClock()
    reasons = FakeNvml.nvmlClocksEventReasonSwThermalSlowdown | FakeNvml.nvmlClocksEventReasonSwPowerCap
    tel = make(clock, reasons=reasons)
    drive(tel, clock, epochs=2)
    s = tel.summary(10, 100)
    assert s["throttled"] is True and s["throttle_reasons"] == ["SwPowerCap", "SwThermalSlowdown"]
    assert s["throttle_fraction"] == pytest.approx(1.0) and s["power_capped_fraction"] == pytest.approx(1.0)


class FunctionNotFound(Exception):
    """pynvml's NVMLError_FunctionNotFound: the driver's NVML does not export the symbol."""

    value = 13  # NVML_ERROR_FUNCTION_NOT_FOUND


class R525Nvml(FakeNvml):
    """An R525/R530 driver: no ``nvmlDeviceGetCurrentClocksEventReasons`` (the name NVML took in R535), only the
    older ``nvmlDeviceGetCurrentClocksThrottleReasons`` with the same bits."""

    NVML_ERROR_FUNCTION_NOT_FOUND = 13

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.event_calls = self.throttle_calls = 0

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        self.event_calls += 1
        raise FunctionNotFound("Function Not Found")

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h):
        self.throttle_calls += 1
        return self.reasons


def test_an_old_driver_gives_the_throttle_reasons_through_the_older_name():
    """CUDA 12 images run on R525: the clock-event reasons come from nvmlDeviceGetCurrentClocksThrottleReasons,
    so throttling is still seen (not a null with FunctionNotFound)."""
    clock = FakeClock()
    nv = R525Nvml(clock, reasons=FakeNvml.nvmlClocksEventReasonHwThermalSlowdown)
    tel = Telemetry(nv, index=0, interval_s=0.5, clock=clock, sleep=lambda s: clock.advance(s), background=False)
    drive(tel, clock, epochs=2)
    s = tel.summary(10, 100)
    assert "clocks_event_reasons" not in s["unsupported"]
    assert s["throttled"] is True and s["throttle_reasons"] == ["HwThermalSlowdown"]
    assert nv.event_calls == 1 and nv.throttle_calls == len(tel.samples)  # the new name is tried once


def test_a_not_supported_reason_query_is_not_retried_under_the_old_name():
    """Only a missing function switches names; NotSupported stays a null with its reason."""
    clock = FakeClock()
    nv = R525Nvml(clock, unsupported={"reasons"})
    nv.nvmlDeviceGetCurrentClocksEventReasons = lambda h: nv._check("reasons")
    tel = Telemetry(nv, index=0, interval_s=0.5, clock=clock, sleep=lambda s: clock.advance(s), background=False)
    drive(tel, clock, epochs=2)
    s = tel.summary(10, 100)
    assert "Not Supported" in s["unsupported"]["clocks_event_reasons"] and nv.throttle_calls == 0


def test_energy_above_idle_subtracts_idle_power_over_the_same_window():
    clock = FakeClock()
    tel = make(clock, watts=200.0)
    drive(tel, clock, epochs=3, epoch_s=4.0)
    tel.idle_power_w = 50.0  # as if the GPU idled at 50 W before the cell
    s = tel.summary(100, 1000)
    assert s["energy_j"] == pytest.approx(1600.0, rel=1e-3)  # 200 W x 8 s of steady epochs
    assert s["energy_above_idle_j"] == pytest.approx(1600.0 - 50.0 * 8.0, rel=1e-3)
    assert s["j_per_step_above_idle"] == pytest.approx((800.0 - 50.0 * 4.0) / 100, rel=1e-3)


def test_idle_reasons_alone_are_not_throttling():
    clock = FakeClock()
    tel = make(clock, reasons=FakeNvml.nvmlClocksEventReasonGpuIdle)
    drive(tel, clock, epochs=2)
    assert tel.summary(10, 100)["throttled"] is False


def test_short_window_and_single_epoch_are_noted():
    clock = FakeClock()
    tel = make(clock)
    drive(tel, clock, epochs=1, epoch_s=0.5)
    s = tel.summary(10, 100)
    assert s["window"] == "whole run (one epoch)"
    assert any("shorter than" in n for n in s["notes"])


def test_fast_epochs_get_a_per_epoch_note_when_the_window_is_long_enough():
    """0.45 s epochs on a counter that updates every 100 ms: each epoch's own J is off from the true 200 W x 0.45 s
    = 90 J by up to 20 J (22 %), although the 10 epochs' summed window (4.05 s steady) is past the 1 s at which
    the window note starts. The per-epoch figures carry their own note; the window's total stays close."""
    clock = FakeClock()
    tel = make(clock, watts=200.0, update_s=0.1)
    tel.interval_s = 0.05
    drive(tel, clock, epochs=10, epoch_s=0.45, dt=0.05)
    s = tel.summary(10, 100)
    per_epoch = s["energy_per_epoch_j"]
    assert s["window_s"] == pytest.approx(4.05) and not any("window" in n and "shorter" in n for n in s["notes"])
    assert max(abs(j - 90.0) for j in per_epoch) >= 10.0  # the coarseness the note is about: > 10 % on one epoch
    assert s["energy_j"] == pytest.approx(200.0 * 4.05, abs=2 * 20.0)  # the window total: within two updates
    note = next(n for n in s["notes"] if n.startswith("energy_per_epoch_j"))
    assert "epoch(s) 1-10 of 10 lasted 0.45 s" in note and "under 1 s" in note
    # epochs of 2 s: no per-epoch note
    clock = FakeClock()
    tel = make(clock, watts=200.0, update_s=0.1)
    drive(tel, clock, epochs=3, epoch_s=2.0, dt=0.5)
    assert not any(n.startswith("energy_per_epoch_j") for n in tel.summary(10, 100)["notes"])


def test_background_thread_samples_with_real_clock():
    import time

    nv = FakeNvml(FakeClock())
    nv.clock = time.perf_counter
    nv.t0 = time.perf_counter()
    tel = Telemetry(nv, interval_s=0.01)
    tel.mark()
    time.sleep(0.2)
    tel.stop()
    assert len(tel.samples) >= 5
    assert tel.summary(1, 1)["samples"] >= 5


def test_for_device_never_raises():
    assert for_device("cpu").summary(1, 1)["reason"] == "CPU run: no GPU telemetry"

    class Broken:
        def nvmlInit(self):
            raise OSError("libnvidia-ml.so.1: cannot open shared object file")

    s = for_device("gpu", nvml=Broken()).summary(1, 1)
    assert s["available"] is False and "NVML unavailable" in s["reason"]
    assert set(s) == set(samples.empty_summary("x"))


def test_null_telemetry_still_measures_process_cpu():
    t = for_device("cpu")
    import time

    t.mark()
    end = time.perf_counter() + 0.3  # well above the 10 ms tick of os.times()
    while time.perf_counter() < end:
        pass
    t.stop()
    s = t.summary(1, 1)
    assert s["cpu_util_pct"] is not None and s["cpu_util_pct"] > 0


def test_nvml_index_follows_cuda_visible_devices():
    assert nvml.nvml_index({"CUDA_VISIBLE_DEVICES": "3,1"}) == 3
    assert nvml.nvml_index({"CUDA_VISIBLE_DEVICES": "GPU-abc"}) == "GPU-abc"
    assert nvml.nvml_index({}) == 0


def test_raw_samples_csv(tmp_path):
    clock = FakeClock()
    tel = make(clock)
    drive(tel, clock, epochs=2, epoch_s=1.0)
    tel.write_samples(tmp_path / "s.csv")
    lines = (tmp_path / "s.csv").read_text().splitlines()
    assert lines[0].split(",") == list(samples.SAMPLE_FIELDS)
    assert len(lines) == len(tel.samples) + 1
