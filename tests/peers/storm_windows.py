"""Real Apache Storm 2.8.3 running the topologies on time of issue 35 (a rolling count on
tick tuples, a sliding count window, a tumbling event-time window with a lag) over
storm-kafka-client's KafkaSpout: the reference the project's Python ports
(tests/windowed_bolts.py) are compared with on the same Kafka topic. The Java is
``skc.peer.WindowTopologies`` (tests/peers/java/storm2)::

    got = storm_window_results("windows", bootstrap, topic, tmp_path / "storm",
                               expected={"sliding": 20, "tumbling": 5})

Results come as the RecordingBolts wrote them: one list of strings a tuple. A run ends
once the expected results are in and ``settle_s`` more seconds passed (a window fired
twice would show), then the LocalCluster is killed by its PID.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List

from tests.peers.storm import ClientTopology, StormLocal, read_lines

#: no replay during a run: a message timeout far beyond the windows
TOPOLOGY_CONFIG = {"topology.message.timeout.secs": 300, "topology.max.spout.pending": 1000}


@dataclass
class WindowTopology(ClientTopology):
    """One kind of ``skc.peer.WindowTopologies``: rolling, sliding or tumbling."""

    kind: str = "rolling"
    parallelism: int = 1

    factory = "skc.peer.WindowTopologies"

    def spec(self) -> str:
        rows = {"name": self.name, "kind": self.kind, "bootstrap": self.bootstrap,
                "topics": ",".join(self.topics), "group": self.group,
                "firstPoll": self.first_poll, "commitPeriodMs": self.commit_period_ms,
                "record": self.record, "parallelism": self.parallelism}
        rows.update({f"config.{k}": v for k, v in {**TOPOLOGY_CONFIG, **self.config}.items()})
        return "".join(f"{k}={v}\n" for k, v in rows.items())


def storm_window_results(kind: str, bootstrap: str, topic: str, work_dir: Path, *,
                         expected: Dict[str, int], parallelism: int = 1,
                         settle_s: float = 3.0, timeout_s: float = 150.0
                         ) -> Dict[str, List[List[str]]]:
    """Run ``kind`` (``rolling`` or ``windows``) on ``topic`` from its start in a
    LocalCluster of its own; per result bolt (rolling; sliding, tumbling) its results,
    once ``expected`` (bolt -> count) are in and ``settle_s`` passed without more."""
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    record = work_dir / kind
    topology = WindowTopology(f"{kind}-{uuid.uuid4().hex[:6]}", bootstrap=bootstrap,
                              topics=[topic], group=f"storm-{kind}-{uuid.uuid4().hex[:8]}",
                              record=record, first_poll="EARLIEST", commit_period_ms=500,
                              kind=kind, parallelism=parallelism)

    def results() -> Dict[str, List[List[str]]]:
        return {name: read_lines(Path(f"{record}.{name}")) for name in expected}

    storm = StormLocal(topology, work_dir, heap_mb=512)
    try:
        storm.start()
        storm.wait_for(lambda: all(len(lines) >= expected[name]
                                   for name, lines in results().items()),
                       f"{expected} results under {work_dir}", timeout_s)
        time.sleep(settle_s)
        return results()
    finally:
        storm.kill()
