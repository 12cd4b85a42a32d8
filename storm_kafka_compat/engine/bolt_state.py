"""The driver's side of the bolt tasks' state (:mod:`storm_kafka_compat.executor.hosts`): the
bolt hosts of the run, the saved versions, restored at start-up, saved before each
offset commit (the spout's ``before_commit``)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Callable, Dict, Mapping, Optional, Protocol, Sequence

from storm_kafka_compat.config import JobConfig
from storm_kafka_compat.executor.stage_tasks import StageLayout
from storm_kafka_compat.errors import PipelineError
from storm_kafka_compat.executor.hosts.client import HostDirectory, TaskHosts
from storm_kafka_compat.executor.hosts.pool import HostPool
from storm_kafka_compat.executor.hosts.snapshots import StateStore, default_state_dir
from storm_kafka_compat.structs import TopicPartition

log = logging.getLogger("storm_kafka_compat.engine.driver")


def state_dir(job: JobConfig) -> Path:
    """``topology.state.dir``, else one per zkRoot and id (or consumer group)."""
    if job.topology.state_dir:
        return Path(job.topology.state_dir).expanduser()
    spout = job.spout
    if job.kafka_spout is not None and getattr(job.kafka_spout, "group_id", None):
        return default_state_dir("/kafka-groups", str(job.kafka_spout.group_id))
    return default_state_dir(spout.zk_root or "/", spout.id or job.topology.name)


def host_address(job: JobConfig) -> str:
    """Where the executors reach the driver's bolt hosts."""
    return (job.spark.conf.get("spark.driver.host") or os.environ.get("SPARK_LOCAL_IP")
            or "127.0.0.1")


class BoltTasks(Protocol):
    """The driver's side of the bolt tasks of the crossing stages: :class:`BoltState`
    (bolt host processes, state on disk) or an in-process double
    (:class:`~storm_kafka_compat.testing.hosts.InProcessBoltState`)."""

    @property
    def directory(self) -> TaskHosts:
        """What the workers call to run a bolt task's tuples."""
        ...

    def restore(self, offsets: Mapping[TopicPartition, int]) -> None: ...

    def save(self, offsets: Dict[TopicPartition, int]) -> None: ...

    def check(self) -> None: ...

    def close(self) -> None: ...


#: how a run makes its :class:`BoltTasks`: (job, layout, spout fields, storm conf)
BoltTasksFactory = Callable[[JobConfig, StageLayout, Sequence[str], Mapping[str, object]],
                            BoltTasks]


class BoltState:
    """The run's bolt hosts and the versions of their state.

    Parameters
    ----------
    job : JobConfig
    layout : StageLayout
        The stages; the hosts hold the bolt tasks of stages 1 and later.
    spout_fields : sequence of str
        The scheme's fields.
    storm_conf : mapping
        What the bolts' ``prepare`` sees.
    """

    def __init__(self, job: JobConfig, layout: StageLayout, spout_fields: Sequence[str],
                 storm_conf: Mapping[str, object]) -> None:
        assert job.topology_spec is not None
        self.store = StateStore(state_dir(job))
        self.pool = HostPool(job.topology_spec, storm_conf, spout_fields, layout,
                             hosts=job.topology.bolt_hosts, bind=host_address(job))
        self.txid = max(self.store.versions(), default=0)
        self.restored_from: int = 0
        #: the offsets of the last version written (or restored)
        self.saved_offsets: Optional[Dict[TopicPartition, int]] = None

    @property
    def directory(self) -> HostDirectory:
        return self.pool.directory

    def restore(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Give the hosts the saved state whose offsets equal ``offsets`` (where each
        partition starts), if there is one; say what was done either way."""
        txid, saved, why = self.store.matching(offsets)
        if saved is None:
            if self.store.versions():
                log.warning("the bolt tasks start with empty state: %s (a reset, another "
                            "writer, or a crash between a save and its commit twice in a "
                            "row)", why)
            else:
                log.info("the bolt tasks start with empty state (%s)", why)
            return
        n = self.pool.restore(saved)
        self.restored_from = txid or 0
        self.saved_offsets = dict(offsets)
        log.info("the bolt tasks' state was restored from %s (%d tasks): %s",
                 self.store.path(txid or 0), n, why)

    def save(self, offsets: Dict[TopicPartition, int]) -> None:
        """Save every bolt task's state with ``offsets`` (the spout's ``before_commit``:
        the commit is made only after this returns). Called at every commit interval,
        also when no offset moves (a window fired, a sink flushed: the state moved while
        its tuples' offsets wait); skipped when neither offsets nor tasks moved."""
        if offsets == self.saved_offsets and not self.pool.dirty():
            return
        self.txid += 1
        saved = self.pool.save(self.txid)
        try:
            self.store.write(self.txid, offsets, saved)
        except OSError as exc:
            raise PipelineError(f"the bolt tasks' state cannot be saved under "
                                f"{self.store.root} ({exc}); set topology.state.dir to a "
                                "writable directory") from exc
        self.saved_offsets = dict(offsets)

    def check(self) -> None:
        """Raise when a bolt host is gone (the run cannot go on without its tasks)."""
        self.pool.check()

    def close(self) -> None:
        self.pool.close()
