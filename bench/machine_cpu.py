"""The whole machine's busy CPU time, from Linux's ``/proc/stat`` (issue 32
item 1: the CPU a job costs across every process — the worker, PostgreSQL's
backends, the bench's own polling — where a process's own CPU time sees only
one of them). ``bench/pg_ceiling.sh`` reads the same fields in shell, so the
ceiling and the drain are compared by the CPU they cost per job, not only by
their rates. Elsewhere than Linux there is no figure (None)."""

from __future__ import annotations

import os
from pathlib import Path

STAT = Path("/proc/stat")


def busy_s() -> float | None:
    """Seconds the machine's CPUs have been busy since boot, summed over them:
    every field of ``/proc/stat``'s ``cpu`` line (user, nice, system, irq,
    softirq, steal) but idle and iowait; guest time is inside user already."""
    try:
        fields = STAT.read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
