"""``storm-kafka-compat bench``: the benchmark of CONTRACT section 6."""

from __future__ import annotations

import statistics
import sys
from typing import Callable, Any, Dict, List, Optional, Tuple

import click

from storm_kafka_compat.cli.render import as_json, err, table

COLUMNS = ("FIGURE", "VALUE", "UNIT", "NOTE")


def _ints(_ctx: Any, param: Any, value: Optional[str]) -> Optional[Tuple[int, ...]]:
    if value is None:
        return None
    try:
        out = tuple(int(v) for v in value.split(",") if v.strip())
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a comma-separated list of integers, "
                                 "e.g. 1,100,10000", param=param) from None
    if not out or min(out) < 1:
        raise click.BadParameter(f"{value!r}: give at least one count, each >= 1", param=param)
    return out


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _word_count_rows(r: Dict[str, Any], add: Callable[..., None],
                     spread: Callable[[Dict[str, Any]], str]) -> None:
    """The two-stage figure with its state kept, one row per backend, and the Python
    bolts' cost per tuple."""
    for kind, us in (r.get("python_bolts") or {}).get("us_per_tuple", {}).items():
        add(f"python bolt {kind} per tuple", us, "us",
            f"{r['python_bolts']['over_own'][kind]:.2f}x the project's own bolt", 2)
    wc = r.get("word_count") or {}
    for backend, f in wc.items():
        if not isinstance(f, dict):
            continue
        add(f"word count (state kept): pipeline {backend} / plain job", f["pipeline_over_plain"],
            "x", f"{wc['sentences']:,} sentences over {wc['partitions']} partitions: pipeline "
            f"{spread(f['pipeline'])}plain {spread(f['plain'])}(sentences/s)", 3)
        if "bolt_calls" in f:
            add(f"word count: the bolts called per tuple in the plain job {backend} / plain "
                "job", f["bolt_calls_over_plain"], "x",
                f"the bound of any engine calling these bolts per tuple; "
                f"{spread(f['bolt_calls'])}the pipeline at "
                f"{f['pipeline_over_bolt_calls']:.3f}x of it", 3)
        starts = [s for s in f.get("first_over_steady") or [] if s is not None]
        if starts:
            from storm_kafka_compat.workshop.bench.pipeline import FIRST_BATCHES
            add(f"word count: pipeline {backend} first batches / steady state",
                statistics.median(starts), "x",
                f"the first {FIRST_BATCHES} batches with data against the rest, per round: "
                + ", ".join(f"{s:.2f}" for s in starts), 2)


def figure_rows(r: Dict[str, Any]) -> List[Dict[str, str]]:
    """The report as table rows, one figure per row (ratios and targets last)."""
    rows: List[Dict[str, str]] = []

    def add(figure: str, value: Any, unit: str, note: str = "", digits: int = 1) -> None:
        rows.append({"FIGURE": figure, "VALUE": _fmt(value, digits), "UNIT": unit, "NOTE": note})

    def spread(f: Dict[str, Any]) -> str:
        if "min" not in f:
            return ""
        return (f"min/median/max {f['min']:,.0f}/{f['median']:,.0f}/{f['max']:,.0f} over "
                f"{len(f['runs'])} rounds; ")

    from storm_kafka_compat.workshop.bench.analysis import SOURCE_LABELS
    for kind in ("raw", "adapter"):
        for backend, f in r["fetch"][kind].items():
            add(f"fetch {kind} {backend}", f["msgs_per_s"], "msg/s",
                f"{spread(f)}{f['messages']:,} in {f['seconds']:.2f} s", 0)
    for backend, f in r.get("plain", {}).items():
        add(f"plain PySpark job {backend} (the pipeline's consumer settings)", f["msgs_per_s"],
            "msg/s", f"{spread(f)}{f['messages']:,} in {f['seconds']:.2f} s", 0)
    for backend, f in r.get("plain_defaults", {}).items():
        add(f"plain PySpark job {backend} (library defaults)", f["msgs_per_s"], "msg/s",
            f"{spread(f)}{f['messages']:,} in {f['seconds']:.2f} s", 0)
    for kind, f in r.get("spark_source", {}).items():
        add(f"Spark's Kafka source ({SOURCE_LABELS.get(kind, kind)})", f["msgs_per_s"], "msg/s",
            f"{spread(f)}{f['messages']:,} in {f['seconds']:.2f} s", 0)
    for front, label in (("storm_source", 'format("storm-kafka"), mapInArrow'),
                         ("dataframe", "DataFrame mode, mapInArrow")):
        for backend, f in r.get("frontends", {}).get(front, {}).items():
            add(f"{label} {backend}", f["msgs_per_s"], "msg/s",
                f"{spread(f)}{f['messages']:,} in {f['seconds']:.2f} s", 0)
    for backend, f in r["pipeline"].items():
        add(f"pipeline {backend}", f["msgs_per_s"], "msg/s",
            f"{spread(f)}{f['messages']:,} in {f['seconds']:.2f} s, {f['batches']} batches, "
            f"{f['commits']} docs in {f['commit_round_trips']} ZK round trips", 0)
    for backend, f in r.get("cluster", {}).items():
        local = r["pipeline"].get(backend, {}).get("median")
        vs = f"; {f['median'] / local:.2f}x local[2]" if local else ""
        add(f"pipeline {backend} on {f['workers']} workers", f["msgs_per_s"], "msg/s",
            f"{spread(f)}{f['messages']:,} in {f['seconds']:.2f} s{vs}", 0)
    _scaling_rows(r, add)
    _word_count_rows(r, add, spread)
    for backend, lat in r.get("latency", {}).items():
        note = (f"at {lat['rate_msgs_per_s']:,.0f} msg/s for {lat['seconds']:.0f} s, "
                f"{lat['samples']:,} samples")
        add(f"latency p50 {backend}", lat["p50_ms"], "ms", note, 0)
        add(f"latency p99 {backend}", lat["p99_ms"], "ms", note, 0)
    for scenario, m in r["memory"].items():
        add(f"pending {scenario} ranges", m["ranges_bytes_per_offset"], "B/offset",
            f"{m['in_flight']:,} in flight, {m['failures']:,} failed", 3)
        add(f"pending {scenario} sorted map", m["map_bytes_per_offset"], "B/offset", "", 1)
    for z in r["zookeeper"]:
        add(f"ZK commit {z['partitions']:,} partitions", z["commit_ms"], "ms",
            f"{z['round_trips_per_commit']} round trips (floor {z['min_round_trips']}), "
            f"{z['document_bytes']:,} B", 2)
    for pl in r["planning"]:
        add(f"plan {pl['partitions']:,} partitions", pl["plan_ms"], "ms/batch",
            f"apply {pl['apply_ms']:.2f} ms; driver state {pl['state_bytes'] / 1e6:,.1f} MB "
            f"({pl['state_bytes_per_partition']:,.0f} B a partition), a batch's peak "
            f"{pl['batch_peak_bytes'] / 1e6:,.1f} MB, plans {pl['plan_bytes']:,} B out, "
            f"results {pl['result_bytes']:,} B back", 2)
    ratios = r["ratios"]
    for group in ("pipeline_over_plain", "pipeline_over_plain_defaults",
                  "plain_over_plain_defaults", "pipeline_over_spark_batch",
                  "pipeline_over_spark_streaming", "pipeline_over_raw", "plain_over_raw",
                  "adapter_over_raw", "pipeline_over_adapter",
                  "confluent_over_kafka_python", "map_over_ranges"):
        for key, value in ratios[group].items():
            if value is not None:
                add(f"ratio {group} {key}", value, "x", "", 2)
    for t in r["targets"]:
        verdict = {True: "met", False: "MISSED", None: "not measured"}[t["met"]]
        if t.get("note"):
            verdict = t["note"]
        add(f"target: {t['name']}", t["value"], t["target"], verdict, 2)
    return rows


def _scaling_rows(r: Dict[str, Any], add: Any) -> None:
    """The scaling rows of :func:`figure_rows`."""
    for row in r.get("scaling", []):
        for backend, f in row["backends"].items():
            growth = f.get("pipeline_growth")
            add(f"scaling {row['name']}: pipeline {backend} / plain job", f["pipeline_over_plain"],
                "x", f"{row['messages']:,} x {row['size']:,} B over {row['partitions']:,} "
                f"partitions: pipeline {f['pipeline_msgs_per_s']:,.0f} msg/s "
                f"({f['pipeline_mb_per_s']:,.1f} MB/s), plain {f['plain_msgs_per_s']:,.0f} msg/s"
                + ("" if growth is None else
                   f"; cost per {'byte' if row['case'] == 'size' else 'message'} "
                   f"{growth:.2f}x the main figure's (plain {f['plain_growth']:.2f}x)"), 2)
            if f.get("pipeline_over_spark_arrow") is not None:
                add(f"scaling {row['name']}: pipeline {backend} / Spark's Kafka source "
                    "(mapInArrow)", f["pipeline_over_spark_arrow"], "x",
                    f"Spark's source {row['spark_arrow']['msgs_per_s']:,.0f} msg/s", 2)


def _trigger_ms(value: Optional[str]) -> Optional[int]:
    """``--trigger-interval`` in milliseconds (a bad value is a usage error)."""
    if value is None:
        return None
    from storm_kafka_compat.config.fields import parse_interval_ms
    from storm_kafka_compat.errors import ConfigError
    try:
        return parse_interval_ms(int(value) if value.strip().isdigit() else value,
                                 "--trigger-interval")
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint="--trigger-interval") from None


@click.command()
@click.option("--json", "as_json_flag", is_flag=True, help="Print the report as one JSON document.")
@click.option("--messages", type=click.IntRange(min=1), default=4_000_000, show_default=True,
              help="Messages in the benchmark topic (the throughput targets are set at 4M "
                   "x 100 B over 4 partitions; docs/performance.md says why).")
@click.option("--partitions", type=click.IntRange(min=1), default=4, show_default=True,
              help="Partitions of the benchmark topic.")
@click.option("--size", type=click.IntRange(min=1), default=100, show_default=True,
              help="Bytes per message.")
@click.option("--backends", default="kafka-python,confluent", show_default=True,
              help="Fetch backends to measure (confluent is skipped if not installed).")
@click.option("--memory-window", type=click.IntRange(min=100), default=100_000,
              show_default=True, help="Offsets in flight in the pending-memory figures.")
@click.option("--zk-partitions", callback=_ints, default="1,100,10000", show_default=True,
              help="Partition counts of the ZooKeeper commit figures.")
@click.option("--plan-partitions", callback=_ints, default="10,1000,10000", show_default=True,
              help="Partition counts of the driver planning figures.")
@click.option("--warmup-messages", type=click.IntRange(min=1), default=500, show_default=True,
              help="Messages per partition of the warm-up pipeline run.")
@click.option("--no-pipeline", is_flag=True, help="Skip the Spark figures (plain job, "
              "pipeline, latency).")
@click.option("--broker", type=click.Choice(["kafka39", "kafka09", "tansu"]), default="kafka39",
              show_default=True, help="kafka39: a real Apache Kafka 3.9 broker (Java and "
              "Maven; Spark's Kafka source needs it); kafka09: Apache Kafka 0.9.0.1 (Java and "
              "npm); tansu: the embedded Kafka-protocol broker. One that cannot run here "
              "falls back to the next, and the report says so.")
@click.option("--no-spark-source", is_flag=True,
              help="Skip Spark's own Kafka source (batch and Structured Streaming).")
@click.option("--no-frontends", is_flag=True,
              help="Skip the project's own Spark front ends (format(\"storm-kafka\") and the "
                   "DataFrame mode) on the main topic.")
@click.option("--repeat", type=click.IntRange(min=1), default=3, show_default=True,
              help="Rounds of the raw, plain-job and pipeline figures (min/median/max).")
@click.option("--latency-seconds", type=click.FloatRange(min=0), default=10.0,
              show_default=True, help="How long the latency run produces (0 skips it).")
@click.option("--spark-cluster", type=click.IntRange(min=0), default=0, show_default=True,
              help="Also run the pipeline on a standalone Spark cluster of this many "
                   "one-core workers (started from pyspark's jars) beside local[2].")
@click.option("--scale-partitions", callback=_ints, default="64,512", show_default=True,
              help="The cost as the work grows: the main figure's messages over each of "
                   "these partition counts, beside the plain job.")
@click.option("--scale-sizes", callback=_ints, default="10000,1000000", show_default=True,
              help="The cost as the work grows: the main figure's bytes in values of each "
                   "of these sizes (bytes), beside the plain job.")
@click.option("--no-multi-stage", is_flag=True,
              help="Skip the multi-stage topology (fields grouping across partitions) "
                   "beside the plain job with one shuffle.")
@click.option("--no-scaling", is_flag=True,
              help="Skip every figure of the cost as the work grows (partitions, sizes, "
                   "multi-stage).")
@click.option("--word-count", type=click.IntRange(min=0), default=1_000_000, show_default=True,
              help="Sentences of the two-stage figure with its state kept: storm-starter's "
                   "WordCount (split, then a fields grouping on the word into 4 count tasks) "
                   "beside the plain job's Counter and reduceByKey (0 skips it).")
@click.option("--trigger-interval", default=None, metavar="DURATION",
              help="The pipelines' spark.triggerInterval: milliseconds or \"2 seconds\" "
                   "(default: the CONFIG default, half the 2 s commit interval). Longer "
                   "batches: more throughput, more latency.")
def bench(as_json_flag: bool, messages: int, partitions: int, size: int, backends: str,
          memory_window: int, zk_partitions: Tuple[int, ...], plan_partitions: Tuple[int, ...],
          warmup_messages: int, no_pipeline: bool, broker: str, repeat: int,
          latency_seconds: float, spark_cluster: int, trigger_interval: Optional[str],
          no_spark_source: bool, no_frontends: bool, scale_partitions: Tuple[int, ...],
          scale_sizes: Tuple[int, ...], no_multi_stage: bool, no_scaling: bool,
          word_count: int) -> int:
    """Measure fetch, plain-job, pipeline, latency, memory, ZooKeeper and planning
    figures on embedded servers.

    Starts a ZooKeeper (pyspark's jars) and a real Apache Kafka 3.9 broker (or 0.9.0.1,
    or tansu) on loopback, writes one topic with a batching producer, and measures
    side by side in one run, repeated: raw single-consumer rates, the plain PySpark
    job a user would write by hand (with the pipeline's consumer settings, and on the
    library's defaults), Spark's own Kafka source and the pipeline, per backend;
    then the end-to-end latency at half the pipeline's median rate,
    pending-tracking memory, ZooKeeper commit latency and round trips, and
    driver planning time, with their ratios. Progress goes to stderr.
    """
    import logging

    from storm_kafka_compat.workshop.bench.analysis import BACKENDS
    from storm_kafka_compat.workshop.bench.runner import BenchOptions, run_bench
    from storm_kafka_compat.cli.console import DECISIONS
    # the benchmark's runs start many partitions: their start decisions are not news
    if not logging.getLogger("storm_kafka_compat").isEnabledFor(logging.INFO):
        logging.getLogger(DECISIONS).setLevel(logging.WARNING)

    chosen = tuple(b.strip() for b in backends.split(",") if b.strip())
    unknown = [b for b in chosen if b not in BACKENDS]
    if unknown or not chosen:
        raise click.BadParameter(f"unknown backend(s) {unknown or backends!r}; choose from "
                                 f"{', '.join(BACKENDS)}", param_hint="--backends")
    options = BenchOptions(messages=messages, partitions=partitions, size=size, backends=chosen,
                           memory_window=memory_window, zk_partitions=zk_partitions,
                           plan_partitions=plan_partitions, warmup_messages=warmup_messages,
                           pipeline=not no_pipeline, broker=broker, repeat=repeat,
                           latency_seconds=latency_seconds, spark_cluster=spark_cluster,
                           trigger_interval_ms=_trigger_ms(trigger_interval),
                           spark_source=not no_spark_source, frontends=not no_frontends,
                           scale_partitions=() if no_scaling else scale_partitions,
                           scale_sizes=() if no_scaling else scale_sizes,
                           multi_stage=not (no_scaling or no_multi_stage),
                           word_count=0 if no_pipeline else word_count)
    report = run_bench(options, log_line=err)
    report["command"] = "storm-kafka-compat " + " ".join(sys.argv[1:]) if sys.argv else "bench"
    if as_json_flag:
        as_json(report)
    else:
        table(figure_rows(report), COLUMNS)
        for reason in report["skipped"]:
            err(f"skipped: {reason}")
        err(f"benchmark took {report['seconds']:.0f} s on {report['machine']['cpus']} CPUs "
            f"({report['machine']['cpu']})")
    return 0
