"""What a bench report says: one figure over its rounds (:func:`summarize`), the
ratios between figures (:func:`compute_ratios`) and the issue's targets, met or
not (:func:`check_targets`). Pure arithmetic on the report's dict; no servers.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

#: the fetch backends the bench measures and compares
BACKENDS = ("kafka-python", "confluent")


#: how each row of Spark's own Kafka source reads (report key -> label)
SOURCE_LABELS = {"arrow": "batch, mapInArrow", "batch": "batch, Row by Row",
                 "count": "batch, JVM-only count()",
                 "streaming": "Structured Streaming, mapInArrow"}


def summarize(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    """One figure over ``repeat`` rounds: the median round's fields, plus
    ``runs`` (each round's rate) and ``min``/``median``/``max`` msg/s."""
    rates = sorted(r["msgs_per_s"] for r in runs)
    median = rates[len(rates) // 2] if len(rates) % 2 else (
        (rates[len(rates) // 2 - 1] + rates[len(rates) // 2]) / 2)
    middle = min(runs, key=lambda r: abs(r["msgs_per_s"] - median))
    return {**middle, "msgs_per_s": median, "min": rates[0], "median": median,
            "max": rates[-1], "runs": [r["msgs_per_s"] for r in runs]}


def _ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return a / b if a is not None and b else None


def _rate(section: Dict[str, Any], backend: str) -> Optional[float]:
    entry = section.get(backend)
    return entry.get("msgs_per_s") if isinstance(entry, dict) else None


def compute_ratios(report: Dict[str, Any]) -> Dict[str, Any]:
    """The ratios of a report (pipeline/raw per backend, confluent/kafka-python,
    map/ranges memory)."""
    raw, adapter, pipe = report["fetch"]["raw"], report["fetch"]["adapter"], report["pipeline"]
    plain = report.get("plain", {})
    defaults = report.get("plain_defaults", {})
    source = report.get("spark_source", {})
    out: Dict[str, Any] = {
        "pipeline_over_plain": {b: _ratio(_rate(pipe, b), _rate(plain, b)) for b in BACKENDS},
        "pipeline_over_plain_defaults": {b: _ratio(_rate(pipe, b), _rate(defaults, b))
                                         for b in BACKENDS},
        "plain_over_plain_defaults": {b: _ratio(_rate(plain, b), _rate(defaults, b))
                                      for b in BACKENDS},
        **{f"pipeline_over_spark_{kind}": {b: _ratio(_rate(pipe, b), _rate(source, kind))
                                           for b in BACKENDS} for kind in SOURCE_LABELS},
        **{f"{front}_over_spark_arrow": {
            b: _ratio(_rate(report.get("frontends", {}).get(front, {}), b),
                      _rate(source, "arrow")) for b in BACKENDS}
           for front in ("storm_source", "dataframe")},
        "pipeline_over_raw": {b: _ratio(_rate(pipe, b), _rate(raw, b)) for b in BACKENDS},
        "plain_over_raw": {b: _ratio(_rate(plain, b), _rate(raw, b)) for b in BACKENDS},
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


#: (messages, bytes each, partitions) the throughput targets are set at (issue 25): large
#: enough that Spark's fixed cost per job (~0.1-0.3 s) and the pipeline's start-up
#: decisions are a few per cent of a run, not most of it
THROUGHPUT_TARGET_SIZE = (4_000_000, 100, 4)
#: the least pipeline / plain job (the pipeline's consumer settings) per backend
PLAIN_TARGETS = {"kafka-python": 0.9, "confluent": 0.8}


def check_targets(report: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The issue's targets, each with the measured value and whether it is met
    (``met`` is None when the figure was not measured, or when a throughput ratio
    was measured at another size than the one it is set at: ``note`` says so)."""
    ratios = report["ratios"]
    mem = report["memory"]
    out: List[Dict[str, Any]] = []

    def add(name: str, target: str, value: Optional[float], met: Optional[bool],
            note: str = "") -> None:
        out.append({"name": name, "target": target, "value": value, "met": met, "note": note})

    opts = report.get("options", {})
    at_target_size = (opts.get("messages"), opts.get("size"), opts.get("partitions")) == \
        THROUGHPUT_TARGET_SIZE
    where = "" if at_target_size else (
        f"set at {THROUGHPUT_TARGET_SIZE[0]:,} x {THROUGHPUT_TARGET_SIZE[1]} B over "
        f"{THROUGHPUT_TARGET_SIZE[2]} partitions; not judged at this run's size")

    def judged(v: Optional[float], ok: bool) -> Optional[bool]:
        return None if v is None or not at_target_size else ok

    for backend in BACKENDS:
        v = ratios["pipeline_over_plain"].get(backend)
        least = PLAIN_TARGETS[backend]
        add(f"pipeline {backend} / plain PySpark job {backend} (the pipeline's consumer "
            "settings)", f">= {least}", v, judged(v, v is not None and v >= least),
            "" if v is None else where)
    for kind in ("arrow", "batch", "streaming"):
        v = ratios[f"pipeline_over_spark_{kind}"].get("confluent")
        add(f"pipeline confluent / Spark's Kafka source ({SOURCE_LABELS[kind]}), same "
            "per-message function", ">= 1.0", v, judged(v, v is not None and v >= 1.0),
            "" if v is None else where)
    v = ratios["pipeline_over_raw"].get("confluent")
    add("pipeline confluent / raw confluent consumer", ">= 1.0", v,
        judged(v, v is not None and v >= 1.0), "" if v is None else where)
    for backend, lat in report.get("latency", {}).items():
        v = lat.get("p99_ms")
        add(f"p99 end-to-end latency {backend} at {lat['rate_msgs_per_s']:,.0f} msg/s (ms)",
            "< 2000", v, None if v is None else v < 2000)
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
