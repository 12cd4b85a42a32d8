"""What an operator sees of a running job (issue 26): the batch in flight in the status,
and a ZooKeeper outage at once in the log, the status and the metrics while
processing goes on (the periodic commit is bounded, the final one is not)."""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Dict, Iterator, List, Optional

from storm_kafka_compat.config import Broker, JobConfig, SpoutConfig, StaticHosts, TopologyConfig
from storm_kafka_compat.engine.driver import Pipeline, RunOptions
from storm_kafka_compat.engine.report import STATUS_COLUMNS, progress_line, status_rows
from storm_kafka_compat.errors import ZooKeeperUnavailableError
from storm_kafka_compat.testing.inprocess import InProcessRunner
from storm_kafka_compat.testing.memory_store import MemoryStateStore
from storm_kafka_compat.testing.scripted import ScriptedKafka


def job(partitions: int = 2, interval_ms: int = 2000) -> JobConfig:
    hosts = StaticHosts({p: Broker("k1", 9092) for p in range(partitions)})
    spout = SpoutConfig(hosts=hosts, topic="orders", zk_root="/kafka", id="spout1",
                        scheme="string", state_update_interval_ms=interval_ms)
    return JobConfig(spout=spout, topology=TopologyConfig(name="t", id="t-1-1"),
                     bolt="tests.bolts:record")


def kafka_with(messages: int, partitions: int = 2) -> ScriptedKafka:
    kafka = ScriptedKafka()
    kafka.create_topic("orders", partitions)
    for p in range(partitions):
        kafka.append("orders", p, *[f"m{i}".encode() for i in range(messages)])
    return kafka


class PeekingRunner(InProcessRunner):
    """Runs in process; reads the pipeline's status while each batch is in flight."""

    pipeline: Optional[Pipeline] = None
    seen: List[Optional[Dict[str, Any]]] = []

    def run(self, plan: Any) -> Any:
        assert self.pipeline is not None
        self.seen.append(self.pipeline.status)
        return super().run(plan)


def test_the_status_shows_the_batch_in_flight() -> None:
    kafka = kafka_with(5)
    runner = PeekingRunner(kafka)
    runner.seen = []
    p = Pipeline(job(), runner=runner, store=MemoryStateStore(),
                 kafka_factory=lambda boot: kafka, sleep=lambda s: None)
    runner.pipeline = p
    p.run(RunOptions(until_caught_up=True, progress_every_s=0))
    first, second = runner.seen[0], runner.seen[1]
    assert first is not None and first["starting"] is True
    assert first["in_flight"] == {"batch": 1, "running_s": 0.0, "partitions": 2, "retries": 0}
    # from the second batch on, the last interval's rows say where the batch reads
    assert second is not None and second["in_flight"]["batch"] == 2
    assert [r["in_flight"] for r in second["partitions"]] == ["from 5", "from 5"]
    row = next(iter(status_rows(second)))
    assert STATUS_COLUMNS[-1] == "IN-FLIGHT" and row["IN-FLIGHT"] == "from 5"
    assert p.status is not None and "in_flight" not in p.status      # between batches


class OutageStore(MemoryStateStore):
    """A store that can be 'away': bounded writes fail at once, patient ones after
    counting; it records each bounded() wait."""

    def __init__(self) -> None:
        super().__init__()
        self.away = False
        self.unreachable_since: Optional[float] = None
        self.bounds: List[float] = []
        self._bounded = False

    @contextlib.contextmanager
    def bounded(self, wait_s: float) -> Iterator[None]:
        self.bounds.append(wait_s)
        self._bounded = True
        try:
            yield
        finally:
            self._bounded = False

    def write_many(self, docs: Any) -> int:
        if self.away:
            if self.unreachable_since is None:
                self.unreachable_since = 1_700_000_000.0
            raise ZooKeeperUnavailableError("ZooKeeper at zk:2181 did not answer writing "
                                            f"(bounded: {self._bounded})")
        self.unreachable_since = None
        return super().write_many(docs)


def test_a_zookeeper_outage_is_said_at_once_and_processing_goes_on(caplog) -> None:
    caplog.set_level(logging.INFO, logger="storm_kafka_compat")
    kafka = kafka_with(40)
    store = OutageStore()
    records: List[Dict[str, Any]] = []
    lines: List[str] = []
    p = Pipeline(job(interval_ms=0), runner=InProcessRunner(kafka), store=store,
                 kafka_factory=lambda boot: kafka, sleep=lambda s: None,
                 metrics=records.append, progress=lines.append)
    store.away = True
    summary = p.run(RunOptions(max_batches=4, max_messages_per_partition=5,
                               progress_every_s=3600))
    # every batch ran although no commit succeeded
    assert summary.batches == 4 and summary.messages == 40
    assert p.spout.counts.commit_failures >= 4
    # the periodic commits waited at most commit_wait_s once each (1 s here)
    assert store.bounds and set(store.bounds) == {1.0}
    # said once as an error, then quietly until it recovers or a minute passes
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR and "commit of" in
              r.getMessage()]
    assert len(errors) >= 1 and "processing goes on" in errors[0].getMessage()
    assert sum(1 for r in caplog.records if "failed again" in r.getMessage()) >= 2
    # the status and the metrics said it at once, not at the next interval
    compat = [r["value"] for r in records if r["name"] == "stormKafkaCompat"]
    assert compat and compat[0]["storeUnreachableSince"] == 1_700_000_000
    assert any("ZooKeeper unreachable for" in line for line in lines), lines
    # the final commit (patient, after the loop) is not bounded
    assert summary.final_commit_failed is True
    assert "bounded: False" in caplog.text


def test_the_progress_line_names_the_outage() -> None:
    snap = {"batches": 3, "rate": 10.0, "lag": 0, "pending": 4, "retries": 0, "time": 130,
            "store_unreachable_since": 100, "commit_failures": 7}
    assert progress_line(snap).endswith("; ZooKeeper unreachable for 30 s (7 commits failed; "
                                        "processing goes on)")
