"""What the Python Storm integration tests give the topologies they run: the scheme the
Kafka spout uses in place of the quickstart's WordSpout (one word per message, field
``word``), and the truth of the quickstart's WordCountBolt (``dog`` counts 10)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Dict, Iterable, List

from storm_kafka_compat.config import job_config_from_dict
from storm_kafka_compat.engine.driver import Pipeline, RunOptions

#: the bolt that records the final counts (tests/stateful_bolts.py's Report)
REPORT = {"name": "report", "bolt": "tests.stateful_bolts:Report",
          "inputs": [{"from": "count", "grouping": "shuffle"}]}


def run_job(config: Dict[str, Any], topic: str, zk_server: Any, zk_root: str,
            bootstrap: str, state_dir: Path, spark: Any) -> Any:
    """The converted CONFIG, with what a test environment changes: the broker's bootstrap
    address (no ZooKeeper broker registry needed), where offsets and state are kept."""
    config = dict(config)
    config["spout"] = {**config["spout"], "topic": topic, "zkRoot": f"{zk_root}/offsets",
                       "stateUpdateIntervalMs": 300}
    config["hosts"] = {"bootstrap": bootstrap}
    config["topology"] = {**config.get("topology", {}), "topology.id": f"{topic}-py",
                          "storm.zookeeper.servers": ["127.0.0.1"],
                          "storm.zookeeper.port": zk_server.port,
                          "topology.state.dir": str(state_dir)}
    config["spark"] = {"master": "local[2]"}
    pipe = Pipeline(job_config_from_dict(config), spark=spark)
    return pipe.run(RunOptions(until_caught_up=True, idle_sleep_ms=50))


def word(value: bytes) -> List[str]:
    """One message, one word: the field the quickstart's topology groups on."""
    return [value.decode("utf-8")]


word.fields = ("word",)  # type: ignore[attr-defined]


def quickstart_counts(words: Iterable[str]) -> Dict[str, int]:
    """What streamparse's quickstart WordCountBolt ends with: 1 a word, 10 for ``dog``."""
    out: Counter = Counter()
    for w in words:
        out[w] += 10 if w == "dog" else 1
    return dict(out)


class Keep:
    """A rich bolt that keeps what reaches it (class-wide, in this process) and acks."""

    kept: List[List[object]] = []

    def prepare(self, conf, context, collector):
        self.collector = collector

    def declare_output_fields(self):
        return ()

    def execute(self, tup):
        Keep.kept.append(list(tup.values))
        self.collector.ack(tup)
