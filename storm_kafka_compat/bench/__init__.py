"""The benchmark of CONTRACT section 6 (``storm-kafka-compat bench``).

Modules: :mod:`.memory` (pending tracking), :mod:`.planning` (driver work per
batch), :mod:`.zk` (commits), :mod:`.fetch` (raw and adapter fetch rates),
:mod:`.pipeline` (the Spark pipeline end to end), :mod:`.runner` (all of them
in one run).
"""

from storm_kafka_compat.bench.runner import (BenchOptions, check_targets, compute_ratios,
                                             machine_info, run_bench)

__all__ = ["BenchOptions", "run_bench", "compute_ratios", "check_targets", "machine_info"]
