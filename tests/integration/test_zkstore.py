"""ZkStateStore against a real ZooKeeper (pyspark's jars).

Covers spec 11 cases 7 (ZooKeeper unavailable: we retry, then fail clearly),
33 (a failed write leaves the last successful commit) and 34 (byte format), plus
batching, digest ACLs, restarts and session expiry.
"""

from __future__ import annotations

import math
import threading
import time

import pytest
from kazoo.exceptions import NoAuthError

from storm_kafka_compat.config import SpoutConfig, TopologyConfig, ZkAuth, ZkHosts
from storm_kafka_compat.errors import (
    ConfigError,
    StateError,
    ZooKeeperUnavailableError,
)
from storm_kafka_compat.offsets.document import encode_document
from storm_kafka_compat.offsets.paths import partition_path
from storm_kafka_compat.offsets.zkstore import REQUEST_BUDGET_BYTES, ZkStateStore
from tests.faults.proxy import TcpProxy
from storm_kafka_compat.workshop.servers.zookeeper import free_port
from tests.conftest import make_kazoo_client

pytestmark = pytest.mark.integration

CALL_TIMEOUT_S = 10


def _doc(partition: int, offset: int, topology_id: str = "py-1") -> bytes:
    return encode_document(topology_id=topology_id, topology_name="clicks", offset=offset,
                           partition=partition, broker_host="127.0.0.1", broker_port=9092,
                           topic="clicks")


def _store(hosts: str, **kwargs) -> ZkStateStore:
    kwargs.setdefault("connection_timeout_ms", 5000)
    kwargs.setdefault("retry_times", 2)
    kwargs.setdefault("retry_interval_ms", 200)
    return ZkStateStore(hosts, **kwargs)


def _get(client, path):
    return client.get_async(path).get(timeout=CALL_TIMEOUT_S)[0]


def _exists(client, path):
    return client.exists_async(path).get(timeout=CALL_TIMEOUT_S) is not None


# --- reads and writes ---------------------------------------------------------------------

def test_write_then_read_back(zk_server, zk_client, zk_root):
    path = partition_path(zk_root, "spout", 3)
    data = _doc(3, 4821907)
    with _store(zk_server.connect_string) as store:
        assert store.read(path) is None
        store.write(path, data)
        doc = store.read(path)
    assert doc is not None and doc.problem is None
    assert (doc.topology_id, doc.offset, doc.data) == ("py-1", 4821907, data)
    # what another client (Storm, storm-kafka-monitor) sees: the exact bytes
    assert _get(zk_client, path) == data


def test_reads_a_document_written_as_storm_writes_it(zk_server, zk_client, zk_root):
    path = f"{zk_root}/my-spout-id/partition_0"
    storm_bytes = (b'{"topology":{"id":"clicks-17-1514764800","name":"clicks"},"offset":4821907,'
                   b'"partition":0,"broker":{"host":"kafka-2.example.com","port":9092},'
                   b'"topic":"clicks"}')
    zk_client.create(path, storm_bytes, makepath=True)
    with _store(zk_server.connect_string) as store:
        doc = store.read(path)
    assert doc.problem is None
    assert doc.topology_id == "clicks-17-1514764800"
    assert doc.offset == 4821907


def test_corrupt_document_is_read_with_its_problem(zk_server, zk_client, zk_root):
    path = f"{zk_root}/s/partition_1"
    zk_client.create(path, b'{"topology":{"id":"x"},"offset":12.0}', makepath=True)
    with _store(zk_server.connect_string) as store:
        doc = store.read(path)
    assert doc.problem == "offset is not an integer (12.0)"
    assert doc.data == b'{"topology":{"id":"x"},"offset":12.0}'


def test_overwrite_delete_and_children(zk_server, zk_client, zk_root):
    path = partition_path(zk_root, "s", 0)
    with _store(zk_server.connect_string) as store:
        store.write(path, _doc(0, 5))
        store.write(path, _doc(0, 9))
        assert store.read(path).offset == 9
        assert store.children(f"{zk_root}/s") == ["partition_0"]
        assert store.children(f"{zk_root}/missing") is None
        assert store.delete(path) is True
        assert store.delete(path) is False
        assert store.read(path) is None
        # a deleted node is created again, not set (the store forgot it existed)
        store.write(path, _doc(0, 11))
    assert _get(zk_client, path) == _doc(0, 11)


def test_invalid_path_is_a_config_error_before_any_request(zk_server):
    with _store(zk_server.connect_string) as store:
        with pytest.raises(ConfigError, match="kafka/s/partition_0"):
            store.read("kafka/s/partition_0")
        with pytest.raises(ConfigError, match="ends with"):
            store.write_many({"/kafka/s/": b"x"})
        assert store.round_trips == 0


def test_write_many_uses_few_round_trips(zk_server, zk_client, zk_root):
    existing = {partition_path(zk_root, "s", p): _doc(p, 1) for p in range(1000)}
    tx = zk_client.transaction()
    zk_client.ensure_path(f"{zk_root}/s")
    for path, data in existing.items():
        tx.create(path, data)
    assert not any(isinstance(r, Exception) for r in tx.commit())

    docs = {partition_path(zk_root, "s", p): _doc(p, 1000 + p) for p in range(2000)}
    size = sum(len(p) + len(d) for p, d in docs.items())
    # one listing of the parent, then transactions of at most the size budget
    bound = 1 + math.ceil(size / REQUEST_BUDGET_BYTES) + 1
    with _store(zk_server.connect_string) as store:
        first = store.write_many(docs)
        assert first <= bound <= 5, (first, bound)
        # everything known now: transactions only
        again = {p: _doc(int(p.rsplit("_", 1)[1]), 5000) for p in docs}
        second = store.write_many(again)
        assert second <= bound - 1
        assert store.round_trips == first + second
    results = {p: zk_client.get_async(p) for p in docs}
    assert all(r.get(timeout=CALL_TIMEOUT_S)[0] == again[p] for p, r in results.items())


def test_write_many_recovers_from_nodes_changed_behind_its_back(zk_server, zk_client, zk_root):
    a, b = partition_path(zk_root, "s", 0), partition_path(zk_root, "s", 1)
    with _store(zk_server.connect_string) as store:
        store.write_many({a: _doc(0, 1)})
        zk_client.delete(a)                 # the store believes it exists
        zk_client.create(b, b"other")       # the store believes it is new
        store.write_many({a: _doc(0, 2), b: _doc(1, 2)})
    assert _get(zk_client, a) == _doc(0, 2)
    assert _get(zk_client, b) == _doc(1, 2)


def test_list_spout_documents_both_layouts(zk_server, zk_root):
    plain = {partition_path(zk_root, "s", p): _doc(p, 10 + p) for p in (0, 2, 10)}
    wild = {partition_path(zk_root, "w", p, topic): _doc(p, 7) for topic in ("b.x", "a")
            for p in (1, 0)}
    with _store(zk_server.connect_string) as store:
        store.write_many({**plain, **wild, f"{zk_root}/s/not-a-partition": b"x"})
        listed = store.list_spout_documents(zk_root, "s", wildcard=False)
        assert list(listed) == [partition_path(zk_root, "s", p) for p in (0, 2, 10)]
        assert [d.offset for d in listed.values()] == [10, 12, 20]
        listed_wild = store.list_spout_documents(zk_root, "w", wildcard=True)
        assert list(listed_wild) == [partition_path(zk_root, "w", p, t)
                                     for t in ("a", "b.x") for p in (0, 1)]
        assert store.list_spout_documents(zk_root, "nothing", wildcard=False) == {}


def test_missing_chroot_is_reported_with_the_fix(zk_server, zk_client, unique):
    chroot = f"/{unique('chroot')}"
    with _store(f"{zk_server.connect_string}{chroot}") as store:
        with pytest.raises(StateError, match="chroot"):
            store.write("/offsets/s/partition_0", _doc(0, 3))
        zk_client.ensure_path(chroot)
        store.write("/offsets/s/partition_0", _doc(0, 3))
        assert store.read("/offsets/s/partition_0").offset == 3
    assert _get(zk_client, f"{chroot}/offsets/s/partition_0") == _doc(0, 3)


def test_from_config_builds_the_connect_string_like_storm():
    spout = SpoutConfig(hosts=ZkHosts("kafka-zk:2181"), topic="t", zk_root="/r", id="i")
    topology = TopologyConfig(name="n", zookeeper_servers=("z1", "z2"), zookeeper_port=2182,
                              zookeeper_retry_times=7, zookeeper_retry_interval_ms=300)
    store = ZkStateStore.from_config(spout, topology)
    assert store.hosts == "z1:2182,z2:2182"
    assert (store.retry_times, store.retry_interval_ms) == (7, 300)
    own = SpoutConfig(hosts=ZkHosts("kafka-zk:2181"), topic="t", zk_root="/r", id="i",
                      zk_servers=("a", "b:2000"), zk_port=2999)
    assert ZkStateStore.from_config(own, topology).hosts == "a:2999,b:2000"
    with pytest.raises(ConfigError, match="zkServers"):
        ZkStateStore.from_config(SpoutConfig(hosts=ZkHosts("x"), topic="t", zk_root="/r",
                                             id="i", zk_servers=()), topology)


@pytest.mark.parametrize("hosts, kwargs, key", [
    ("", {}, None),
    ("h:1", {"retry_times": -1}, "storm.zookeeper.retry.times"),
    ("h:1", {"connection_timeout_ms": 0}, "storm.zookeeper.connection.timeout"),
    ("h:1", {"auth": ZkAuth(scheme="sasl", credential="a:b")}, "storm.zookeeper.auth.scheme"),
    ("h:1", {"auth": ZkAuth(credential="no-colon")}, "storm.zookeeper.auth.payload"),
])
def test_bad_store_settings_are_config_errors(hosts, kwargs, key):
    with pytest.raises(ConfigError) as info:
        ZkStateStore(hosts, **kwargs)
    assert info.value.key == key


# --- digest ACL ---------------------------------------------------------------------

def test_digest_acl_on_created_nodes(zk_server, zk_client, zk_root):
    zk_client.ensure_path(zk_root)          # keep the shared ancestors open
    path = partition_path(zk_root, "secured", 0)
    alice = ZkAuth(credential="alice:secret", acl_on_create=True)
    with _store(zk_server.connect_string, auth=alice) as store:
        store.write(path, _doc(0, 42))
    with pytest.raises(NoAuthError):
        zk_client.get(path)
    admin = make_kazoo_client(zk_server.connect_string, auth_data=[("digest", "alice:secret")])
    admin.start(timeout=15)
    try:
        for node in (f"{zk_root}/secured", path):   # the parent it created too
            acls, _stat = admin.get_acls(node)
            assert [(a.id.scheme, a.id.id.split(":")[0], a.perms) for a in acls] == [
                ("digest", "alice", 31)]
    finally:
        admin.stop()
        admin.close()
    with _store(zk_server.connect_string) as anonymous:
        with pytest.raises(StateError, match="ACL") as info:
            anonymous.read(path)
        assert not isinstance(info.value, ZooKeeperUnavailableError)
        assert info.value.zk_path == path
    with _store(zk_server.connect_string,
                auth=ZkAuth(credential="alice:wrong")) as wrong:
        with pytest.raises(StateError, match="storm.zookeeper.auth.payload"):
            wrong.write(path, _doc(0, 1))
    with _store(zk_server.connect_string, auth=ZkAuth(credential="alice:secret")) as reader:
        assert reader.read(path).offset == 42


# --- outages ------------------------------------------------------------------------

def test_stopped_zookeeper_raises_unavailable_within_the_retry_budget(zk_server_factory):
    server = zk_server_factory()
    path = "/r/s/partition_0"
    store = _store(server.connect_string, connection_timeout_ms=400, retry_times=2,
                   retry_interval_ms=300, call_timeout_s=1.0)
    with store:
        store.write(path, _doc(0, 5))
        server.stop()
        started = time.monotonic()
        with pytest.raises(ZooKeeperUnavailableError) as info:
            store.read(path)
        elapsed = time.monotonic() - started
    assert elapsed < store.retry_budget_s
    assert elapsed >= store.retry_times * store.retry_interval_ms / 1000
    assert info.value.hosts == server.connect_string
    assert info.value.zk_path == path
    assert server.connect_string in str(info.value) and path in str(info.value)


def test_never_reachable_zookeeper_raises_unavailable():
    hosts = f"127.0.0.1:{free_port()}"      # nothing listens there
    store = _store(hosts, connection_timeout_ms=300, retry_times=1,
                   retry_interval_ms=100)
    with store:
        started = time.monotonic()
        with pytest.raises(ZooKeeperUnavailableError):
            store.write("/r/s/partition_0", _doc(0, 1))
        assert time.monotonic() - started < store.retry_budget_s


def test_write_survives_a_restart_the_retry_budget_covers(zk_server_factory):
    server = zk_server_factory()
    outage_s = 1.5
    store = _store(server.connect_string, connection_timeout_ms=500, retry_times=40,
                   retry_interval_ms=250)
    existing = "/r/s/partition_0"
    docs = {existing: _doc(0, 20), "/r/s/partition_1": _doc(1, 21)}
    with store:
        store.write(existing, _doc(0, 10))
        server.stop()
        restart = threading.Timer(outage_s, server.start)
        restart.start()
        started = time.monotonic()
        try:
            store.write_many(docs)
        finally:
            restart.join()
        assert time.monotonic() - started >= outage_s / 2
        assert store.read("/r/s/partition_1").offset == 21
    client = make_kazoo_client(server.connect_string)
    client.start(timeout=15)
    try:
        assert {p: _get(client, p) for p in docs} == docs
    finally:
        client.stop()
        client.close()


def test_write_fails_cleanly_when_the_outage_outlasts_the_budget(zk_server_factory):
    server = zk_server_factory()
    store = _store(server.connect_string, connection_timeout_ms=300, retry_times=1,
                   retry_interval_ms=100)
    existing = "/r/s/partition_0"
    with store:
        store.write(existing, _doc(0, 10))
        server.stop()
        with pytest.raises(ZooKeeperUnavailableError):
            store.write_many({existing: _doc(0, 20), "/r/s/partition_1": _doc(1, 21)})
        server.start()
        # the store reconnects; nothing it gave up on may be sent late
        deadline = time.monotonic() + 15
        while store.session_id is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert store.read(existing).offset == 10
    client = make_kazoo_client(server.connect_string)
    client.start(timeout=15)
    try:
        assert _get(client, existing) == _doc(0, 10)
        assert not _exists(client, "/r/s/partition_1")
    finally:
        client.stop()
        client.close()


def test_session_expiry_through_a_cut_network(zk_server):
    session_timeout_ms = 2000
    with TcpProxy("127.0.0.1", zk_server.port) as proxy:
        store = _store(proxy.connect_string, session_timeout_ms=session_timeout_ms,
                       connection_timeout_ms=1000, retry_times=30, retry_interval_ms=250)
        with store:
            store.write("/expiry/s/partition_0", _doc(0, 1))
            first_session = store.session_id
            proxy.cut()
            # the server expires a session within one tick after its timeout
            time.sleep((session_timeout_ms + 2 * zk_server.tick_time_ms) / 1000)
            proxy.heal()
            store.write_many({"/expiry/s/partition_0": _doc(0, 2),
                              "/expiry/s/partition_1": _doc(1, 3)})
            assert store.session_id not in (None, first_session)
            assert store.read("/expiry/s/partition_0").offset == 2
            assert store.read("/expiry/s/partition_1").offset == 3


# --- the embedded server itself -------------------------------------------------------

def test_embedded_zookeeper_start_failure_shows_the_log(tmp_path):
    import socket

    from storm_kafka_compat.workshop.servers.zookeeper import EmbeddedZooKeeper
    from storm_kafka_compat.errors import EmbeddedServerError

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))        # bound, not listening: ruok gets refused
        server = EmbeddedZooKeeper(port=taken.getsockname()[1], base_dir=tmp_path,
                                   start_timeout_s=60)
        with pytest.raises(EmbeddedServerError) as info:
            server.start()
    assert not server.running
    assert str(server.log_path) in str(info.value)
    assert "Address already in use" in str(info.value) or "BindException" in str(info.value)
