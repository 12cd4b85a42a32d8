"""``storm-kafka-compat bench``: every figure of CONTRACT section 6 in one run.

Order: the pure figures first (pending memory, driver planning), then on
embedded servers (a ZooKeeper from pyspark's jars and a real Apache Kafka 0.9.0.1
broker, or tansu with ``--broker tansu``) with one topic written once by a
batching producer: raw single-consumer rates, the adapters' rates, ZooKeeper
commits; then on Spark, ``repeat`` rounds of the plain PySpark job a user would
write by hand and the pipeline, per backend, side by side; last the end-to-end
latency at half the pipeline's median rate. Absolute numbers on a shared 2-core
machine are noisy; the ratios, measured in the same run on the same data, are
what to compare, with min/median/max over the rounds.

tansu misreports the high watermark when a produce batch holds several records,
so with ``--broker tansu`` the topic is written one record per batch (the
pipeline stops at the log end); the real broker is exact with batches.
"""

from __future__ import annotations

import importlib
import logging
import os
import platform
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from storm_kafka_compat.workshop.bench.analysis import (BACKENDS, check_targets, compute_ratios,
                                                        summarize)
from storm_kafka_compat.workshop.embedded import (BROKERS, EmbeddedServers, missing_broker,
                                                  spark_cluster, spark_kafka_jars)
from storm_kafka_compat.config.kafka_settings import KafkaSettings, kafka_settings_from_dict

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

TOPIC = "skc-bench"
WARMUP_TOPIC = "skc-bench-warmup"
LATENCY_TOPIC = "skc-bench-latency"


@dataclass(frozen=True)
class BenchOptions:
    """What to measure and how big.

    Attributes
    ----------
    messages, partitions, size : int
        The main topic: ``messages`` messages of ``size`` bytes over ``partitions``.
    backends : tuple of str
        Fetch backends to measure (confluent is skipped, with the reason, when
        confluent-kafka is not importable).
    memory_window : int
        Offsets in flight in the pending-memory scenarios.
    failure_rate : float
        Share of failed offsets in the ``random`` and ``batches`` scenarios.
    zk_partitions, plan_partitions : tuple of int
        Partition counts of the ZooKeeper-commit and driver-planning figures.
    warmup_messages : int
        Messages per partition of the warm-up topic (a full pipeline run per backend).
    pipeline : bool
        Measure the Spark pipeline (needs pyspark and Java).
    broker : str
        ``kafka09`` (a real Apache Kafka 0.9.0.1 broker, the default) or ``tansu``.
    repeat : int
        Rounds of the raw, plain-job and pipeline figures (min/median/max).
    latency_seconds : float
        How long the latency run produces (0: no latency figure).
    spark_cluster : int
        Also run the pipeline on a standalone cluster of this many one-core workers
        started from pyspark's jars (0: local[2] only).
    trigger_interval_ms : int, optional
        The pipelines' ``spark.triggerInterval`` (None: the default, half the 2 s
        commit interval).
    spark_source : bool
        Measure Spark's own Kafka source beside the plain job (a 0.11+ broker).
    frontends : bool
        Measure the project's own Spark front ends (``format("storm-kafka")`` and the
        DataFrame mode) on the main topic, per backend.
    scale_partitions, scale_sizes : tuple of int
        The cost as the work grows (:mod:`.scaling`): the main figure's messages over
        each of these partition counts, its bytes in values of each of these sizes.
    multi_stage : bool
        The main topic through a topology whose fields grouping crosses partitions,
        beside the plain job with one shuffle.
    word_count : int
        Sentences of the two-stage figure with its state kept (storm-starter's
        WordCount against the plain job's ``reduceByKey``, :mod:`.wordcount`); 0 skips it.
    """

    messages: int = 4_000_000
    partitions: int = 4
    size: int = 100
    backends: Tuple[str, ...] = BACKENDS
    memory_window: int = 100_000
    failure_rate: float = 0.01
    zk_partitions: Tuple[int, ...] = (1, 100, 10_000)
    plan_partitions: Tuple[int, ...] = (10, 1_000, 10_000)
    warmup_messages: int = 500
    pipeline: bool = True
    broker: str = "kafka39"
    repeat: int = 3
    latency_seconds: float = 10.0
    spark_cluster: int = 0
    trigger_interval_ms: Optional[int] = None
    spark_source: bool = True
    frontends: bool = True
    scale_partitions: Tuple[int, ...] = (64, 512)
    scale_sizes: Tuple[int, ...] = (10_000, 1_000_000)
    multi_stage: bool = True
    word_count: int = 1_000_000


@dataclass
class _Report:
    machine: Dict[str, Any]
    options: Dict[str, Any]
    fetch: Dict[str, Any] = field(default_factory=lambda: {"raw": {}, "adapter": {}})
    #: the plain job with the pipeline's consumer settings (the baseline)
    plain: Dict[str, Any] = field(default_factory=dict)
    #: the plain job on the library's defaults (a second, labelled row)
    plain_defaults: Dict[str, Any] = field(default_factory=dict)
    #: the settings each backend's baseline ran with
    plain_settings: Dict[str, Any] = field(default_factory=dict)
    #: Spark's own Kafka source: ``arrow`` (batch, mapInArrow), ``batch`` (Row by Row),
    #: ``count`` (JVM only) and ``streaming`` (mapInArrow per batch)
    spark_source: Dict[str, Any] = field(default_factory=dict)
    #: the project's Spark front ends: ``storm_source`` (``format("storm-kafka")``) and
    #: ``dataframe`` (the DataFrame mode), per backend
    frontends: Dict[str, Any] = field(default_factory=dict)
    pipeline: Dict[str, Any] = field(default_factory=dict)
    #: the pipeline on a standalone cluster (``spark_cluster`` workers), per backend
    cluster: Dict[str, Any] = field(default_factory=dict)
    #: the cost as the work grows (:mod:`.scaling`): one row per case, the main first
    scaling: List[Dict[str, Any]] = field(default_factory=list)
    #: the two-stage figure with its state kept (:mod:`.wordcount`), per backend
    word_count: Dict[str, Any] = field(default_factory=dict)
    #: streamparse bolts' cost per tuple against the project's own (:mod:`.python_bolts`)
    python_bolts: Dict[str, Any] = field(default_factory=dict)
    latency: Dict[str, Any] = field(default_factory=dict)
    memory: Dict[str, Any] = field(default_factory=dict)
    zookeeper: List[Dict[str, Any]] = field(default_factory=list)
    planning: List[Dict[str, Any]] = field(default_factory=list)
    ratios: Dict[str, Any] = field(default_factory=dict)
    targets: List[Dict[str, Any]] = field(default_factory=list)
    skipped: List[str] = field(default_factory=list)
    seconds: float = 0.0


def _version(module: str) -> Optional[str]:
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return None
    return str(getattr(mod, "__version__", None) or getattr(mod, "version", lambda: "?")())


def machine_info() -> Dict[str, Any]:
    """Where the figures come from: CPU, OS, Python and client versions, load."""
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    info: Dict[str, Any] = {
        "platform": platform.platform(), "cpu": cpu, "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "kafka-python": _version("kafka"), "confluent-kafka": _version("confluent_kafka"),
        "pyspark": _version("pyspark"), "kazoo": _version("kazoo"),
    }
    try:
        import confluent_kafka
        info["librdkafka"] = confluent_kafka.libversion()[0]
    except ImportError:
        pass
    try:
        info["load_average"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    return info


def run_bench(options: BenchOptions = BenchOptions(), *, spark: Optional["SparkSession"] = None,
              log_line: Callable[[str], None] = lambda s: None) -> Dict[str, Any]:
    """Run every figure; return the report as a JSON-ready dict.

    Parameters
    ----------
    options : BenchOptions
    spark : SparkSession, optional
        Used for the pipeline figures; created (``local[2]``) and stopped when
        omitted and none is active.
    log_line : callable
        Receives progress lines (the CLI prints them on stderr).
    """
    started = time.monotonic()
    report = _Report(machine=machine_info(), options=asdict(options))
    backends = list(options.backends)
    if "confluent" in backends and _version("confluent_kafka") is None:
        backends.remove("confluent")
        report.skipped.append("confluent: confluent-kafka is not installed "
                              "(pip install storm-kafka-compat[confluent])")

    from storm_kafka_compat.workshop.bench.memory import pending_memory
    from storm_kafka_compat.workshop.bench.planning import planning_time
    for scenario in ("in_order", "random", "batches"):
        log_line(f"pending memory: {scenario}, {options.memory_window:,} offsets in flight")
        report.memory[scenario] = pending_memory(
            scenario, window=options.memory_window, failure_rate=options.failure_rate,
            batch=max(1, min(10_000, options.memory_window // 10)))
    for n in options.plan_partitions:
        log_line(f"driver planning: {n:,} partitions")
        report.planning.append(planning_time(n))
    _python_bolts(report, log_line)

    _with_servers(options, backends, report, spark, log_line)
    as_dict = asdict(report)
    as_dict["ratios"] = compute_ratios(as_dict)
    as_dict["targets"] = check_targets(as_dict)
    as_dict["seconds"] = time.monotonic() - started
    return as_dict


def _python_bolts(report: _Report, log_line: Callable[[str], None]) -> None:
    """The per-tuple cost of a streamparse bolt, in process and over multilang, against
    the same logic as the project's own bolt (:mod:`.python_bolts`)."""
    from storm_kafka_compat.workshop.bench.python_bolts import measure, quickstart_src
    if quickstart_src() is None:
        report.skipped.append("python bolts: streamparse is not installed "
                              "(pip install storm-kafka-compat[streamparse])")
        return
    log_line("python bolts: streamparse in process and over multilang, per tuple")
    figures = measure()
    report.python_bolts = {"us_per_tuple": figures,
                           "over_own": {k: v / figures["own"] for k, v in figures.items()}}


def _servers(options: BenchOptions, base: str, report: _Report) -> EmbeddedServers:
    """The broker asked for, else the next of kafka39, kafka09, tansu that can run
    here (the report says why)."""
    order = list(BROKERS)
    for broker in order[order.index(options.broker):]:
        reason = missing_broker(broker)
        if reason is None:
            return EmbeddedServers(broker, base)
        report.skipped.append(f"{broker}: {reason}; trying the next broker")
    raise AssertionError("tansu always runs")


def _settings(servers: EmbeddedServers) -> KafkaSettings:
    """The client settings every client of the servers' broker needs (``api_version``)."""
    return kafka_settings_from_dict(servers.kafka)


def _with_servers(options: BenchOptions, backends: List[str], report: _Report,
                  spark: Optional["SparkSession"], log_line: Callable[[str], None]) -> None:
    from storm_kafka_compat.config import SpoutConfig, StaticHosts
    from storm_kafka_compat.workshop.bench.fetch import access_rate, raw_confluent, raw_kafka_python
    from storm_kafka_compat.workshop.bench.zk import commit_latency

    with tempfile.TemporaryDirectory(prefix="skc-bench-") as tmp, \
            _servers(options, tmp, report) as servers:
        report.machine["broker"] = servers.name
        log_line(servers.describe())
        p, n = options.partitions, options.messages
        servers.create(TOPIC, p)
        value = (b"0123456789" * (options.size // 10 + 1))[:options.size]
        t0 = time.monotonic()
        servers.produce(TOPIC, ((i % p, None, value) for i in range(n)))
        log_line(f"produced {n:,} messages of {options.size} B over {p} partitions in "
                 f"{time.monotonic() - t0:.1f} s")

        raw_runs: Dict[str, List[Dict[str, Any]]] = {b: [] for b in backends}
        for round_ in range(options.repeat):
            for backend in backends:
                log_line(f"raw single-consumer fetch: {backend} (round {round_ + 1})")
                raw = raw_confluent if backend == "confluent" else raw_kafka_python
                raw_runs[backend].append(raw(servers.bootstrap, TOPIC, p, n,
                                             settings=_settings(servers)))
        for backend in backends:
            report.fetch["raw"][backend] = summarize(raw_runs[backend])
        spout = SpoutConfig(hosts=StaticHosts({}), topic=TOPIC, zk_root="/skc-bench", id="x")
        for backend in backends:
            log_line(f"adapter fetch, one thread: {backend}")
            report.fetch["adapter"][backend] = access_rate(backend, servers.bootstrap, spout, p,
                                                           n, settings=_settings(servers))

        for count in options.zk_partitions:
            log_line(f"ZooKeeper commits: {count:,} partitions")
            report.zookeeper.append(commit_latency(servers.zk.connect_string, count))

        if options.pipeline:
            _pipelines(options, backends, report, spark, servers, log_line)
            if options.spark_cluster:
                _cluster_pipelines(options, backends, report, servers, log_line)
        else:
            report.skipped.append("pipeline: not requested")


def _spark_session(options: BenchOptions, servers: EmbeddedServers, report: _Report
                   ) -> Tuple[Any, bool]:
    """A ``local[2]`` session for the Spark figures (with Spark's Kafka source on
    ``spark.jars`` when it is measured); whether this run owns it."""
    from pyspark.sql import SparkSession

    from storm_kafka_compat.config import SparkConfig
    from storm_kafka_compat.engine.spark import get_spark
    conf: Dict[str, str] = {}
    if _spark_source_wanted(options, servers, report):
        import pyspark
        try:
            version, jars = spark_kafka_jars(pyspark.__version__)
        except Exception as exc:  # noqa: BLE001 - reported, the rest still runs
            report.skipped.append(f"Spark's Kafka source: {exc}")
        else:
            conf["spark.jars"] = ",".join(jars)
            report.machine["spark_kafka_source"] = version
            if version != pyspark.__version__:
                report.machine["spark_kafka_source_note"] = (
                    f"spark-sql-kafka-0-10 {pyspark.__version__} is not on Maven Central; "
                    f"{version}'s jars run on pyspark {pyspark.__version__}")
    owned = SparkSession.getActiveSession() is None
    t0 = time.monotonic()
    spark = get_spark(SparkConfig(master="local[2]", app_name="storm-kafka-compat-bench",
                                  conf=conf))
    report.machine["spark_start_s"] = round(time.monotonic() - t0, 2)
    return spark, owned


def _spark_source_wanted(options: BenchOptions, servers: EmbeddedServers,
                         report: _Report) -> bool:
    if not options.spark_source:
        return False
    if servers.name != "kafka39":
        report.skipped.append(f"Spark's Kafka source: needs a 0.11+ Apache Kafka broker, "
                              f"this run has {servers.name}")
        return False
    return True


def _pipelines(options: BenchOptions, backends: List[str], report: _Report,
               spark: Optional["SparkSession"], servers: EmbeddedServers,
               log_line: Callable[[str], None]) -> None:
    from storm_kafka_compat.workshop.bench.pipeline import bench_job, pipeline_rate
    from storm_kafka_compat.workshop.bench.plain import (careful_consumer, default_consumer,
                                                         plain_rate)
    from storm_kafka_compat.workshop.bench.frontends import frontend_figures
    from storm_kafka_compat.workshop.bench.spark_kafka import (SOURCE_KINDS, source_options,
                                                               source_round)

    owned = False
    if spark is None:
        spark, owned = _spark_session(options, servers, report)
    source = "spark_kafka_source" in report.machine
    trigger = options.trigger_interval_ms
    try:
        p, n = options.partitions, options.messages
        bootstrap, zk_port = servers.bootstrap, servers.zk.port
        servers.create(WARMUP_TOPIC, p)
        servers.produce(WARMUP_TOPIC, [(i % p, None, b"warm-up")
                                       for i in range(options.warmup_messages * p)])
        warm_ends = {q: options.warmup_messages for q in range(p)}
        ends = {q: n // p + (1 if q < n % p else 0) for q in range(p)}
        stamp = int(time.time())
        # the pipelines' SpoutConfig: the plain job and Spark's source get its settings
        spout = bench_job(topic=TOPIC, partitions=p, bootstrap=bootstrap, zk_port=zk_port,
                          spout_id="settings", backend="kafka-python").spout
        careful = {b: careful_consumer(b, bootstrap, spout, _settings(servers).for_backend(b))
                   for b in backends}
        defaults = {b: default_consumer(b, bootstrap, _settings(servers).for_backend(b))
                    for b in backends}
        report.plain_settings = {b: {k: v for k, v in c.items() if "password" not in k}
                                 for b, c in careful.items()}
        runs: Dict[str, Dict[str, List[Dict[str, Any]]]] = {
            name: {b: [] for b in backends} for name in ("plain", "defaults", "pipeline")}
        source_runs: Dict[str, List[Dict[str, Any]]] = {k: [] for k in SOURCE_KINDS}
        options_source = source_options(bootstrap, spout)
        warm_s = _warm_up(options, backends, spark, servers, log_line, careful=careful,
                          warm_ends=warm_ends, stamp=stamp, trigger=trigger,
                          source_options_=options_source if source else None)
        for round_ in range(options.repeat):
            for backend in backends:
                log_line(f"plain PySpark job, the pipeline's consumer settings: {backend}, "
                         f"{n:,} messages (round {round_ + 1})")
                runs["plain"][backend].append(plain_rate(
                    spark, backend=backend, topic=TOPIC, ends=ends, consumer=careful[backend]))
                log_line(f"plain PySpark job, the library's defaults: {backend} "
                         f"(round {round_ + 1})")
                runs["defaults"][backend].append(plain_rate(
                    spark, backend=backend, topic=TOPIC, ends=ends, consumer=defaults[backend]))
                log_line(f"pipeline: {backend}, {n:,} messages (round {round_ + 1})")
                runs["pipeline"][backend].append(pipeline_rate(
                    spark, topic=TOPIC, partitions=p, bootstrap=bootstrap, zk_port=zk_port,
                    backend=backend, kafka=servers.kafka, trigger_interval_ms=trigger, expected=n,
                    spout_id=f"main-{backend}-{stamp}-{round_}"))
            if source:
                log_line(f"Spark's Kafka source: mapInArrow, Row by Row, count() and "
                         f"streaming (round {round_ + 1})")
                for kind, figure in source_round(spark, TOPIC, ends, options_source).items():
                    source_runs[kind].append(figure)
        _summaries(report, runs, warm_s, source_runs if source else None)
        if options.frontends:
            report.frontends = frontend_figures(
                spark, servers, backends=backends, partitions=p, messages=n,
                warmup_messages=options.warmup_messages, repeat=options.repeat,
                topic=TOPIC, warmup_topic=WARMUP_TOPIC, stamp=stamp, log_line=log_line)
        _growth(options, backends, report, spark, servers, careful, warm_ends, trigger,
                log_line, source_options=options_source if source else None)
        if options.latency_seconds > 0:
            _latencies(options, backends, report, spark, servers, log_line,
                       stamp=stamp, trigger=trigger)
    finally:
        if owned:
            spark.stop()


def _growth(options: BenchOptions, backends: List[str], report: _Report, spark: "SparkSession",
            servers: EmbeddedServers, careful: Dict[str, Dict[str, Any]],
            warm_ends: Dict[int, int], trigger: Optional[int],
            log_line: Callable[[str], None], *,
            source_options: Optional[Dict[str, str]]) -> None:
    """The cost as the work grows (:mod:`.scaling`) and the two-stage figure with its
    state kept (:mod:`.wordcount`)."""
    from storm_kafka_compat.workshop.bench.scaling import Case, cases, scaling_rows
    p, n = options.partitions, options.messages
    more = cases(n, options.size, p, more_partitions=list(options.scale_partitions),
                 sizes=list(options.scale_sizes), multi_stage=options.multi_stage)
    if more:
        report.scaling = scaling_rows(
            spark, servers, base=(Case("main", p, n, options.size),
                                  {"plain": report.plain, "pipeline": report.pipeline}),
            more=more, backends=backends, repeat=options.repeat, careful=careful,
            main_topic=TOPIC, warmup_topic=WARMUP_TOPIC, warmup_ends=warm_ends,
            trigger_interval_ms=trigger, log_line=log_line, source_options=source_options)
    if options.word_count:
        report.word_count = _word_count(options, backends, spark, servers, careful,
                                        trigger, log_line)


def _word_count(options: BenchOptions, backends: List[str], spark: "SparkSession",
                servers: EmbeddedServers, careful: Dict[str, Dict[str, Any]],
                trigger: Optional[int], log_line: Callable[[str], None]) -> Dict[str, Any]:
    """The two-stage figure with its state kept (:mod:`.wordcount`)."""
    import tempfile
    from pathlib import Path

    from storm_kafka_compat.workshop.bench.wordcount import word_count_figures
    return word_count_figures(
        spark, servers, backends=backends, repeat=options.repeat, careful=careful,
        sentences_n=options.word_count, partitions=options.partitions,
        work_dir=Path(tempfile.mkdtemp(prefix="skc-bench-state-")),
        trigger_interval_ms=trigger, log_line=log_line)


def _summaries(report: _Report, runs: Dict[str, Dict[str, List[Dict[str, Any]]]],
               warm_s: Dict[str, float],
               source_runs: Optional[Dict[str, List[Dict[str, Any]]]]) -> None:
    """The main figures' rounds summarized into the report."""
    for backend in runs["plain"]:
        report.plain[backend] = summarize(runs["plain"][backend])
        report.plain_defaults[backend] = summarize(runs["defaults"][backend])
        report.pipeline[backend] = dict(summarize(runs["pipeline"][backend]),
                                        warmup_seconds=warm_s[backend])
    if source_runs is not None:
        report.spark_source = {k: summarize(v) for k, v in source_runs.items()}


def _warm_up(options: BenchOptions, backends: List[str], spark: "SparkSession",
             servers: EmbeddedServers, log_line: Callable[[str], None], *,
             careful: Dict[str, Dict[str, Any]], warm_ends: Dict[int, int], stamp: int,
             trigger: Optional[int], source_options_: Optional[Dict[str, str]]) -> Dict[str, float]:
    """One plain job and one pipeline run per backend over the warm-up topic (Python workers
    forked, modules imported, clients connected), and Spark's source when it runs; returns
    each backend's warm-up run time."""
    from storm_kafka_compat.workshop.bench.pipeline import pipeline_rate
    from storm_kafka_compat.workshop.bench.plain import plain_rate
    from storm_kafka_compat.workshop.bench.spark_kafka import arrow_rate, batch_rate

    p = options.partitions
    warm_s: Dict[str, float] = {}
    for backend in backends:
        log_line(f"warm-up: {backend} (plain job and pipeline)")
        plain_rate(spark, backend=backend, topic=WARMUP_TOPIC, ends=warm_ends,
                   consumer=careful[backend])
        warm = pipeline_rate(spark, topic=WARMUP_TOPIC, partitions=p,
                             bootstrap=servers.bootstrap, zk_port=servers.zk.port,
                             backend=backend, kafka=servers.kafka,
                             trigger_interval_ms=trigger,
                             spout_id=f"warmup-{backend}-{stamp}",
                             expected=options.warmup_messages * p)
        warm_s[backend] = warm["run_seconds"]
    if source_options_ is not None:
        log_line("warm-up: Spark's Kafka source")
        batch_rate(spark, topic=WARMUP_TOPIC, ends=warm_ends, options=source_options_)
        arrow_rate(spark, topic=WARMUP_TOPIC, ends=warm_ends, options=source_options_)
    return warm_s


def _latencies(options: BenchOptions, backends: List[str], report: _Report, spark: "SparkSession",
               servers: EmbeddedServers, log_line: Callable[[str], None], *, stamp: int,
               trigger: Optional[int]) -> None:
    """Each backend's latency run at half its pipeline's median rate."""
    from storm_kafka_compat.workshop.bench.latency import latency_run
    from storm_kafka_compat.workshop.bench.pipeline import bench_job

    p, bootstrap, zk_port = options.partitions, servers.bootstrap, servers.zk.port
    for backend in backends:
        rate = max(1.0, report.pipeline[backend]["median"] / 2)
        topic = f"{LATENCY_TOPIC}-{backend}-{stamp}"
        servers.create(topic, p)
        log_line(f"latency: {backend}, {rate:,.0f} msg/s for "
                 f"{options.latency_seconds:.0f} s")
        job = bench_job(topic=topic, partitions=p, bootstrap=bootstrap,
                        zk_port=zk_port, spout_id=f"latency-{backend}-{stamp}",
                        backend=backend, kafka=servers.kafka,
                        trigger_interval_ms=trigger, scheme="raw",
                        bolt="storm_kafka_compat.workshop.bench.latency:latency_bolt")
        report.latency[backend] = latency_run(
            spark, job=job, bootstrap=bootstrap, topic=topic, partitions=p, rate=rate,
            seconds=options.latency_seconds, size=options.size,
            client=_settings(servers).for_kafka_python())


def _cluster_pipelines(options: BenchOptions, backends: List[str], report: _Report,
                       servers: EmbeddedServers, log_line: Callable[[str], None]) -> None:
    """The pipeline on a standalone cluster beside local[2]: same topic, same rounds.
    The executors use this interpreter (the workers run on this machine)."""
    from pyspark.sql import SparkSession

    from storm_kafka_compat.workshop.bench.pipeline import pipeline_rate
    from storm_kafka_compat.config import SparkConfig
    from storm_kafka_compat.engine.spark import get_spark

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    p, n = options.partitions, options.messages
    trigger = options.trigger_interval_ms
    with spark_cluster(options.spark_cluster) as cluster:
        log_line(f"standalone cluster {cluster.master_url}: {options.spark_cluster} workers "
                 "of 1 core")
        spark = get_spark(SparkConfig(master=cluster.master_url,
                                      app_name="storm-kafka-compat-bench-cluster",
                                      conf={"spark.executor.memory": "512m"}))
        try:
            stamp = int(time.time())
            for backend in backends:
                runs = []
                pipeline_rate(spark, topic=WARMUP_TOPIC, partitions=p,
                              bootstrap=servers.bootstrap, zk_port=servers.zk.port,
                              backend=backend, kafka=servers.kafka, trigger_interval_ms=trigger,
                              spout_id=f"cluster-warmup-{backend}-{stamp}",
                              expected=options.warmup_messages * p)
                for round_ in range(options.repeat):
                    log_line(f"pipeline on the cluster: {backend}, {n:,} messages "
                             f"(round {round_ + 1})")
                    runs.append(pipeline_rate(
                        spark, topic=TOPIC, partitions=p, bootstrap=servers.bootstrap,
                        zk_port=servers.zk.port, backend=backend, kafka=servers.kafka,
                        trigger_interval_ms=trigger,
                        expected=n, spout_id=f"cluster-{backend}-{stamp}-{round_}"))
                report.cluster[backend] = dict(summarize(runs), workers=options.spark_cluster)
        finally:
            spark.stop()
