"""What the GPU did during a cell's timed window, read through NVML (nvidia-ml-py).

A background thread samples utilisation, memory, power, clocks, temperature and clock-event (throttle)
reasons every ``interval_s``; energy comes from the total-energy counter (mJ since driver load) read at
synchronised window edges. Every metric a GPU or driver does not offer is null with its reason in
``unsupported``, and the cell still succeeds. Facts relied on: docs/platform.md, "NVML".

Window protocol (the engines follow it through ``bench.instruments.timing.EpochTimer``): the caller synchronises
the device, then calls ``mark()`` at the start of every epoch (the first mark opens the window and
starts the sampler), ``end_epoch()`` right after the epoch's last training step (before validation),
and ``stop()`` after the last one. An epoch without ``end_epoch`` ends at the next mark (or at stop).
Summaries and energy cover the training steps of the steady epochs (2..N) when there are at least two,
else of the whole run: exactly the steps the time metrics cover, never validation.

Modules: ``sampler`` (the NVML sampler ``Telemetry``, ``NullTelemetry``, ``for_device``), ``samples`` (one reading,
the CSV of them, the summary block's statistics), ``energy`` (J from the counter and from sampled power),
``power_source`` (what NVML's power reading is on a GPU), ``cpu`` (the process's CPU utilisation).
"""
