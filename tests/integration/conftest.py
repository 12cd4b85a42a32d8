"""Broker fixtures for integration tests: real Apache Kafka 0.9.0.1, 3.9 (ZooKeeper
mode) and 4.x (KRaft), and tansu.

* ``kafka09``: one Apache Kafka 0.9.0.1 broker for the session (unique topics; never
  stop it); ``kafka09_factory``: clusters of a test's own (several brokers, kills,
  retention settings); ``kafka09_topic``: a new topic there, written by a batching
  producer. Use these wherever broker behaviour matters (high watermark,
  out-of-range, retention, leader change, group metadata);

* ``kafka39`` and ``kafka4``: one Apache Kafka 3.9 (ZooKeeper mode) and one 4.x
  (KRaft) broker for the session, jars from Maven Central; ``modern_kafka``: a
  test parametrized over both (ids ``3.9`` and ``4``); ``modern_topic``: a new
  topic on it; ``modern_factory``: clusters of a test's own
  (``make(distribution, brokers=3, **kwargs)``). Use them for what only 0.11+
  brokers have (record batches v2, compression, headers, transactions,
  compaction, DeleteRecords, timestamps, TLS/SASL, the new registry versions);

* ``tansu``: one tansu broker for the session (never pause or stop it);
* ``tansu_factory``: brokers of a test's own, which it may pause, kill or restart;
* ``kafka_topic``: ``make(partitions=1, messages=()) -> topic`` on the session
  broker, produced with one record per batch so the high watermark is exact.

The log tail of every broker a failing test used is appended to its report.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, List, Optional, Tuple

import pytest

_BROKERS_KEY = pytest.StashKey[list]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Append the tansu and Kafka log tails to the report of a failed test."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    _kafka_log_sections(item, report)
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
    from storm_kafka_compat.workshop.servers.tansu import EmbeddedTansu

    broker = EmbeddedTansu(log_path=tmp_path_factory.mktemp("tansu") / "tansu.log")
    broker.start()
    request.session._skc_tansu = broker
    yield broker
    broker.close()


@pytest.fixture
def tansu_factory(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Return ``make() -> EmbeddedTansu`` (started); all are stopped at teardown."""
    from storm_kafka_compat.workshop.servers.tansu import EmbeddedTansu

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
    topic with ``(partition, key, value)`` messages produced exactly.

    One record per batch (``produce_exact``) is a tansu workaround: with several
    records in a batch tansu's high watermark is wrong. ``kafka09_topic`` uses a
    normal batching producer."""
    from storm_kafka_compat.workshop.servers.tansu import create_topic, produce_exact

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


# --- real Apache Kafka: 0.9.0.1 (npm), 3.9 (ZooKeeper mode) and 4.x (KRaft) (Maven) ------

_KAFKA_KEY = pytest.StashKey[list]()


def _distribution_or_skip(distribution: Any) -> None:
    reason = distribution.missing_prerequisite()
    if reason:
        pytest.skip(f"{distribution.name} cannot run here: {reason}")


def _kafka_log_sections(item: pytest.Item, report: pytest.TestReport) -> None:
    """Append the log tail of each Kafka broker a failed test used (the clusters among
    its fixture values, and those its factories made) to its report."""
    from storm_kafka_compat.workshop.servers.kafka import KafkaCluster
    used = [v for v in getattr(item, "funcargs", {}).values() if isinstance(v, KafkaCluster)]
    for cluster in dict.fromkeys(used + list(item.stash.get(_KAFKA_KEY, []))):
        for broker in cluster.brokers:
            report.sections.append((f"{broker.name} log tail ({broker.log_path})",
                                    broker.log_tail(40)))


def _session_cluster(tmp_path_factory: pytest.TempPathFactory, distribution: Any, name: str,
                     **kwargs: Any) -> Any:
    """One started broker of ``distribution`` for the session (retention checked every
    second)."""
    _distribution_or_skip(distribution)
    from storm_kafka_compat.workshop.servers.kafka import KafkaCluster

    settings = {"log.retention.check.interval.ms": 1000, **kwargs.pop("settings", {})}
    return KafkaCluster(1, tmp_path_factory.mktemp(name), distribution=distribution,
                        settings=settings, **kwargs).start()


def _cluster_factory(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                     default_distribution: Any = None) -> Iterator[Callable[..., Any]]:
    """Yield ``make(distribution, brokers, **kwargs) -> KafkaCluster`` (started) and
    close every cluster it made at teardown."""
    from storm_kafka_compat.workshop.servers.kafka import KafkaCluster

    clusters: List[KafkaCluster] = []

    def make(distribution: Any, brokers: int, **kwargs: Any) -> KafkaCluster:
        _distribution_or_skip(distribution)
        cluster = KafkaCluster(brokers, tmp_path_factory.mktemp("kafka-own"),
                               distribution=distribution, **kwargs)
        clusters.append(cluster)
        request.node.stash.setdefault(_KAFKA_KEY, []).append(cluster)
        return cluster.start()

    yield make
    for cluster in clusters:
        cluster.close()


def _topic_maker(cluster: Any, unique: Callable[..., str]) -> Callable[..., str]:
    """``make(partitions=1, messages=(), config={}) -> topic``: a new topic on
    ``cluster``, messages through a batching producer."""

    def make(partitions: int = 1, messages: Iterable[Message] = (), *,
             config: Optional[dict] = None) -> str:
        topic = unique("topic")
        cluster.create_topic(topic, partitions, 1, config=config or {})
        items = list(messages)
        if items:
            cluster.produce(topic, items)
        return topic

    return make


@pytest.fixture(scope="session")
def kafka09(tmp_path_factory: pytest.TempPathFactory):
    """One Apache Kafka 0.9.0.1 broker (and its ZooKeeper) shared by the session; use
    unique topics, never stop it (``kafka09_factory`` gives clusters of a test's own)."""
    from storm_kafka_compat.workshop.servers.kafka_versions import KAFKA_09
    cluster = _session_cluster(tmp_path_factory, KAFKA_09, "kafka09")
    yield cluster
    cluster.close()


@pytest.fixture
def kafka09_factory(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Return ``make(brokers=1, **kwargs) -> KafkaCluster`` (started) for clusters a test
    may kill, restart or reconfigure; all are closed at teardown."""
    from storm_kafka_compat.workshop.servers.kafka_versions import KAFKA_09
    _distribution_or_skip(KAFKA_09)
    for make in _cluster_factory(request, tmp_path_factory):
        yield lambda brokers=1, *, make=make, **kwargs: make(KAFKA_09, brokers, **kwargs)


@pytest.fixture
def kafka09_topic(kafka09, unique: Callable[..., str]):
    """Return ``make(partitions=1, messages=(), config={}) -> topic`` on the session's
    Kafka 0.9 broker; messages go through a batching producer."""
    return _topic_maker(kafka09, unique)


@pytest.fixture(scope="session")
def kafka39(tmp_path_factory: pytest.TempPathFactory):
    """One Apache Kafka 3.9 broker in ZooKeeper mode (and its ZooKeeper) for the
    session; unique topics, never stop it. It registers a second listener
    (``INTERNAL``) and a rack (``rack-a``), as production brokers do."""
    from storm_kafka_compat.workshop.servers.kafka_versions import KAFKA_39
    cluster = _session_cluster(tmp_path_factory, KAFKA_39, "kafka39",
                               listeners={"INTERNAL": "PLAINTEXT"},
                               settings={"broker.rack": "rack-a"})
    yield cluster
    cluster.close()


@pytest.fixture(scope="session")
def kafka4(tmp_path_factory: pytest.TempPathFactory):
    """One Apache Kafka 4.x KRaft node (broker and controller, no ZooKeeper) for the
    session; unique topics, never stop it."""
    from storm_kafka_compat.workshop.servers.kafka_versions import KAFKA_4
    cluster = _session_cluster(tmp_path_factory, KAFKA_4, "kafka4")
    yield cluster
    cluster.close()


@pytest.fixture(params=["kafka39", "kafka4"], ids=["3.9", "4"])
def modern_kafka(request: pytest.FixtureRequest):
    """The session's Kafka 3.9 broker, then its Kafka 4.x broker (a parametrized test)."""
    return request.getfixturevalue(request.param)


@pytest.fixture
def modern_topic(modern_kafka, unique: Callable[..., str]):
    """Return ``make(partitions=1, messages=(), config={}) -> topic`` on ``modern_kafka``;
    messages go through a batching producer."""
    return _topic_maker(modern_kafka, unique)


@pytest.fixture
def modern_factory(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Return ``make(distribution, brokers=3, **kwargs) -> KafkaCluster`` (started) for
    3.9/4.x clusters a test may kill, restart or reconfigure; closed at teardown."""
    for make in _cluster_factory(request, tmp_path_factory):
        yield lambda distribution, brokers=3, *, make=make, **kwargs: make(
            distribution, brokers, **kwargs)


@pytest.fixture(params=["kafka-python", "confluent"])
def backend(request: pytest.FixtureRequest) -> str:
    """Each fetch backend in turn (``kafka.backend``)."""
    return request.param


@pytest.fixture
def clear_seen() -> None:
    """Forget what earlier in-process runs recorded (``tests.integration.modern_jobs``)."""
    from tests.integration.modern_jobs import SEEN
    SEEN.clear()
