"""``storm-kafka-compat demo`` end to end through the console script (README's first command)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.spark]

REPO = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("storm-kafka-compat")


def test_demo_runs_end_to_end():
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    proc = subprocess.run([str(CLI), "demo", "--messages", "400", "--partitions", "3"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line.split() for line in proc.stdout.splitlines() if line.strip()]
    assert lines[0] == ["PARTITION", "STORM-OFFSET", "DECISION", "RESUMED-FROM", "PROCESSED",
                        "LOG-END", "COMMITTED", "OK"]
    rows = {int(r[0]): r for r in lines[1:]}
    assert sorted(rows) == [0, 1, 2]
    log_end = {p: len(range(p, 400, 3)) for p in range(3)}
    for p, r in rows.items():
        storm, decision, resumed, processed, end, committed, ok = r[1:]
        assert ok == "yes" and int(end) == log_end[p] and int(committed) == log_end[p]
        if p < 2:   # Storm left these halfway
            assert decision == "resume" and int(resumed) == int(storm)
        else:       # never committed by Storm
            assert decision == "no_state" and int(resumed) == 0
        assert int(processed) == log_end[p] - int(resumed)
    assert "every partition resumed where Storm stopped" in proc.stderr
