"""Where the suite's CPU goes: with ``SKC_TEST_CPU=FILE`` set, each test's CPU-seconds
(setup, call and teardown) are appended to FILE as a JSON line, counted over the pytest
process and every process started under it: the servers, the JVMs, Spark's Python
workers, the jobs a test starts, and what they started, also after their parent died (a
killed driver's JVM). The suite is bound by CPU on two cores, so this, not a test's wall
time, says what a change saves::

    SKC_TEST_CPU=/tmp/cpu.jsonl python -m pytest -n 3
    python -m tests.cpu_accounting /tmp/cpu.jsonl      # by file, the largest first

A thread samples ``/proc`` every :data:`SAMPLE_S` and charges each process's own CPU
since its last sample to the test running then; a process seen once under this one stays
this one's. A process that starts and ends between two samples is not counted, nor what
a process used in its last quarter second.
Module and session fixtures count in the test that starts or stops them.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import Counter
from typing import Dict, Iterator, List, Optional, Tuple

import pytest

_TICK = os.sysconf("SC_CLK_TCK")
#: how often the processes are sampled (s)
SAMPLE_S = 0.25


def _processes() -> Dict[int, Tuple[int, int, float]]:
    """pid -> (parent pid, start time in ticks, CPU-seconds of its own).

    A waited child's CPU, which Linux adds to its parent's ``cutime``, is left out: the
    child was charged itself while it ran."""
    out: Dict[int, Tuple[int, int, float]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(name)] = (int(fields[1]), int(fields[19]),
                          (int(fields[11]) + int(fields[12])) / _TICK)
    return out


class CpuMeter:
    """The CPU of this process's tree, charged to the test running when it was used."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.lock = threading.Lock()
        #: (pid, start time) of every process seen in the tree -> its CPU at the last sample
        self.seen: Dict[Tuple[int, int], float] = {}
        self.charged = 0.0
        self.stopped = threading.Event()

    def sample(self, *, charge: bool = True) -> None:
        """Charge what each process of the tree used since its last sample (a process
        new to the tree: all it used); ``charge`` false only takes the baseline."""
        procs = _processes()
        mine = {self.root}
        changed = True
        while changed:             # the tree, and whatever was seen in it before
            changed = False
            for pid, (ppid, start, _cpu) in procs.items():
                if pid not in mine and (ppid in mine or (pid, start) in self.seen):
                    mine.add(pid)
                    changed = True
        with self.lock:
            for pid in mine:
                _ppid, start, cpu = procs[pid]
                before = self.seen.get((pid, start), 0.0)
                if charge:
                    self.charged += max(0.0, cpu - before)
                self.seen[(pid, start)] = cpu

    def take(self) -> float:
        """The CPU charged since the last take."""
        self.sample()
        with self.lock:
            used, self.charged = self.charged, 0.0
        return used

    def run(self) -> None:
        while not self.stopped.wait(SAMPLE_S):
            self.sample()


_METER: Optional[CpuMeter] = None


def _meter() -> CpuMeter:
    global _METER
    if _METER is None:
        _METER = CpuMeter(os.getpid())
        _METER.sample(charge=False)
        threading.Thread(target=_METER.run, name="cpu-accounting", daemon=True).start()
    return _METER


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Optional[pytest.Item]) -> Iterator[None]:
    path = os.environ.get("SKC_TEST_CPU")
    if not path:
        yield
        return
    meter = _meter()
    meter.take()
    wall = time.monotonic()
    yield
    line = {"test": item.nodeid, "cpu_s": round(meter.take(), 2),
            "wall_s": round(time.monotonic() - wall, 2)}
    with open(path, "a") as out:
        out.write(json.dumps(line) + "\n")


def main(argv: List[str]) -> int:
    """Sum a ``SKC_TEST_CPU`` file by test file, the largest first."""
    by_file: Counter[str] = Counter()
    wall: Counter[str] = Counter()
    count: Counter[str] = Counter()
    with open(argv[0]) as f:
        for line in f:
            row = json.loads(line)
            name = row["test"].split("::")[0]
            by_file[name] += row["cpu_s"]
            wall[name] += row["wall_s"]
            count[name] += 1
    total = sum(by_file.values())
    print(f"{total:,.0f} CPU-seconds over {sum(count.values())} tests (CPU, wall, tests)")
    for name, cpu_s in by_file.most_common(int(argv[1]) if len(argv) > 1 else 40):
        print(f"{cpu_s:8.0f} {wall[name]:8.0f} {count[name]:5d}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
