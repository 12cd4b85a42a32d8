"""The cost as the work grows: each case beside the careful plain job, side by side.

Three ways the work grows from the main figure (``messages`` x ``size`` B over
``partitions``, a trivial bolt):

* **partitions**: the same messages over more partitions (64 and 512 by default);
* **size**: the same bytes in larger values (10 KB and 1 MB by default: 400 MB in
  40,000 and 400 messages at the default size);
* **multi-stage**: the main topic through a topology whose fields grouping crosses
  partitions (:data:`~storm_kafka_compat.workshop.bench.pipeline.MULTI_STAGE`), beside the
  plain job with one shuffle
  (:func:`~storm_kafka_compat.workshop.bench.plain.plain_multi_stage_rate`).

Every case runs the plain job (the pipeline's consumer settings) and the pipeline
per backend, ``repeat`` rounds, alternating, on the same Spark session as the main
figures. Each row says how the per-message (and per-byte) cost moved against the
main figure of the same run: a cost that grows faster than the work shows up as a
``growth`` above 1.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Tuple

from storm_kafka_compat.workshop.bench.analysis import summarize

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: a topic's ``max.message.bytes`` and the producer's limit for the large-value cases
#: (1 MB values and their record overhead)
LARGE_MESSAGE_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class Case:
    """One scaling case: ``messages`` of ``size`` B over ``partitions``."""

    kind: str                 # "main", "partitions", "size" or "multi_stage"
    partitions: int
    messages: int
    size: int

    @property
    def name(self) -> str:
        if self.kind == "main":
            return f"main: {self.partitions} partitions, {self.size:,} B values"
        if self.kind == "multi_stage":
            return f"multi-stage, {self.partitions} partitions"
        if self.kind == "size":
            return f"{self.size:,} B values"
        return f"{self.partitions:,} partitions"

    @property
    def topic(self) -> str:
        return f"skc-bench-{self.kind}-{self.partitions}-{self.size}"


def cases(messages: int, size: int, partitions: int, *, more_partitions: List[int],
          sizes: List[int], multi_stage: bool) -> List[Case]:
    """The cases around a main figure of ``messages`` x ``size`` B over ``partitions``:
    the same messages over each of ``more_partitions``; the same bytes in values of
    each of ``sizes`` (at least one message per partition); the main topic through
    the multi-stage topology."""
    out = [Case("partitions", p, messages, size) for p in more_partitions if p != partitions]
    total = messages * size
    out += [Case("size", partitions, max(partitions, total // s), s) for s in sizes
            if s != size]
    if multi_stage:
        out.append(Case("multi_stage", partitions, messages, size))
    return out


#: the main figure of a run: its case and ``{"plain": {backend: summary}, "pipeline": ...}``
Base = Tuple[Case, Mapping[str, Mapping[str, Dict[str, Any]]]]


def row_figures(case: Case, plain: Mapping[str, Dict[str, Any]],
                pipeline: Mapping[str, Dict[str, Any]], base: Optional[Base] = None,
                spark_arrow: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """A case's row: per backend the two rates (msg/s and MB/s), the pipeline / plain
    ratio, the microseconds per message and, against the main figure ``base`` of the
    same run, how much the cost per message (``partitions``, ``multi_stage``) or per
    byte (``size``) grew (``*_growth``: 1.0 = in proportion to the work). With
    ``spark_arrow`` (Spark's Kafka source read with ``mapInArrow`` on the same topic):
    ``pipeline_over_spark_arrow``."""
    row: Dict[str, Any] = {"case": case.kind, "name": case.name, "partitions": case.partitions,
                           "messages": case.messages, "size": case.size,
                           "plain": dict(plain), "pipeline": dict(pipeline), "backends": {}}
    if spark_arrow is not None:
        row["spark_arrow"] = dict(spark_arrow)
    for backend in pipeline:
        if backend not in plain:
            continue
        figures: Dict[str, Any] = {}
        for name, section in (("plain", plain), ("pipeline", pipeline)):
            rate = section[backend]["msgs_per_s"]
            figures[f"{name}_msgs_per_s"] = rate
            figures[f"{name}_mb_per_s"] = rate * case.size / 1e6
            figures[f"{name}_us_per_message"] = 1e6 / rate if rate else None
            if base is not None and backend in base[1].get(name, {}):
                base_rate = base[1][name][backend]["msgs_per_s"]
                if rate and base_rate:
                    # cost per unit of work, this case over the main figure
                    unit = case.size / base[0].size if case.kind == "size" else 1.0
                    figures[f"{name}_growth"] = (base_rate / rate) / unit
        p, q = figures["pipeline_msgs_per_s"], figures["plain_msgs_per_s"]
        figures["pipeline_over_plain"] = p / q if q else None
        if spark_arrow is not None:
            a = spark_arrow.get("msgs_per_s")
            figures["pipeline_over_spark_arrow"] = p / a if a else None
        row["backends"][backend] = figures
    return row


def run_case(case: Case, *, backends: List[str], repeat: int,
             plain: Callable[[Case, str], Dict[str, Any]],
             pipeline: Callable[[Case, str, int], Dict[str, Any]],
             log_line: Callable[[str], None],
             source: Optional[Callable[[Case], Dict[str, Any]]] = None
             ) -> Dict[str, Dict[str, Any]]:
    """``repeat`` rounds of the plain job and the pipeline per backend, alternating (and
    of ``source``, Spark's Kafka source, once a round);
    ``{"plain": {backend: summary}, "pipeline": {backend: summary}}`` (and
    ``"spark_arrow": {"source": summary}``)."""
    runs: Dict[str, Dict[str, List[Dict[str, Any]]]] = {
        "plain": {b: [] for b in backends}, "pipeline": {b: [] for b in backends}}
    if source is not None:
        runs["spark_arrow"] = {"source": []}
    for round_ in range(repeat):
        if source is not None:
            log_line(f"scaling, {case.name}: Spark's Kafka source, mapInArrow "
                     f"(round {round_ + 1})")
            runs["spark_arrow"]["source"].append(source(case))
        for backend in backends:
            log_line(f"scaling, {case.name}: plain job {backend} (round {round_ + 1})")
            runs["plain"][backend].append(plain(case, backend))
            log_line(f"scaling, {case.name}: pipeline {backend} (round {round_ + 1})")
            runs["pipeline"][backend].append(pipeline(case, backend, round_))
    return {kind: {b: summarize(r) for b, r in by.items()} for kind, by in runs.items()}


def scaling_rows(spark: "SparkSession", servers: Any, *, base: Base, more: List[Case],
                 backends: List[str], repeat: int, careful: Mapping[str, Mapping[str, Any]],
                 main_topic: str, warmup_topic: str,
                 warmup_ends: Mapping[int, int], trigger_interval_ms: Optional[int],
                 log_line: Callable[[str], None],
                 source_options: Optional[Mapping[str, str]] = None) -> List[Dict[str, Any]]:
    """Every case of ``more`` on the embedded ``servers``: its topic written by the
    batching producer (the multi-stage case reads ``main_topic``, the main figure's),
    then :func:`run_case` (with Spark's Kafka source read with ``mapInArrow`` when
    ``source_options`` are given); the rows, the main figure's first."""
    from storm_kafka_compat.workshop.bench.pipeline import pipeline_rate
    from storm_kafka_compat.workshop.bench.plain import plain_multi_stage_rate, plain_rate

    stamp = int(time.time())
    base_case = base[0]
    rows = [row_figures(base_case, base[1]["plain"], base[1]["pipeline"])]

    def ends_of(case: Case) -> Dict[int, int]:
        p, n = case.partitions, case.messages
        return {q: n // p + (1 if q < n % p else 0) for q in range(p)}

    def plain(case: Case, backend: str) -> Dict[str, Any]:
        rate = plain_multi_stage_rate if case.kind == "multi_stage" else plain_rate
        return rate(spark, backend=backend, topic=topic_of[case], ends=ends_of(case),
                    consumer=careful[backend])

    def pipeline(case: Case, backend: str, round_: int) -> Dict[str, Any]:
        return pipeline_rate(
            spark, topic=topic_of[case], partitions=case.partitions,
            bootstrap=servers.bootstrap, zk_port=servers.zk.port, backend=backend,
            kafka=servers.kafka, trigger_interval_ms=trigger_interval_ms,
            multi_stage=case.kind == "multi_stage", expected=case.messages,
            spout_id=f"scale-{case.kind}-{case.partitions}-{case.size}-{backend}-{stamp}-"
                     f"{round_}")

    def arrow(case: Case) -> Dict[str, Any]:
        from storm_kafka_compat.workshop.bench.spark_kafka import arrow_rate
        return arrow_rate(spark, topic=topic_of[case], ends=ends_of(case),
                          options=source_options or {})

    topic_of: Dict[Case, str] = {}
    for case in more:
        if case.kind == "multi_stage" and (case.partitions, case.messages, case.size) == (
                base_case.partitions, base_case.messages, base_case.size):
            topic_of[case] = main_topic                # already written
        else:
            topic_of[case] = case.topic
            large = case.size > 512 * 1024
            servers.create(case.topic, case.partitions,
                           config={"max.message.bytes": LARGE_MESSAGE_BYTES} if large else {})
            value = (b"0123456789" * (case.size // 10 + 1))[:case.size]
            t0 = time.monotonic()
            servers.produce(case.topic, ((i % case.partitions, None, value)
                                         for i in range(case.messages)),
                            max_message_bytes=LARGE_MESSAGE_BYTES if large else None)
            log_line(f"scaling, {case.name}: produced {case.messages:,} messages of "
                     f"{case.size:,} B over {case.partitions} partitions in "
                     f"{time.monotonic() - t0:.1f} s")
        if case.kind == "multi_stage":
            for backend in backends:              # the stage modules imported on the workers
                log_line(f"scaling, {case.name}: warm-up {backend}")
                plain_multi_stage_rate(spark, backend=backend, topic=warmup_topic,
                                       ends=warmup_ends, consumer=careful[backend])
                pipeline_rate(spark, topic=warmup_topic, partitions=len(warmup_ends),
                              bootstrap=servers.bootstrap, zk_port=servers.zk.port,
                              backend=backend, kafka=servers.kafka,
                              trigger_interval_ms=trigger_interval_ms, multi_stage=True,
                              expected=sum(warmup_ends.values()),
                              spout_id=f"scale-warmup-{backend}-{stamp}")
        figures = run_case(case, backends=backends, repeat=repeat, plain=plain,
                           pipeline=pipeline, log_line=log_line,
                           source=arrow if source_options is not None else None)
        rows.append(row_figures(case, figures["plain"], figures["pipeline"], base,
                                figures.get("spark_arrow", {}).get("source")))
    return rows
