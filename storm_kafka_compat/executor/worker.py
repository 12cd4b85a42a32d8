"""What the executors know of a job: :class:`WorkerJob`, sent once per job.

The driver builds one :class:`WorkerJob` when the run starts
(:func:`~storm_kafka_compat.engine.driver.worker_job`)
and the runner sends it to the workers once (a Spark broadcast): the spout's
fetch settings, the Kafka client's, the bolts' configuration, the scheme, the
bolt or the topology, the stage layout and the task's time budget. A batch then
sends only its fetch plans. On a worker, what is built from the job (the
scheme, the topology, the bolts, the Kafka client) is built once and kept for
the next batches (:meth:`WorkerJob.per_worker`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, TypeVar

from storm_kafka_compat.config import SpoutConfig
from storm_kafka_compat.executor.hosts.client import TaskHosts
from storm_kafka_compat.executor.stage_tasks import StageLayout
from storm_kafka_compat.kafka.client import KafkaAccess
from storm_kafka_compat.topology.builder import Topology
from storm_kafka_compat.topology.schemes import Scheme

T = TypeVar("T")

#: what this worker built, per job id (the most recent jobs first to go last): what -> thing
_BUILT: "OrderedDict[str, Dict[str, Any]]" = OrderedDict()
_BUILT_LOCK = threading.RLock()
#: jobs whose things a worker keeps (a worker reused by later runs forgets the oldest)
KEPT_JOBS = 8


@dataclass(frozen=True)
class WorkerJob:
    """The job as the executors see it (picklable; sent once per job).

    Attributes
    ----------
    job_id : str
        Names this job's things on a worker (new for each run).
    spout : SpoutConfig
        Its fetch settings and the scheme's name.
    bootstrap : tuple of str
        The brokers the worker's client starts from.
    backend : str
        ``kafka-python`` or ``confluent``.
    kafka_conf : tuple of (str, value)
        The backend's own settings.
    storm_conf : tuple of (str, value)
        What the bolts' ``prepare`` sees.
    bolt : str, optional
        ``module:callable`` of a simple bolt.
    topology_spec : mapping, optional
        The bolt topology as written in the CONFIG (built once per worker).
    layout : StageLayout, optional
        The stages of a topology whose groupings cross partitions; None: one stage.
    budget_s : float
        How long a task fetches and processes new messages
        (:func:`~storm_kafka_compat.executor.reader.task_budget_s`).
    hosts : TaskHosts, optional
        Where the bolt tasks of the crossing stages live (:mod:`storm_kafka_compat.executor.hosts`);
        None: each worker runs its own instances (tests without hosts).
    """

    job_id: str
    spout: SpoutConfig
    bootstrap: Tuple[str, ...]
    backend: str = "kafka-python"
    kafka_conf: Tuple[Tuple[str, Any], ...] = ()
    storm_conf: Tuple[Tuple[str, Any], ...] = ()
    bolt: Optional[str] = None
    topology_spec: Optional[Mapping[str, Any]] = None
    layout: Optional[StageLayout] = None
    budget_s: float = 1.0
    hosts: Optional[TaskHosts] = None

    def with_bootstrap(self, bootstrap: Tuple[str, ...]) -> "WorkerJob":
        """The same job, its client starting from ``bootstrap`` (brokers learned since)."""
        return replace(self, bootstrap=bootstrap)

    def per_worker(self, what: str, build: Callable[[], T]) -> T:
        """``build()`` once per worker process and job; the same object afterwards."""
        with _BUILT_LOCK:
            things = _BUILT.get(self.job_id)
            if things is None:
                things = _BUILT[self.job_id] = {}
                while len(_BUILT) > KEPT_JOBS:
                    _BUILT.popitem(last=False)
            else:
                _BUILT.move_to_end(self.job_id)
            if what not in things:
                things[what] = build()
            built: T = things[what]
            return built

    def kafka(self) -> KafkaAccess:
        """The worker's cached client for this job's settings; one fetch waits at most
        :func:`~storm_kafka_compat.kafka.client.fetch_deadline_ms` (one partition
        whose leader moved must not hold the batch for socketTimeoutMs)."""
        from storm_kafka_compat.kafka.client import fetch_deadline_ms
        from storm_kafka_compat.kafka.worker import worker_kafka
        deadline = fetch_deadline_ms(self.spout.socket_timeout_ms, self.budget_s,
                                     self.spout.fetch_max_wait)
        return worker_kafka(self.backend, self.bootstrap, self.spout, self.kafka_conf,
                            fetch_timeout_ms=deadline)

    def scheme(self) -> Scheme:
        """The spout's scheme (with storm-kafka-client's ``emitNullTuples`` when set)."""
        def build() -> Scheme:
            from storm_kafka_compat.topology.schemes import (
                EMIT_NULL_TUPLES_KEY,
                EmitNullTuples,
                load_scheme,
            )
            scheme = load_scheme(self.spout.scheme)
            if dict(self.storm_conf).get(EMIT_NULL_TUPLES_KEY):
                return EmitNullTuples(scheme)
            return scheme
        return self.per_worker("scheme", build)

    def topology(self) -> Topology:
        """The bolt topology, built from its spec once per worker."""
        spec = self.topology_spec
        if spec is None:
            raise ValueError("this job runs a simple bolt, not a topology")

        def build() -> Topology:
            from storm_kafka_compat.topology.builder import from_spec
            return from_spec(spec)
        return self.per_worker("topology", build)

