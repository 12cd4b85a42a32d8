"""Test helpers: an Assignment over each discovery, built in one call."""

from typing import Any

from storm_kafka_compat.discovery.bootstrap import BootstrapDiscovery
from storm_kafka_compat.discovery.static import StaticDiscovery
from storm_kafka_compat.discovery.zk import ZkDiscovery
from storm_kafka_compat.spout.assignment import Assignment


def _assignment(discovery: Any, manager_factory: Any, on_removed: Any = None,
                task_index: int = 0, total_tasks: int = 1) -> Assignment:
    return Assignment(discovery, manager_factory=manager_factory, on_removed=on_removed,
                      task_index=task_index, total_tasks=total_tasks)


def static_assignment(hosts: Any, topic: str, *, manager_factory: Any, **kw: Any) -> Assignment:
    return _assignment(StaticDiscovery(hosts, topic), manager_factory, **kw)


def zk_assignment(hosts: Any, spout: Any, topology: Any, *, manager_factory: Any,
                  reader: Any = None, listener_name: Any = None, **kw: Any) -> Assignment:
    return _assignment(ZkDiscovery(hosts, spout, topology, reader=reader,
                                   listener_name=listener_name), manager_factory, **kw)


def bootstrap_assignment(hosts: Any, spout: Any, topology: Any, access: Any, *,
                         manager_factory: Any, **kw: Any) -> Assignment:
    return _assignment(BootstrapDiscovery(hosts, spout, topology, access), manager_factory, **kw)
