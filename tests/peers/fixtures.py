"""pytest fixtures for the real-Storm peers; import them where needed:
``from tests.peers.fixtures import storm1``."""

from __future__ import annotations

from typing import Any, Callable, Iterator, List

import pytest

from tests.peers.storm import (STORM1, STORM2, ClientTopology, FluxTopology, StormLocal,
                               peer_classes, why_not)


def _ready(bundle: Any, what: str) -> None:
    """``bundle``'s jars resolved and the peer classes compiled against them, or the
    test skipped with the reason (Maven, Java, or Storm 1's Java 11, missing)."""
    reason = why_not(bundle)
    if reason:
        pytest.skip(f"Apache Storm {what} cannot run here: {reason}")
    peer_classes(bundle)


@pytest.fixture(scope="session")
def storm1_ready() -> None:
    _ready(STORM1, "1.2.4")


@pytest.fixture(scope="session")
def storm2_ready() -> None:
    _ready(STORM2, "2.8.3")


def _starter(tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[Callable[[Any], StormLocal]]:
    """``start(topology) -> StormLocal`` (the Storm line follows the topology's kind),
    every one killed by its PID at teardown (its ``wait_for`` failures carry the log
    tail)."""
    started: List[StormLocal] = []

    def start(topology: Any) -> StormLocal:
        storm = StormLocal(topology, tmp_path_factory.mktemp(f"storm-{topology.name}"))
        started.append(storm)
        return storm.start()

    yield start
    for storm in started:
        storm.kill()


@pytest.fixture
def storm1(storm1_ready: None, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[Callable[[FluxTopology], StormLocal]]:
    """Return ``start(topology) -> StormLocal``: a Storm 1.2.4 LocalCluster running the
    Flux topology."""
    yield from _starter(tmp_path_factory)


@pytest.fixture
def storm2(storm2_ready: None, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[Callable[[ClientTopology], StormLocal]]:
    """Return ``start(topology) -> StormLocal``: a Storm 2.8.3 LocalCluster running a
    storm-kafka-client topology."""
    yield from _starter(tmp_path_factory)
