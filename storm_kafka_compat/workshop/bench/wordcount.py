"""The two-stage figure with its state kept: storm-starter's WordCount against the plain
PySpark job a careful user writes for the same work.

The topic holds sentences (5 words each from a fixed vocabulary). The pipeline runs
split (2 tasks, shuffle from the spout, in the fetching tasks) -> count (4 tasks behind
a fields grouping on the word, a dict of counts per task, in the bolt hosts, saved with
the offsets at each commit). The plain job reads the same partitions with the same
consumer settings, splits in Python, counts per task with a ``Counter`` and merges with
``reduceByKey``: Spark's own shuffle and state. Both runs' final counts are compared
(a figure whose counts differ is an error, not a rate). Rates are in sentences a second.

Beside them runs the bound of any engine that calls these bolts per tuple: the plain job
with the ``Counter`` replaced by the topology's own bolts, called as Storm calls them
(``SplitSentence.execute`` per sentence, ``WordCount.execute`` per word, each on a tuple
object) and nothing else: no acker, no tuple leaving its Spark task (a ``WordCount`` per
task, merged by ``reduceByKey``, which arbitrary bolts cannot be). The pipeline's rate
over the plain job cannot pass this job's over the plain job.
"""

from __future__ import annotations

import collections
import random
import time
from pathlib import Path
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Mapping,
                    Optional, Tuple)

from storm_kafka_compat.workshop.bench.plain import PlainWork, plain_work, read_keyed, rate_of
from storm_kafka_compat.topology.bolts import BasicBolt

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: the words of the benchmark's sentences
VOCABULARY = tuple(f"w{i:03d}" for i in range(500))
WORDS_PER_SENTENCE = 5


class SplitSentence(BasicBolt):
    """One ``(word,)`` tuple per word of the sentence (bytes, split on spaces)."""

    def declare_output_fields(self) -> Tuple[str, ...]:
        return ("word",)

    def execute(self, t: Any, collector: Any) -> None:
        for word in t.values[0].split():
            collector.emit([word])


class WordCount(BasicBolt):
    """storm-starter's WordCount: a dict of counts in the task; its state is the dict."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.counts: Dict[bytes, int] = {}

    def execute(self, t: Any, collector: Any) -> None:
        word = t.values[0]
        self.counts[word] = self.counts.get(word, 0) + 1

    def get_state(self) -> Dict[bytes, int]:
        return self.counts

    def set_state(self, state: Dict[bytes, int]) -> None:
        self.counts = dict(state)


#: the pipeline's topology (the raw scheme: the bolt gets the value's bytes)
WORD_COUNT = {"bolts": [
    {"name": "split", "bolt": "storm_kafka_compat.workshop.bench.wordcount:SplitSentence",
     "kind": "basic", "parallelism": 2, "inputs": [{"from": "spout", "grouping": "shuffle"}]},
    {"name": "count", "bolt": "storm_kafka_compat.workshop.bench.wordcount:WordCount",
     "kind": "basic", "parallelism": 4, "inputs": [{"from": "split", "grouping": "fields",
                                                    "fields": ["word"]}]}]}


def sentences(n: int, seed: int = 31) -> Iterator[bytes]:
    rng = random.Random(seed)
    for _ in range(n):
        yield b" ".join(rng.choice(VOCABULARY).encode() for _ in range(WORDS_PER_SENTENCE))


def _count_words(works: Iterable[PlainWork]) -> Iterator[Tuple[bytes, int]]:
    counts: collections.Counter[bytes] = collections.Counter()
    for work in works:
        for _key, value in read_keyed(work, _no_key):
            counts.update(value.split())
    yield from counts.items()


def _no_key(offset: int) -> None:
    return None


class BareTuple:
    """The least a bolt's ``execute`` reads: ``values``."""

    __slots__ = ("values",)

    def __init__(self, values: List[Any]) -> None:
        self.values = values


class ListCollector:
    """A basic bolt's collector that keeps what is emitted, in order."""

    __slots__ = ("emitted",)

    def __init__(self) -> None:
        self.emitted: List[List[Any]] = []

    def emit(self, values: List[Any], stream: str = "default") -> None:
        self.emitted.append(values)


def _call_bolts(works: Iterable[PlainWork]) -> Iterator[Tuple[bytes, int]]:
    """The bolts per tuple in one Spark task: a split and a count instance of its own."""
    split, count = SplitSentence(), WordCount()
    count.prepare({}, None)
    collector = ListCollector()
    out = collector.emitted
    split_execute, count_execute = split.execute, count.execute
    for work in works:
        for _key, value in read_keyed(work, _no_key):
            split_execute(BareTuple([value]), collector)
            for values in out:
                count_execute(BareTuple(values), None)
            out.clear()
    yield from count.counts.items()


def plain_word_count(spark: "SparkSession", *, backend: str, topic: str, ends: Mapping[int, int],
                     consumer: Mapping[str, Any],
                     clock: Callable[[], float] = time.perf_counter,
                     bolts: bool = False) -> Tuple[Dict[str, Any], Dict[bytes, int]]:
    """The plain job: read, split, a Counter per task, ``reduceByKey``; its rate in
    sentences a second and the counts. ``bolts``: the topology's bolts called per tuple
    in place of the Counter (the module's bound)."""
    sc = spark.sparkContext
    work = plain_work(backend, topic, ends, consumer, sc.defaultParallelism)
    name = "the bolt calls' " if bolts else "the plain "
    t0 = clock()
    counts = (sc.parallelize(work, len(work)).mapPartitions(_call_bolts if bolts else _count_words)
              .reduceByKey(lambda a, b: a + b).collectAsMap())
    seconds = clock() - t0
    sentences_ = sum(counts.values()) // WORDS_PER_SENTENCE
    return (rate_of(f"{name}{backend} word count", sentences_, sum(ends.values()), seconds),
            dict(counts))


def pipeline_counts(state_dir: Path) -> Dict[bytes, int]:
    """The count tasks' final state: the newest version saved in ``state_dir``."""
    import pickle

    from storm_kafka_compat.executor.hosts.snapshots import StateStore
    store = StateStore(state_dir)
    versions = store.versions()
    if not versions:
        return {}
    _offsets, saved = store.read(versions[0])
    out: Dict[bytes, int] = {}
    for slot, data in saved.items():
        if slot[0] == "count":
            kind, counts = pickle.loads(data)
            for word, n in counts.items():
                out[word] = out.get(word, 0) + n
    return out


def word_count_figures(spark: "SparkSession", servers: Any, *, backends: List[str], repeat: int,
                       careful: Mapping[str, Mapping[str, Any]], sentences_n: int,
                       partitions: int, work_dir: Path, trigger_interval_ms: Optional[int],
                       log_line: Callable[[str], None]) -> Dict[str, Any]:
    """The figure per backend: plain job and pipeline side by side, ``repeat`` rounds."""
    from storm_kafka_compat.workshop.bench.analysis import summarize
    from storm_kafka_compat.workshop.bench.pipeline import pipeline_rate
    topic = f"skc-bench-wordcount-{int(time.time())}"
    servers.create(topic, partitions)
    servers.produce(topic, ((i % partitions, None, s)
                            for i, s in enumerate(sentences(sentences_n))))
    ends = {p: sentences_n // partitions + (1 if p < sentences_n % partitions else 0)
            for p in range(partitions)}
    log_line(f"word count: {sentences_n:,} sentences of {WORDS_PER_SENTENCE} words over "
             f"{partitions} partitions")
    out: Dict[str, Any] = {"sentences": sentences_n, "partitions": partitions}
    for backend in backends:
        plain_runs: List[Dict[str, Any]] = []
        bolt_runs: List[Dict[str, Any]] = []
        pipe_runs: List[Dict[str, Any]] = []
        for round_ in range(repeat):
            log_line(f"word count, plain job: {backend} (round {round_ + 1})")
            rate, truth = plain_word_count(spark, backend=backend, topic=topic, ends=ends,
                                           consumer=careful[backend])
            plain_runs.append(rate)
            log_line(f"word count, the bolts called in the plain job: {backend} "
                     f"(round {round_ + 1})")
            rate, called = plain_word_count(spark, backend=backend, topic=topic, ends=ends,
                                            consumer=careful[backend], bolts=True)
            if called != truth:
                raise RuntimeError(f"the {backend} plain job calling the bolts counted "
                                   "otherwise than its Counter")
            bolt_runs.append(rate)
            state = work_dir / f"wordcount-{backend}-{round_}"
            log_line(f"word count, pipeline: {backend} (round {round_ + 1})")
            pipe_runs.append(pipeline_rate(
                spark, topic=topic, partitions=partitions, bootstrap=servers.bootstrap,
                zk_port=servers.zk.port, backend=backend, kafka=servers.kafka,
                trigger_interval_ms=trigger_interval_ms, expected=sentences_n,
                spout_id=f"wordcount-{backend}-{int(time.time())}-{round_}",
                topology_spec={**WORD_COUNT, "topology.state.dir": str(state)}))
            got = pipeline_counts(state)
            if got != truth:
                wrong = sum(1 for w in truth if got.get(w) != truth[w])
                raise RuntimeError(f"the {backend} pipeline's word counts differ from the "
                                   f"plain job's on {wrong} of {len(truth)} words")
        plain, pipe, bolt = summarize(plain_runs), summarize(pipe_runs), summarize(bolt_runs)
        out[backend] = {"plain": plain, "pipeline": pipe, "bolt_calls": bolt,
                        "pipeline_over_plain": pipe["median"] / plain["median"],
                        "bolt_calls_over_plain": bolt["median"] / plain["median"],
                        "pipeline_over_bolt_calls": pipe["median"] / bolt["median"],
                        "per_round": [p["msgs_per_s"] / q["msgs_per_s"]
                                      for p, q in zip(pipe_runs, plain_runs)],
                        "bolt_calls_per_round": [b["msgs_per_s"] / q["msgs_per_s"]
                                                 for b, q in zip(bolt_runs, plain_runs)],
                        "first_over_steady": [p["start"]["first_over_steady"]
                                              for p in pipe_runs]}
    return out
