"""Where the suite's CPU goes: with ``SKC_TEST_CPU=FILE`` set, each test's CPU-seconds
(setup, call and teardown) are appended to FILE as a JSON line, counted over the pytest
process and every process under it: the servers, the JVMs, Spark's Python workers, the
jobs a test starts. The suite is bound by CPU on two cores, so this, not a test's wall
time, says what a change saves::

    SKC_TEST_CPU=/tmp/cpu.jsonl python -m pytest -n 3
    python -m tests.cpu_accounting /tmp/cpu.jsonl      # by file, the largest first

A process that ends while a test runs is counted when its parent waits for it (Linux
adds a waited child's CPU to its parent's); one orphaned and reaped by init is not.
Module and session fixtures count in the test that starts or stops them.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from typing import Dict, Iterator, List, Optional

import pytest

_TICK = os.sysconf("SC_CLK_TCK")


def _tree_cpu(root: int) -> float:
    """CPU-seconds of ``root`` and every live process under it, each with what its
    waited children used."""
    parents: Dict[int, int] = {}
    cpu: Dict[int, float] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(name)
        parents[pid] = int(fields[1])
        cpu[pid] = sum(int(v) for v in fields[11:15]) / _TICK
    total = 0.0
    for pid in cpu:
        p: Optional[int] = pid
        while p is not None and p != root:
            p = parents.get(p)
        if p == root:
            total += cpu[pid]
    return total


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Optional[pytest.Item]) -> Iterator[None]:
    path = os.environ.get("SKC_TEST_CPU")
    if not path:
        yield
        return
    me = os.getpid()
    started, wall = _tree_cpu(me), time.monotonic()
    yield
    used = _tree_cpu(me) - started
    line = {"test": item.nodeid, "cpu_s": round(used, 2),
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
    print(f"{total:,.0f} CPU-seconds over {sum(count.values())} tests")
    for name, cpu_s in by_file.most_common(int(argv[1]) if len(argv) > 1 else 40):
        print(f"{cpu_s:8.0f} {wall[name]:8.0f} {count[name]:5d}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
