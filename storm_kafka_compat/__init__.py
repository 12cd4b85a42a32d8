"""storm-kafka-compat: Storm's KafkaSpout (storm-kafka, storm-kafka-client) on PySpark.

The public API is what this package exports; everything under it is internal
and may move (docs/architecture.md maps the modules)::

    from storm_kafka_compat import BasicBolt, Pipeline, RunOptions, load_job_config

    job = load_job_config("job.yaml")
    summary = Pipeline(job).run(RunOptions(until_caught_up=True))

* configuration: :func:`load_job_config`, :func:`job_config_from_dict`, :class:`JobConfig`;
* running: :class:`Pipeline`, :class:`RunOptions`, :class:`Runtime` (the job's store,
  Kafka access, discovery and spout, for tools of your own);
* what users write: :class:`TopologyBuilder`, :class:`BasicBolt`, :class:`RichBolt`,
  :func:`simple_bolt`, :class:`StormTuple`, :class:`FailedException`,
  :class:`ReportedFailedException`;
* Structured Streaming: :func:`register` (``format("storm-kafka")``) and
  :func:`with_zk_commit`;
* errors: :class:`StormKafkaCompatError` (the root) and :class:`ConfigError`.

Names are imported on first use, so ``import storm_kafka_compat`` stays cheap and
needs neither pyspark nor a Kafka client. The library never configures logging;
only the command-line interface installs handlers.
"""

import importlib
import logging
from typing import Any

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())

#: public name -> the module that defines it
_EXPORTS = {
    "load_job_config": "storm_kafka_compat.config",
    "job_config_from_dict": "storm_kafka_compat.config",
    "JobConfig": "storm_kafka_compat.config",
    "Pipeline": "storm_kafka_compat.engine.driver",
    "RunOptions": "storm_kafka_compat.engine.driver",
    "Runtime": "storm_kafka_compat.runtime",
    "TopologyBuilder": "storm_kafka_compat.topology.builder",
    "BasicBolt": "storm_kafka_compat.topology.bolts",
    "RichBolt": "storm_kafka_compat.topology.bolts",
    "simple_bolt": "storm_kafka_compat.topology.bolts",
    "StormTuple": "storm_kafka_compat.topology.tuples",
    "is_tick": "storm_kafka_compat.topology.ticks",
    "WindowedBolt": "storm_kafka_compat.topology.windowing",
    "StatefulWindowedBolt": "storm_kafka_compat.topology.windowing",
    "TupleWindow": "storm_kafka_compat.topology.windowing",
    "Count": "storm_kafka_compat.topology.windowing",
    "Duration": "storm_kafka_compat.topology.windowing",
    "CustomStreamGrouping": "storm_kafka_compat.topology.grouping",
    "FailedException": "storm_kafka_compat.errors",
    "ReportedFailedException": "storm_kafka_compat.errors",
    "register": "storm_kafka_compat.streaming.datasource",
    "with_zk_commit": "storm_kafka_compat.streaming.datasource",
    "StormKafkaCompatError": "storm_kafka_compat.errors",
    "ConfigError": "storm_kafka_compat.errors",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:  # PEP 562: import on first use
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'storm_kafka_compat' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
