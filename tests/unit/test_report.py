"""The status snapshot and progress line of a running pipeline (engine.report)."""

from storm_kafka_compat.config import Broker, SpoutConfig, StaticHosts
from storm_kafka_compat.engine.report import progress_line, status_rows, status_snapshot
from storm_kafka_compat.spout.manager import PartitionManager


def _pm(partition: int, start: int) -> PartitionManager:
    spout = SpoutConfig(hosts=StaticHosts({partition: Broker("k", 1)}), topic="t",
                        zk_root="/r", id="s")
    return PartitionManager("t", partition, start, config=spout,
                            location=f"/r/s/partition_{partition}", clock=lambda: 0)


def test_rates_are_per_interval_and_lag_counts_known_partitions_only() -> None:
    a, b = _pm(0, 10), _pm(1, 0)
    plan = a.plan_fetch(max_messages=5)
    a.fetched(plan, [(10, 15)])
    a.ack_ranges([(10, 13)])                           # 13, 14 still pending
    snap = status_snapshot(managers={("t", 0): a, ("t", 1): b},
                           log_ends={("t", 0): 40, ("t", 1): None},
                           processed={("t", 0): 105, ("t", 1): 7},
                           processed_before={("t", 0): 100}, interval_ms=2000, batches=9,
                           messages=112, commits=3, commit_failures=0, fetch_failures=1,
                           now_s=1)
    p0, p1 = snap["partitions"]
    # lag from the committed offset (10, nothing committed yet), spoutLag from the
    # completed one (13): issue 34 item 10
    assert (p0["completed"], p0["lag"], p0["spout_lag"], p0["pending"], p0["rate"]) == \
        (13, 30, 27, 2, 2.5)
    assert p1["lag"] is None and p1["rate"] == 3.5
    assert (snap["rate"], snap["lag"], snap["spout_lag"], snap["lag_unknown"],
            snap["pending"]) == (6.0, 30, 27, 1, 2)
    assert progress_line(snap) == \
        "batch 9: 6 msg/s, lag 30 (spoutLag 27, +1 unknown), pending 2, retries 0"
    rows = list(status_rows(snap))
    assert rows[-1]["TOPIC"] == "TOTAL" and rows[-1]["LAG"] == 30 and len(rows) == 3
    assert rows[-1]["SPOUT-LAG"] == 27
