"""``storm-kafka-compat bench``: every figure of CONTRACT section 6 in one run.

Order: the pure figures first (pending memory, driver planning), then on
embedded servers (a ZooKeeper from pyspark's jars, the tansu broker) with one
topic produced once: raw fetch rates, the adapters' rates, ZooKeeper commits,
and last the Spark pipeline with each backend. Absolute numbers on a shared
2-core machine are noisy; the ratios, measured in the same run on the same
data, are what to compare.
"""

from __future__ import annotations

import importlib
import logging
import os
import platform
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

log = logging.getLogger(__name__)

BACKENDS = ("kafka-python", "confluent")
TOPIC = "skc-bench"
WARMUP_TOPIC = "skc-bench-warmup"


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
    """

    messages: int = 200_000
    partitions: int = 4
    size: int = 100
    backends: Tuple[str, ...] = BACKENDS
    memory_window: int = 100_000
    failure_rate: float = 0.01
    zk_partitions: Tuple[int, ...] = (1, 100, 10_000)
    plan_partitions: Tuple[int, ...] = (10, 1_000, 10_000)
    warmup_messages: int = 500
    pipeline: bool = True


@dataclass
class _Report:
    machine: Dict[str, Any]
    options: Dict[str, Any]
    fetch: Dict[str, Any] = field(default_factory=lambda: {"raw": {}, "adapter": {}})
    pipeline: Dict[str, Any] = field(default_factory=dict)
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


def _ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return a / b if a is not None and b else None


def _rate(section: Dict[str, Any], backend: str) -> Optional[float]:
    entry = section.get(backend)
    return entry.get("msgs_per_s") if isinstance(entry, dict) else None


def compute_ratios(report: Dict[str, Any]) -> Dict[str, Any]:
    """The ratios of a report (pipeline/raw per backend, confluent/kafka-python,
    map/ranges memory)."""
    raw, adapter, pipe = report["fetch"]["raw"], report["fetch"]["adapter"], report["pipeline"]
    out: Dict[str, Any] = {
        "pipeline_over_raw": {b: _ratio(_rate(pipe, b), _rate(raw, b)) for b in BACKENDS},
        "adapter_over_raw": {b: _ratio(_rate(adapter, b), _rate(raw, b)) for b in BACKENDS},
        "pipeline_over_adapter": {b: _ratio(_rate(pipe, b), _rate(adapter, b)) for b in BACKENDS},
        "confluent_over_kafka_python": {
            "raw": _ratio(_rate(raw, "confluent"), _rate(raw, "kafka-python")),
            "adapter": _ratio(_rate(adapter, "confluent"), _rate(adapter, "kafka-python")),
            "pipeline": _ratio(_rate(pipe, "confluent"), _rate(pipe, "kafka-python"))},
        "map_over_ranges": {k: v["map_over_ranges"] for k, v in report["memory"].items()},
    }
    plan = sorted(report["planning"], key=lambda r: r["partitions"])
    if len(plan) >= 2 and plan[0]["plan_ms"] > 0:
        lo, hi = plan[0], plan[-1]
        # 1.0 = exactly linear; above 1, each partition costs more when there are more
        out["planning_per_partition_growth"] = (
            (hi["plan_ms"] / hi["partitions"]) / (lo["plan_ms"] / lo["partitions"]))
    return out


def check_targets(report: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The issue's targets, each with the measured value and whether it is met
    (``met`` is None when the figure was not measured)."""
    ratios = report["ratios"]
    mem = report["memory"]
    out: List[Dict[str, Any]] = []

    def add(name: str, target: str, value: Optional[float], met: Optional[bool]) -> None:
        out.append({"name": name, "target": target, "value": value, "met": met})

    v = ratios["pipeline_over_raw"].get("kafka-python")
    add("pipeline kafka-python / raw kafka-python", ">= 1.0", v, None if v is None else v >= 1.0)
    v = ratios["pipeline_over_raw"].get("confluent")
    add("pipeline confluent / raw confluent", ">= 0.3", v, None if v is None else v >= 0.3)
    if "in_order" in mem:
        v = mem["in_order"]["ranges_bytes_per_offset"]
        add("pending bytes per in-flight offset, in-order acks", "<= 1", v, v <= 1)
    if "random" in mem:
        v = mem["random"]["map_over_ranges"]
        add("per-offset map / ranges, random acks, 1% failures", ">= 20", v, v >= 20)
    zk = report["zookeeper"]
    if zk:
        bad = [z for z in zk if z["round_trips_per_commit"] > z["min_round_trips"]]
        add("ZooKeeper round trips per commit above the request-size floor", "0",
            len(bad), not bad)
    plan = {r["partitions"]: r for r in report["planning"]}
    if 10_000 in plan:
        v = plan[10_000]["plan_ms"]
        add("driver planning per batch at 10,000 partitions (ms)", "< 100", v, v < 100)
    growth = ratios.get("planning_per_partition_growth")
    if growth is not None:
        add("planning cost per partition, largest / smallest count", "about 1 (linear)",
            growth, growth < 2.0)
    return out


def run_bench(options: BenchOptions = BenchOptions(), *, spark: Any = None,
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

    from .memory import pending_memory
    from .planning import planning_time
    for scenario in ("in_order", "random", "batches"):
        log_line(f"pending memory: {scenario}, {options.memory_window:,} offsets in flight")
        report.memory[scenario] = pending_memory(
            scenario, window=options.memory_window, failure_rate=options.failure_rate,
            batch=max(1, min(10_000, options.memory_window // 10)))
    for n in options.plan_partitions:
        log_line(f"driver planning: {n:,} partitions")
        report.planning.append(planning_time(n))

    _with_servers(options, backends, report, spark, log_line)
    as_dict = asdict(report)
    as_dict["ratios"] = compute_ratios(as_dict)
    as_dict["targets"] = check_targets(as_dict)
    as_dict["seconds"] = time.monotonic() - started
    return as_dict


def _with_servers(options: BenchOptions, backends: List[str], report: _Report, spark: Any,
                  log_line: Callable[[str], None]) -> None:
    from ..config import SpoutConfig, StaticHosts
    from ..testing.broker import EmbeddedTansu, create_topic, produce_exact
    from ..testing.zookeeper import EmbeddedZooKeeper
    from .fetch import access_rate, raw_confluent, raw_kafka_python
    from .zk import commit_latency

    with tempfile.TemporaryDirectory(prefix="skc-bench-") as tmp, \
            EmbeddedZooKeeper(base_dir=tmp) as zk, EmbeddedTansu() as broker:
        log_line(f"ZooKeeper {zk.connect_string} (pid {zk.pid}), tansu {broker.bootstrap} "
                 f"(pid {broker.pid})")
        p, n = options.partitions, options.messages
        create_topic(broker.bootstrap, TOPIC, p)
        value = (b"0123456789" * (options.size // 10 + 1))[:options.size]
        t0 = time.monotonic()
        produce_exact(broker.bootstrap, TOPIC, ((i % p, None, value) for i in range(n)))
        log_line(f"produced {n:,} messages of {options.size} B over {p} partitions in "
                 f"{time.monotonic() - t0:.1f} s")

        for backend in backends:
            log_line(f"raw single-consumer fetch: {backend}")
            raw = raw_confluent if backend == "confluent" else raw_kafka_python
            report.fetch["raw"][backend] = raw(broker.bootstrap, TOPIC, p, n)
        spout = SpoutConfig(hosts=StaticHosts({}), topic=TOPIC, zk_root="/skc-bench", id="x")
        for backend in backends:
            log_line(f"adapter fetch, one thread: {backend}")
            report.fetch["adapter"][backend] = access_rate(backend, broker.bootstrap, spout, p, n)

        for count in options.zk_partitions:
            log_line(f"ZooKeeper commits: {count:,} partitions")
            report.zookeeper.append(commit_latency(zk.connect_string, count))

        if options.pipeline:
            _pipelines(options, backends, report, spark, broker, zk, log_line)
        else:
            report.skipped.append("pipeline: not requested")


def _pipelines(options: BenchOptions, backends: List[str], report: _Report, spark: Any,
               broker: Any, zk: Any, log_line: Callable[[str], None]) -> None:
    from ..testing.broker import create_topic, produce_exact
    from .pipeline import pipeline_rate

    owned = False
    if spark is None:
        from pyspark.sql import SparkSession

        from ..config import SparkConfig
        from ..pipeline.spark import get_spark
        owned = SparkSession.getActiveSession() is None
        t0 = time.monotonic()
        spark = get_spark(SparkConfig(master="local[2]", app_name="storm-kafka-compat-bench"))
        report.machine["spark_start_s"] = round(time.monotonic() - t0, 2)
    try:
        p = options.partitions
        create_topic(broker.bootstrap, WARMUP_TOPIC, p)
        produce_exact(broker.bootstrap, WARMUP_TOPIC,
                      [(i % p, None, b"warm-up") for i in range(options.warmup_messages * p)])
        stamp = int(time.time())
        for backend in backends:
            log_line(f"pipeline warm-up: {backend}")
            warm = pipeline_rate(spark, topic=WARMUP_TOPIC, partitions=p,
                                 bootstrap=broker.bootstrap, zk_port=zk.port, backend=backend,
                                 spout_id=f"warmup-{backend}-{stamp}",
                                 expected=options.warmup_messages * p)
            log_line(f"pipeline: {backend}, {options.messages:,} messages")
            result = pipeline_rate(spark, topic=TOPIC, partitions=p, bootstrap=broker.bootstrap,
                                   zk_port=zk.port, backend=backend,
                                   spout_id=f"main-{backend}-{stamp}", expected=options.messages)
            result["warmup_seconds"] = warm["run_seconds"]
            report.pipeline[backend] = result
    finally:
        if owned:
            spark.stop()
