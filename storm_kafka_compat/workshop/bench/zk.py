"""ZooKeeper commit latency and round trips per commit.

One commit is one :meth:`ZkStateStore.write_many` of every partition's
storm-kafka document with a new offset (what the driver does every
``stateUpdateIntervalMs`` when every partition moved). The first commit also
creates the nodes and is reported apart; the steady commits that follow only
set data.
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any, Dict, List

from storm_kafka_compat.offsets.document import encode_document
from storm_kafka_compat.offsets.paths import partition_path


def commit_latency(connect_string: str, partitions: int, *, commits: int = 5,
                   zk_root: str = "/skc-bench", clock: Any = time.perf_counter) -> Dict[str, Any]:
    """Commit ``partitions`` documents ``commits`` times (after a first, creating one).

    Returns
    -------
    dict
        ``partitions``, ``document_bytes`` (all documents of one commit),
        ``first_commit_ms``/``first_round_trips`` (nodes created),
        ``commit_ms`` (median steady commit), ``round_trips_per_commit`` (median),
        ``request_budget_bytes`` and ``min_round_trips`` (documents' bytes over the
        budget of one request, rounded up: the floor for this many partitions).
    """
    from storm_kafka_compat.offsets.zkstore import ZkStateStore
    spout_id = f"bench-{partitions}-{int(time.time() * 1000)}"
    store = ZkStateStore(connect_string, retry_times=2, retry_interval_ms=200)
    try:
        def docs(offset: int) -> Dict[str, bytes]:
            return {partition_path(zk_root, spout_id, p): encode_document(
                topology_id="bench-1-1", topology_name="bench", offset=offset + p,
                partition=p, broker_host="127.0.0.1", broker_port=9092, topic="bench")
                for p in range(partitions)}

        first = docs(1)
        size = sum(len(d) for d in first.values())
        op_bytes = sum(store._op_size(p, d) for p, d in first.items())
        t0 = clock()
        first_trips = store.write_many(first)
        first_ms = (clock() - t0) * 1000
        times: List[float] = []
        trips: List[int] = []
        for i in range(commits):
            batch = docs(1000 * (i + 2))
            t0 = clock()
            trips.append(store.write_many(batch))
            times.append((clock() - t0) * 1000)
        return {"partitions": partitions, "document_bytes": size,
                "first_commit_ms": first_ms, "first_round_trips": first_trips,
                "commit_ms": statistics.median(times),
                "round_trips_per_commit": statistics.median(trips),
                "request_budget_bytes": store.request_budget_bytes,
                "min_round_trips": max(1, math.ceil(op_bytes / store.request_budget_bytes))}
    finally:
        store.close()
