"""What the machine did beside a measured run: CPU time the hypervisor took away (steal).

On a shared virtual machine another guest can take a core while a run wants it. The load average does not
show that; ``/proc/stat``'s ``steal`` column does. The benchmarks print it with every run, so a wall time
can be read against it: a run that lost 10% of its CPU time to steal is not comparable with one that lost 1%.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

STAT = Path("/proc/stat")


@dataclass(frozen=True, slots=True)
class CpuTimes:
    """The machine's CPU clock ticks since boot, all cores together (``/proc/stat``'s ``cpu`` line)."""

    busy: int
    """user, nice, system, irq and softirq ticks."""
    steal: int

    @classmethod
    def now(cls) -> CpuTimes | None:
        """The counters now; ``None`` where there is no ``/proc/stat`` (not Linux)."""
        try:
            first = STAT.read_text().splitlines()[0].split()
        except (OSError, IndexError):
            return None
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in first[1:9])
        return cls(user + nice + system + irq + softirq, steal)


def steal_share(before: CpuTimes | None, after: CpuTimes | None) -> float | None:
    """The share of the CPU time that something wanted between two readings but the hypervisor took
    (steal / (busy + steal)); ``None`` when it cannot be read.

    >>> steal_share(CpuTimes(100, 0), CpuTimes(190, 10))
    0.1
    """
    if before is None or after is None:
        return None
    busy, steal = after.busy - before.busy, after.steal - before.steal
    return round(steal / (busy + steal), 3) if busy + steal > 0 else 0.0
