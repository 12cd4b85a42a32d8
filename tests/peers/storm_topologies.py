"""Real Apache Storm 2.8.3 running two stateful bolt topologies over storm-kafka-client's
KafkaSpout: the reference the project's stateful results are compared with on the same
Kafka topic (inputs and truth in :mod:`tests.stateful_inputs`).

* word count (storm-starter's WordCount shape): KafkaSpout -> split (shuffle grouping,
  one anchored tuple per whitespace-separated word) -> count (fields grouping on
  "word", parallelism 4, a ``HashMap<String, Long>`` per task) -> a RecordingBolt;
* running maximum: KafkaSpout -> parse ("key,number", shuffle) -> max (fields grouping
  on "key", parallelism 3) -> a RecordingBolt.

The Java is ``skc.peer.StatefulTopologies`` (tests/peers/java/storm2). The state bolts
emit their new value after every tuple and the single recorder writes each line before
its tuple is acked; both states only grow, so the largest (the last) value of a key is
its final one. The spout (AT_LEAST_ONCE, EARLIEST, a group of its own) commits an
offset only once every tuple that message led to is acked. So a run ends when the
group's commits reach the offsets asked for: every line they caused is then in the
file, and the LocalCluster is killed by its PID (nothing depends on a clean
shutdown)::

    counts = storm_word_counts(cluster.bootstrap, topic, tmp_path / "storm", messages=2000)
    maxima = storm_running_max(cluster.bootstrap, topic, tmp_path / "max")

A message processed twice (a tuple timed out and the spout replayed it) would make the
result differ from the truth; the first bolt records each message's partition and
offset, and :func:`storm_word_counts` / :func:`storm_running_max` raise
:class:`StormReplayedError` then (:func:`run_stateful` returns the run as it was).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Tuple

from storm_kafka_compat.kafka.groups import KafkaGroupOffsets
from tests.peers.storm import ClientTopology, StormLocal, read_lines

#: the kinds of :class:`StatefulTopology`, with (first bolt, state bolt) parallelism
KINDS: Dict[str, Tuple[int, int]] = {"wordcount": (2, 4), "runningmax": (2, 3)}

#: topology settings of every run: bounded in-flight tuples, and a message timeout far
#: beyond what a tuple tree takes here, so the spout never replays a message
TOPOLOGY_CONFIG: Dict[str, int] = {"topology.max.spout.pending": 500,
                                   "topology.message.timeout.secs": 300}


class StormReplayedError(AssertionError):
    """Storm processed a message more than once: its result is not an exact reference."""


@dataclass
class StatefulTopology(ClientTopology):
    """One of :data:`KINDS`, built by ``skc.peer.StatefulTopologies``; ``record`` gets
    the state bolt's (key, value) tuples, ``processed`` is the prefix of the first
    bolt's per-task files of (partition, offset). The guarantee is always
    AT_LEAST_ONCE and ``delay_ms`` is not used."""

    kind: str = "wordcount"
    processed: Optional[Path] = None
    first_parallelism: Optional[int] = None
    state_parallelism: Optional[int] = None

    factory = "skc.peer.StatefulTopologies"

    def spec(self) -> str:
        first, state = KINDS[self.kind]
        rows = {"name": self.name, "kind": self.kind, "bootstrap": self.bootstrap,
                "topics": ",".join(self.topics), "group": self.group,
                "firstPoll": self.first_poll, "commitPeriodMs": self.commit_period_ms,
                "record": self.record,
                "processed": self.processed or self.record.with_suffix(".processed"),
                "firstParallelism": self.first_parallelism or first,
                "stateParallelism": self.state_parallelism or state}
        rows.update({f"consumer.{k}": v for k, v in self.consumer.items()})
        rows.update({f"config.{k}": v for k, v in {**TOPOLOGY_CONFIG, **self.config}.items()})
        return "".join(f"{k}={v}\n" for k, v in rows.items())


@dataclass
class StatefulRun:
    """What one run gave: ``result`` key -> final value (the last the state bolts
    emitted), ``processed`` the (partition, offset) of each message the first bolt took,
    in no particular order, ``committed`` the group's offsets at the end, ``seconds``
    from the JVM's start to the commits' arrival, and Storm's log."""

    result: Dict[str, int]
    processed: List[Tuple[int, int]]
    committed: Dict[int, int]
    seconds: float
    log_path: Path

    @property
    def replayed(self) -> List[Tuple[int, int]]:
        """The messages processed more than once (sorted)."""
        seen: Dict[Tuple[int, int], int] = {}
        for message in self.processed:
            seen[message] = seen.get(message, 0) + 1
        return sorted(m for m, n in seen.items() if n > 1)


def topic_offsets(bootstrap: str, topic: str, *, timeout_s: float = 60.0
                  ) -> Dict[int, Tuple[int, int]]:
    """partition -> (log start, log end) of ``topic`` (kafka-python, the broker's
    protocol version asked)."""
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","),
                             client_id="skc-storm-stateful", request_timeout_ms=10000)
    try:
        deadline = time.monotonic() + timeout_s
        partitions = consumer.partitions_for_topic(topic)
        while not partitions and time.monotonic() < deadline:
            time.sleep(0.5)
            consumer.topics()
            partitions = consumer.partitions_for_topic(topic)
        if not partitions:
            raise AssertionError(f"topic {topic} has no partitions at {bootstrap}")
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        starts = consumer.beginning_offsets(tps, timeout_ms=int(timeout_s * 1000))
        ends = consumer.end_offsets(tps, timeout_ms=int(timeout_s * 1000))
        return {tp.partition: (int(starts[tp]), int(ends[tp])) for tp in tps}
    finally:
        consumer.close()


def run_stateful(kind: str, bootstrap: str, topic: str, work_dir: Path, *,
                 messages: Optional[int] = None,
                 end_offsets: Optional[Mapping[int, int]] = None,
                 group: Optional[str] = None, state_parallelism: Optional[int] = None,
                 timeout_s: float = 300.0) -> StatefulRun:
    """Run the ``kind`` topology (:data:`KINDS`) on ``topic`` from the log start, in a
    Storm 2.8.3 LocalCluster of its own under ``work_dir``, until its group's commits
    cover ``messages`` messages (summed over partitions, from the log start), or reach
    ``end_offsets`` (partition -> offset), or, given neither, the log ends as they are
    when called; then kill the JVM by its PID and read the result.

    Raises AssertionError (with Storm's log tail) when Storm exits or ``timeout_s``
    passes first; MavenUnavailableError when Storm's jars cannot be had."""
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r} is not one of {sorted(KINDS)}")
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    ranges = topic_offsets(bootstrap, topic)
    if messages is not None and end_offsets is not None:
        raise ValueError("give messages or end_offsets, not both")
    if messages is None and end_offsets is None:
        end_offsets = {p: end for p, (_, end) in ranges.items()}
    group = group or f"storm-{kind}-{uuid.uuid4().hex[:8]}"
    record = work_dir / f"{kind}.txt"
    topology = StatefulTopology(
        f"{kind}-{uuid.uuid4().hex[:6]}", bootstrap=bootstrap, topics=[topic], group=group,
        record=record, first_poll="EARLIEST", commit_period_ms=500, kind=kind,
        processed=work_dir / f"{kind}.processed", state_parallelism=state_parallelism)

    def done(committed: Dict[int, int]) -> bool:
        if end_offsets is not None:
            return all(committed.get(p, 0) >= end for p, end in end_offsets.items())
        return sum(max(0, committed.get(p, start) - start)
                   for p, (start, _) in ranges.items()) >= messages

    storm = StormLocal(topology, work_dir, heap_mb=512)
    started = time.monotonic()
    committed: Dict[int, int] = {}
    try:
        storm.start()
        with KafkaGroupOffsets(bootstrap, group) as offsets:
            deadline = started + timeout_s
            while True:
                got = offsets.read_many([(topic, p) for p in ranges])
                committed = {tp[1]: c[0] for tp, c in got.items() if c}
                if done(committed):
                    break
                if not storm.running:
                    raise AssertionError(f"{storm.name} exited before its commits reached "
                                         f"{end_offsets or messages}; log ends with:\n"
                                         f"{storm.log_tail(60)}")
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"{storm.name}: commits {committed} did not reach "
                        f"{end_offsets or messages} within {timeout_s} s; log ends with:\n"
                        f"{storm.log_tail(60)}")
                time.sleep(0.5)
        seconds = time.monotonic() - started
    finally:
        storm.kill()
    # both states only grow, so the largest value a key was emitted with is its last
    # one, whatever order the recorder received them in
    result: Dict[str, int] = {}
    for key, value in read_lines(record):
        result[key] = max(result.get(key, int(value)), int(value))
    processed = [(int(p), int(o)) for path in sorted(work_dir.glob(f"{kind}.processed.*"))
                 for p, o in read_lines(path)]
    return StatefulRun(result, processed, committed, seconds, storm.log_path)


def _exact(run: StatefulRun) -> Dict[str, int]:
    if run.replayed:
        raise StormReplayedError(f"Storm processed {len(run.replayed)} messages more than once "
                                 f"(first {run.replayed[:5]}); see {run.log_path}")
    return run.result


def storm_word_counts(bootstrap: str, topic: str, work_dir: Path, *,
                      messages: Optional[int] = None,
                      end_offsets: Optional[Mapping[int, int]] = None,
                      timeout_s: float = 300.0) -> Dict[str, int]:
    """word -> count, as Storm's WordCount topology ends on ``topic`` (each value a
    sentence); see :func:`run_stateful` for when it ends. Raises
    :class:`StormReplayedError` when a message was processed twice."""
    return _exact(run_stateful("wordcount", bootstrap, topic, work_dir, messages=messages,
                               end_offsets=end_offsets, timeout_s=timeout_s))


def storm_running_max(bootstrap: str, topic: str, work_dir: Path, *,
                      messages: Optional[int] = None,
                      end_offsets: Optional[Mapping[int, int]] = None,
                      timeout_s: float = 300.0) -> Dict[str, int]:
    """key -> largest number, as Storm's running-maximum topology ends on ``topic``
    (each value ``"key,number"``); see :func:`run_stateful`. Raises
    :class:`StormReplayedError` when a message was processed twice."""
    return _exact(run_stateful("runningmax", bootstrap, topic, work_dir, messages=messages,
                               end_offsets=end_offsets, timeout_s=timeout_s))
