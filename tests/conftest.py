"""Shared pytest fixtures.

Sections:

* environment: variables Spark needs, set at import so every test sees them;
* helpers: ``unique`` names;
* parallel runs (``-n 3``): the worker of every test (a file's tests on one worker;
  Apache Storm's LocalClusters one at a time, and the fault suite's tests);
* ZooKeeper: a real server from pyspark's jars (session-scoped ``zk_server``,
  ``zk_server_factory`` for tests that stop, kill or restart a server of their
  own), a bounded kazoo client, a unique root path per test; the log tail of
  every server a failing test used is appended to its report.

Add fixtures for other servers in their own section below.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable, FrozenSet, Iterator, List

import pytest

from storm_kafka_compat.workshop.servers.class_archives import ARCHIVES_ENV
from tests.jvm import (class_archives, make_spark_class_archive, spark_class_archive,
                       spark_java_options)

#: per-test CPU accounting, on when SKC_TEST_CPU names a file (tests/cpu_accounting.py)
pytest_plugins = ("tests.cpu_accounting",)

# --- environment ---------------------------------------------------------------------

os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
# Spark's JVMs under test (local sessions, `run` subprocesses, spark-submit; a standalone
# cluster's master and workers) start as the workshop's servers do, sharing one archive
# of Spark's classes once it is made (tests/jvm.py, pytest_configure below)
# the workshop's servers (ZooKeeper, Kafka, Storm's LocalCluster) share theirs too
os.environ.setdefault(ARCHIVES_ENV, str(class_archives()))
_SPARK_OPTIONS = ("SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS")
_OURS = {name for name in _SPARK_OPTIONS if name not in os.environ}
for _name in _OURS:
    os.environ[_name] = spark_java_options()
# the bolt tasks' saved state (topology.state.dir's default) goes to a directory of this
# run's own, never to the user's ~/.local/state
os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="skc-state-")

_ARCHIVE_KEY = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """Before any test (and, under ``-n``, before the workers start and take this
    environment): make the archive of Spark's classes if missing, unless only the
    tests without servers run, and hand it to the Spark JVMs whose options are ours."""
    if hasattr(config, "workerinput"):
        return
    if "not integration" in (config.option.markexpr or ""):
        config.stash[_ARCHIVE_KEY] = "not made (no integration tests selected)"
        return
    started = time.monotonic()
    why_not = make_spark_class_archive()
    if why_not is not None:
        config.stash[_ARCHIVE_KEY] = f"not used: {why_not}"
        return
    for name in _OURS:
        os.environ[name] = spark_java_options()
    config.stash[_ARCHIVE_KEY] = (f"{spark_class_archive()} "
                                  f"(ready after {time.monotonic() - started:.1f} s)")


def pytest_report_header(config: pytest.Config) -> str:
    return f"Spark class archive: {config.stash.get(_ARCHIVE_KEY, 'not made')}"

# --- helpers --------------------------------------------------------------------------

_counter = itertools.count(1)


@pytest.fixture
def unique(request: pytest.FixtureRequest) -> Callable[..., str]:
    """Return ``make(prefix="t") -> str``: names unique across tests and runs.

    Names use only ``[a-z0-9-]``, valid as Kafka topics, group ids and znode names.
    """
    test = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40]

    def make(prefix: str = "t") -> str:
        return f"{prefix}-{test}-{next(_counter)}-{uuid.uuid4().hex[:6]}"

    return make


# --- parallel runs --------------------------------------------------------------------


#: fixtures that start Apache Storm's LocalCluster (tests/peers/fixtures.py), which binds
#: its in-process ZooKeeper to port 2000 whatever the test asks: one at a time
STORM_FIXTURES = ("storm1_ready", "storm2_ready")
TESTS = Path(__file__).resolve().parent


@functools.lru_cache(maxsize=1)
def storm_files() -> FrozenSet[str]:
    """The test files (paths as in node ids) that use a :data:`STORM_FIXTURES` fixture."""
    found = set()
    for path in TESTS.rglob("test_*.py"):
        text = path.read_text()
        if any(name in text for name in STORM_FIXTURES):
            found.add(path.relative_to(TESTS.parent).as_posix())
    return frozenset(found)


#: the fault files that kill, pause or churn brokers: one worker runs them one after
#: another, beside the worker running the rest of the fault suite (drivers, Python
#: workers, bolt hosts and ZooKeeper killed; operator stops)
BROKER_FAULT_FILES = ("test_kafka09_leaders.py", "test_modern_leaders.py",
                      "test_kafka09_topic_churn.py", "test_kafka09_kafka_bolt.py",
                      "test_broker_pause.py")


def parallel_group(nodeid: str) -> str:
    """Where a test runs under ``-n``: every test of a file on one worker, in order,
    sharing its module fixtures; every test that starts Storm on one worker, one after
    another; and the fault suite (``tests/faults/``: they kill servers and time
    recoveries) in two such groups, those killing brokers and the others, so that no
    two tests of a group share the machine."""
    path = nodeid.split("::")[0]
    if path.startswith("tests/faults/"):
        return "faults-brokers" if path.rsplit("/", 1)[1] in BROKER_FAULT_FILES else "faults"
    if path in storm_files():
        return "storm"
    return path


#: the groups that take longest, handed out first so that none starts last and runs
#: alone (test-seconds in a ``-n 2`` run: test_spark_cluster.py 1,063, the two fault
#: groups about 940 each, the Storm files about 800, test_bench_cli.py 352; no other
#: file reaches 200)
LONGEST_GROUPS = ("tests/integration/test_spark_cluster.py", "faults", "faults-brokers",
                  "storm", "tests/integration/test_bench_cli.py")


def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    """The tests of :data:`LONGEST_GROUPS` first, in that order, each group's tests in
    the order collected; then every other test as collected."""
    rank = {group: i for i, group in enumerate(LONGEST_GROUPS)}
    items.sort(key=lambda item: rank.get(parallel_group(item.nodeid), len(rank)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's scheduling by :func:`parallel_group` (its own ``loadgroup`` marks
    are not applied under pytest 9: the group suffix it writes to a test's node id no
    longer changes the id, and a file's tests were spread over the workers), the groups
    handed out in the order collected (xdist would start with those of most tests)."""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return parallel_group(nodeid)

    config.option.loadscopereorder = False
    return GroupScheduling(config, log)


# --- ZooKeeper ----------------------------------------------------------------------

# every EmbeddedZooKeeper a test used, for the log tail on failure
_ZK_SERVERS_KEY = pytest.StashKey[List["EmbeddedZooKeeper"]]()  # noqa: F821


def _remember_server(request: pytest.FixtureRequest, server: object) -> None:
    request.node.stash.setdefault(_ZK_SERVERS_KEY, []).append(server)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Append the ZooKeeper log tail to the report of a failed test."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    servers = list(item.stash.get(_ZK_SERVERS_KEY, []))
    session_server = getattr(item.session, "_skc_zk_server", None)
    if session_server is not None and "zk_server" in getattr(item, "fixturenames", ()):
        servers.insert(0, session_server)
    for server in dict.fromkeys(servers):
        report.sections.append((f"ZooKeeper {server.connect_string} log tail ({server.log_path})",
                                server.log_tail(60)))


@pytest.fixture(scope="session")
def zk_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """A real ZooKeeper shared by the session. Do not stop it: use ``zk_server_factory``."""
    from storm_kafka_compat.workshop.servers.zookeeper import EmbeddedZooKeeper

    server = EmbeddedZooKeeper(base_dir=tmp_path_factory.mktemp("zookeeper"))
    server.start()
    request.session._skc_zk_server = server
    yield server
    server.stop()


@pytest.fixture
def zk_server_factory(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Return ``make(**kwargs) -> EmbeddedZooKeeper`` (started) for servers a test
    may stop, kill, pause or restart; all are stopped at teardown."""
    from storm_kafka_compat.workshop.servers.zookeeper import EmbeddedZooKeeper

    servers: List[EmbeddedZooKeeper] = []

    def make(**kwargs: object) -> EmbeddedZooKeeper:
        server = EmbeddedZooKeeper(base_dir=tmp_path_factory.mktemp("zookeeper-own"), **kwargs)
        servers.append(server)
        _remember_server(request, server)
        return server.start()

    yield make
    for server in servers:
        server.resume()
        server.stop()


def make_kazoo_client(hosts: str, **kwargs: object):
    """A kazoo client that reconnects at most 1 s apart (the default backoff grows to an
    hour); callers must still put timeouts on calls made while disconnected."""
    from kazoo.client import KazooClient
    from kazoo.retry import KazooRetry

    kwargs.setdefault("timeout", 10.0)
    return KazooClient(hosts=hosts,
                       connection_retry=KazooRetry(max_tries=-1, max_delay=1.0),
                       command_retry=KazooRetry(max_tries=3, delay=0.2, max_delay=1.0),
                       **kwargs)


@pytest.fixture
def zk_client(zk_server):
    """A connected kazoo client on ``zk_server``, stopped and closed after the test."""
    client = make_kazoo_client(zk_server.connect_string)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def zk_root(unique: Callable[..., str]) -> str:
    """A ZooKeeper path no other test uses, e.g. ``/skc-tests/zkroot-<test>-<n>-<hex>``
    (not created)."""
    return f"/skc-tests/{unique('zkroot')}"
