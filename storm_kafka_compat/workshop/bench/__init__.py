"""The benchmark of CONTRACT section 6 (``storm-kafka-compat bench``).

Modules: :mod:`.memory` (pending tracking), :mod:`.planning` (driver work per
batch), :mod:`.zk` (commits), :mod:`.fetch` (raw and adapter fetch rates),
:mod:`.pipeline` (the Spark pipeline end to end), :mod:`.runner` (all of them
in one run), :mod:`.analysis` (the report's ratios and targets).
"""

from storm_kafka_compat.workshop.bench.analysis import check_targets, compute_ratios
from storm_kafka_compat.workshop.bench.runner import BenchOptions, machine_info, run_bench

__all__ = ["BenchOptions", "run_bench", "compute_ratios", "check_targets", "machine_info"]
