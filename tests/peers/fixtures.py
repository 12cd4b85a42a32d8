"""pytest fixtures for the real-Storm peers; import them where needed:
``from tests.peers.fixtures import storm1``."""

from __future__ import annotations

from typing import Callable, Iterator, List

import pytest

from tests.peers.storm import (STORM1, STORM2, ClientTopology, FluxTopology, StormLocal,
                               peer_classes, why_not)


@pytest.fixture(scope="session")
def storm1_ready() -> None:
    """Storm 1.2.4's jars resolved and the peer bolt compiled, or the test skipped
    with the reason (Maven, Java 11 or Java missing)."""
    reason = why_not(STORM1)
    if reason:
        pytest.skip(f"Apache Storm 1.2.4 cannot run here: {reason}")
    peer_classes(STORM1)


@pytest.fixture
def storm1(storm1_ready: None, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[Callable[[FluxTopology], StormLocal]]:
    """Return ``start(topology) -> StormLocal``: a Storm 1.2.4 LocalCluster running the
    Flux topology, killed by its PID at teardown (its ``wait_for`` failures carry the
    log tail)."""
    started: List[StormLocal] = []

    def start(topology: FluxTopology) -> StormLocal:
        storm = StormLocal(topology, tmp_path_factory.mktemp(f"storm-{topology.name}"))
        started.append(storm)
        return storm.start()

    yield start
    for storm in started:
        storm.kill()


@pytest.fixture(scope="session")
def storm2_ready() -> None:
    """Storm 2.8.3's jars resolved and the peer classes compiled, or the test skipped
    with the reason (Maven or Java missing)."""
    reason = why_not(STORM2)
    if reason:
        pytest.skip(f"Apache Storm 2.8.3 cannot run here: {reason}")
    peer_classes(STORM2)


@pytest.fixture
def storm2(storm2_ready: None, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[Callable[[ClientTopology], StormLocal]]:
    """Return ``start(topology) -> StormLocal``: a Storm 2.8.3 LocalCluster running a
    storm-kafka-client topology, killed by its PID at teardown."""
    started: List[StormLocal] = []

    def start(topology: ClientTopology) -> StormLocal:
        storm = StormLocal(topology, tmp_path_factory.mktemp(f"storm2-{topology.name}"))
        started.append(storm)
        return storm.start()

    yield start
    for storm in started:
        storm.kill()
