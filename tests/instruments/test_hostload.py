"""The host's CPU time outside a cell (``bench.instruments.hostload``): what counts as busy, when a cell counts as run
on a contended host, and how repeats carry the flag."""

from __future__ import annotations

import collections

import pytest

from bench.instruments import hostload
from bench.results.repeats import CONTENDED_NOTE, aggregate
from bench.results.schema import Record

Times = collections.namedtuple("Times", "user nice system idle iowait irq softirq steal guest guest_nice")


def test_busy_time_is_every_state_but_idle_and_io_wait_with_guest_time_counted_once():
    """Linux counts guest time inside user (and guest_nice inside nice): adding it again would count it twice."""
    t = Times(user=10.0, nice=1.0, system=4.0, idle=100.0, iowait=5.0, irq=0.5, softirq=0.5, steal=2.0, guest=3.0,
              guest_nice=1.0)
    assert hostload.busy_cpu_s(t) == pytest.approx(10 + 1 + 4 + 0.5 + 0.5 + 2)


@pytest.mark.parametrize("other_s, wall_s, cpus, expected", [
    (0.06, 10.0, 2, False),    # a quiet 2-core VM's daemons
    (5.0, 10.0, 2, True),      # half a CPU
    (4.9, 10.0, 2, False),
    (30.0, 10.0, 128, False),  # 3 CPUs of 128: under 5 %
    (70.0, 10.0, 128, True),   # 7 CPUs of 128
    (None, 10.0, 2, None),
])
def test_a_cell_is_contended_from_half_a_cpu_or_five_percent_of_them(other_s, wall_s, cpus, expected):
    assert hostload.contended(other_s, wall_s, cpus) is expected


def test_other_cpu_time_is_the_hosts_less_the_cells_own_and_none_without_a_reading():
    assert hostload.other_cpu_s(100.0, 112.5, 10.0) == pytest.approx(2.5)
    assert hostload.other_cpu_s(None, 112.5, 10.0) is None


def repeat(n: int, contended: bool | None) -> Record:
    rec = Record.model_validate({"status": "ok", "repeat": n, "metrics": {"ms_per_step_mean": 1.0 + n},
                                 "process": {"wall_s": 10.0, "host_contended": contended}})
    if contended:
        rec.notes = [hostload.contention_note(8.0, 10.0, 2)]
    return rec


def test_a_cell_is_flagged_when_any_of_its_repeats_shared_the_cpus_and_keeps_its_note():
    """Rule ``any``: repeat 1 quiet, repeat 2 contended, the cell is contended, with repeat 2's note."""
    cell = aggregate([repeat(1, False), repeat(2, True), repeat(3, False)])
    assert cell.process is not None and cell.process.host_contended is True
    assert [n for n in cell.notes if n.startswith(CONTENDED_NOTE)] == [hostload.contention_note(8.0, 10.0, 2)]
    assert "0.80 CPUs of 2" in cell.notes[0]
    quiet = aggregate([repeat(1, False), repeat(2, False)])
    assert quiet.process is not None and quiet.process.host_contended is False
