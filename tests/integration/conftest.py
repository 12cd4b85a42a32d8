"""Broker fixtures for integration tests: tansu (the embedded Kafka-protocol broker).

* ``tansu``: one broker for the session (never pause or stop it);
* ``tansu_factory``: brokers of a test's own, which it may pause, kill or restart;
* ``kafka_topic``: ``make(partitions=1, messages=()) -> topic`` on the session
  broker, produced with one record per batch so the high watermark is exact.

The log tail of every broker a failing test used is appended to its report.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator, List, Optional, Tuple

import pytest

_BROKERS_KEY = pytest.StashKey[list]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Append the tansu log tail to the report of a failed test."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    brokers = list(item.stash.get(_BROKERS_KEY, []))
    session_broker = getattr(item.session, "_skc_tansu", None)
    if session_broker is not None and "tansu" in getattr(item, "fixturenames", ()):
        brokers.insert(0, session_broker)
    for broker in dict.fromkeys(brokers):
        report.sections.append((f"tansu {broker.bootstrap} log tail ({broker.log_path})",
                                broker.log_tail(60)))


@pytest.fixture(scope="session")
def tansu(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """A tansu broker shared by the session. Do not pause or stop it."""
    from storm_kafka_compat.testing.broker import EmbeddedTansu

    broker = EmbeddedTansu(log_path=tmp_path_factory.mktemp("tansu") / "tansu.log")
    broker.start()
    request.session._skc_tansu = broker
    yield broker
    broker.close()


@pytest.fixture
def tansu_factory(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Return ``make() -> EmbeddedTansu`` (started); all are stopped at teardown."""
    from storm_kafka_compat.testing.broker import EmbeddedTansu

    brokers: List[EmbeddedTansu] = []

    def make() -> EmbeddedTansu:
        broker = EmbeddedTansu(log_path=tmp_path_factory.mktemp("tansu-own") / "tansu.log")
        brokers.append(broker)
        request.node.stash.setdefault(_BROKERS_KEY, []).append(broker)
        return broker.start()

    yield make
    for broker in brokers:
        broker.close()


Message = Tuple[int, Optional[bytes], Optional[bytes]]


@pytest.fixture
def kafka_topic(tansu, unique: Callable[..., str]):
    """Return ``make(partitions=1, messages=(), bootstrap=None) -> topic``: a new
    topic with ``(partition, key, value)`` messages produced exactly."""
    from storm_kafka_compat.testing.broker import create_topic, produce_exact

    def make(partitions: int = 1, messages: Iterable[Message] = (),
             bootstrap: Optional[str] = None) -> str:
        servers = bootstrap or tansu.bootstrap
        topic = unique("topic")
        create_topic(servers, topic, partitions)
        items = list(messages)
        if items:
            produce_exact(servers, topic, items)
        return topic

    return make
