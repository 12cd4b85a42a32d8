"""What the executors know of a job, and what a worker builds from it.

The driver builds one :class:`WorkerJob` when the run starts
(:func:`~storm_kafka_compat.engine.driver.worker_job`) and the runner sends it to the
workers once (a Spark broadcast): pure data, the spout's fetch settings, the Kafka
client's, the bolts' configuration, the scheme, the bolt or the topology, the stage
layout and the task's time budget. A batch then sends only its fetch plans.

On a worker, what is built from the job (the scheme, the topology, the bolts' runtime,
the processor a task runs the fetched messages through, the Kafka client) is built once
and kept for the next batches: the job's :class:`WorkerParts` (:func:`worker_parts`),
kept per Python worker process for the last :data:`KEPT_JOBS` jobs it ran. A Spark task
asks for them once, when it starts, and hands its reading only the :class:`TaskTools`
they give: the client and the processor, not the job.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, TypeVar

from storm_kafka_compat.batch import FetchPlan
from storm_kafka_compat.config import SpoutConfig
from storm_kafka_compat.config.kafka_settings import Backend
from storm_kafka_compat.config.topology_spec import TopologySpec
from storm_kafka_compat.executor.calls import Service
from storm_kafka_compat.executor.hosts.client import TaskHosts
from storm_kafka_compat.executor.process import BatchOutcome
from storm_kafka_compat.executor.stage_tasks import StageLayout
from storm_kafka_compat.kafka.client import KafkaAccess
from storm_kafka_compat.topology.builder import Topology
from storm_kafka_compat.topology.schemes import MessageLike, Scheme

T = TypeVar("T")

#: processes a chunk of fetched messages under a plan
Processor = Callable[[Sequence[MessageLike], FetchPlan], BatchOutcome]

#: jobs whose parts a worker keeps (a worker reused by later runs forgets the oldest)
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
    topology_spec : TopologySpec, optional
        The bolt topology as written in the CONFIG (built once per worker).
    layout : StageLayout, optional
        The stages of a topology whose groupings cross partitions; None: one stage.
    budget_s : float
        How long a task fetches and processes new messages
        (:func:`~storm_kafka_compat.executor.reader.task_budget_s`).
    hosts : TaskHosts, optional
        Where the bolt tasks of the crossing stages live (:mod:`storm_kafka_compat.executor.hosts`);
        None: each worker runs its own instances (tests without hosts).
    dealer : Service, optional
        The driver's plan dealer (:mod:`storm_kafka_compat.engine.dealing`): a
        single-stage task asks it which group of plans to read; None: its own.
    """

    job_id: str
    spout: SpoutConfig
    bootstrap: Tuple[str, ...]
    backend: Backend = "kafka-python"
    kafka_conf: Tuple[Tuple[str, Any], ...] = ()
    storm_conf: Tuple[Tuple[str, Any], ...] = ()
    bolt: Optional[str] = None
    topology_spec: Optional[TopologySpec] = None
    layout: Optional[StageLayout] = None
    budget_s: float = 1.0
    hosts: Optional[TaskHosts] = None
    dealer: Optional[Service] = None

    def with_bootstrap(self, bootstrap: Tuple[str, ...]) -> "WorkerJob":
        """The same job, its client starting from ``bootstrap`` (brokers learned since)."""
        return replace(self, bootstrap=bootstrap)


@dataclass(frozen=True)
class TaskTools:
    """What a Spark task reads and processes its plans with (:meth:`WorkerParts.tools`).

    Attributes
    ----------
    kafka : KafkaAccess
        The worker's client for the job (built lazily by the adapters: no connection
        before the first fetch).
    processor : callable
        Gives the job's :data:`Processor`, built the first time a task has messages (the
        scheme and the user's bolts are imported then, and their failure is the
        partition's, not the task's).
    backend : str
        The client's name, for failure messages.
    budget_s : float
        How long a task fetches and processes new messages.
    """

    kafka: KafkaAccess
    processor: Callable[[], Processor]
    backend: Backend
    budget_s: float


class WorkerParts:
    """What one Python worker built from a job, once, for the job's next batches: the
    scheme, the topology, whatever a task asks to keep (:meth:`get`), and the worker's
    Kafka client for the job's current settings."""

    def __init__(self, job: WorkerJob) -> None:
        #: the job as last seen (the same job id; its bootstrap may have grown since)
        self.job = job
        self._built: Dict[str, Any] = {}
        self._lock = threading.RLock()

    def get(self, what: str, build: Callable[[], T]) -> T:
        """``build()`` the first time ``what`` is asked; the same object afterwards."""
        with self._lock:
            if what not in self._built:
                self._built[what] = build()
            built: T = self._built[what]
            return built

    def kafka(self) -> KafkaAccess:
        """The worker's cached client for this job's settings; one fetch waits at most
        :func:`~storm_kafka_compat.kafka.client.fetch_deadline_ms` (one partition
        whose leader moved must not hold the batch for socketTimeoutMs)."""
        from storm_kafka_compat.kafka.client import fetch_deadline_ms
        from storm_kafka_compat.kafka.worker import worker_kafka
        job = self.job
        deadline = fetch_deadline_ms(job.spout.socket_timeout_ms, job.budget_s,
                                     job.spout.fetch_max_wait)
        return worker_kafka(job.backend, job.bootstrap, job.spout, job.kafka_conf,
                            fetch_timeout_ms=deadline)

    def tools(self, kafka: Optional[KafkaAccess] = None) -> TaskTools:
        """A task's :class:`TaskTools`: the worker's client (or ``kafka``, for tests), the
        processor when first asked, the job's backend and task budget."""
        job = self.job
        return TaskTools(kafka if kafka is not None else self.kafka(), self.processor,
                         job.backend, job.budget_s)

    def scheme(self) -> Scheme:
        """The spout's scheme (with storm-kafka-client's ``emitNullTuples`` when set)."""
        job = self.job

        def build() -> Scheme:
            from storm_kafka_compat.topology.schemes import (EMIT_NULL_TUPLES_KEY,
                                                             EmitNullTuples, load_scheme)
            scheme = load_scheme(job.spout.scheme)
            if dict(job.storm_conf).get(EMIT_NULL_TUPLES_KEY):
                return EmitNullTuples(scheme)
            return scheme
        return self.get("scheme", build)

    def topology(self) -> Topology:
        """The bolt topology, built from its spec once."""
        spec = self.job.topology_spec
        if spec is None:
            raise ValueError("this job runs a simple bolt, not a topology")

        def build() -> Topology:
            from storm_kafka_compat.topology.spec import from_spec
            return from_spec(spec)
        return self.get("topology", build)

    def processor(self) -> Processor:
        """The job's processor: the scheme, then the simple bolt or the bolt topology
        in this task."""
        job = self.job

        def build() -> Processor:
            from storm_kafka_compat.config.objects import load_object
            from storm_kafka_compat.executor.process import process_batch
            scheme = self.scheme()
            if job.topology_spec is not None:
                topology = self.topology()
                conf = dict(job.storm_conf)

                def run_topology(messages: Sequence[MessageLike],
                                 plan: FetchPlan) -> BatchOutcome:
                    return process_batch(messages, scheme=scheme, topology=topology,
                                         plan_filter=plan, now_ms=int(time.time() * 1000),
                                         conf=conf)
                return run_topology
            if not job.bolt:
                raise ValueError("no bolt configured: set `bolt: module:callable`")
            bolt = load_object(job.bolt, key="bolt")

            def run_bolt(messages: Sequence[MessageLike], plan: FetchPlan) -> BatchOutcome:
                return process_batch(messages, scheme=scheme, bolt=bolt, plan_filter=plan)
            return run_bolt
        return self.get("processor", build)


#: this worker's parts, per job id (the least recently used first)
_PARTS: "OrderedDict[str, WorkerParts]" = OrderedDict()
_PARTS_LOCK = threading.Lock()


def worker_parts(job: WorkerJob) -> WorkerParts:
    """This Python worker's parts of ``job``: built on first use, kept for its next
    batches (the parts of the oldest jobs beyond :data:`KEPT_JOBS` are forgotten)."""
    with _PARTS_LOCK:
        parts = _PARTS.get(job.job_id)
        if parts is None:
            parts = _PARTS[job.job_id] = WorkerParts(job)
            while len(_PARTS) > KEPT_JOBS:
                _PARTS.popitem(last=False)
        else:
            _PARTS.move_to_end(job.job_id)
            parts.job = job
        return parts
