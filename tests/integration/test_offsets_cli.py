"""Operator tools against a real ZooKeeper and the tansu broker.

Sections: the Kafka consumer-group adapter; the ``offsets`` commands through
the installed console script.

tansu workarounds here: topics are written one record per batch (``kafka_topic``,
``produce_exact``) so that tansu's high watermark, hence the lag, is exact; the
metadata string is not compared after a group commit (tansu drops it); Kafka's
broker registry is written by the test (``registry.write_broker_registry``) as no
ZooKeeper-mode broker registers itself. On Apache Kafka 0.9.0.1 none of these is
needed: test_kafka09_zk_resume.py (show, explain, reset with a batching producer
and the registry the broker wrote) and test_kafka09_groups.py (migrate both ways,
metadata checked on the broker).
"""

from __future__ import annotations

import time
import pytest

from storm_kafka_compat.errors import ConfigError, KafkaAccessError
from storm_kafka_compat.kafka.groups import KafkaGroupOffsets
from storm_kafka_compat.errors import ActiveGroupError, GroupAccessError

pytestmark = pytest.mark.integration

# --- KafkaGroupOffsets on tansu -------------------------------------------------------


def test_group_commit_then_committed_round_trips_offsets(tansu, kafka_topic, unique):
    topic = kafka_topic(partitions=3, messages=[(0, None, b"a")] * 5 + [(1, None, b"b")] * 2)
    group = unique("group")
    with KafkaGroupOffsets(tansu.bootstrap, group) as g:
        keys = [(topic, 0), (topic, 1), (topic, 2)]
        assert g.read_many(keys) == {k: None for k in keys}
        assert g.active_members() == []
        g.write_many({(topic, 0): (4, '{"topologyId":"t-1"}'), (topic, 1): (0, "")})
        got = g.read_many(keys)
    # tansu workaround: tansu 0.6 drops the metadata string (module docstring), so only
    # the offsets are compared; test_kafka09_groups.py compares the metadata too
    assert {k: (v[0] if v else None) for k, v in got.items()} == {
        (topic, 0): 4, (topic, 1): 0, (topic, 2): None}
    assert all(isinstance(v[1], str) for v in got.values() if v)


def test_group_commit_refuses_a_group_with_live_members(tansu, kafka_topic, unique):
    from kafka import KafkaConsumer
    topic = kafka_topic(partitions=1, messages=[(0, None, b"a")] * 3)
    group = unique("group")
    consumer = KafkaConsumer(topic, bootstrap_servers=tansu.bootstrap, group_id=group,
                             session_timeout_ms=2000, heartbeat_interval_ms=500,
                             enable_auto_commit=False)
    try:
        deadline = time.monotonic() + 15
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(timeout_ms=500)
        assert consumer.assignment(), "the consumer never joined its group"
        with KafkaGroupOffsets(tansu.bootstrap, group) as g:
            members = g.active_members()
            assert len(members) == 1
            with pytest.raises(ActiveGroupError) as info:
                g.write_many({(topic, 0): (1, "m")})
            assert group in str(info.value) and "stop its consumers" in str(info.value)
            assert info.value.members == tuple(members)
    finally:
        consumer.close()


def test_group_rejects_negative_offsets_and_empty_group_id(tansu, unique):
    with pytest.raises(ConfigError):
        KafkaGroupOffsets(tansu.bootstrap, "")
    with KafkaGroupOffsets(tansu.bootstrap, unique("group")) as g:
        with pytest.raises(GroupAccessError, match="-3"):
            g.write_many({("t", 0): (-3, "")})


def test_group_unreachable_broker_is_a_kafka_access_error(unique):
    from storm_kafka_compat.workshop.servers.tansu import free_port
    addr = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(KafkaAccessError) as info:
        KafkaGroupOffsets(addr, unique("group"), {"bootstrap_timeout_ms": 1500})
    assert addr in str(info.value) and "broker answers" in str(info.value)
    assert time.monotonic() - started < 10


# --- the offsets commands through the console script ------------------------------------

import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Dict, List, Optional  # noqa: E402

import yaml  # noqa: E402

from storm_kafka_compat.offsets.document import encode_document  # noqa: E402
from storm_kafka_compat.workshop.servers import registry  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).parent / "storm-kafka-compat"
if not SCRIPT.exists():  # pragma: no cover - the venv the project documents
    SCRIPT = Path("/work/main/.venv/bin/storm-kafka-compat")
ZK_TIMEOUT = 10


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=str(ROOT))


def doc(offset: int, partition: int, topic: str, tid: str = "clicks-17-1514764800",
        name: str = "clicks", host: str = "kafka-2.example.com", port: int = 9092) -> bytes:
    return encode_document(topology_id=tid, topology_name=name, offset=offset,
                           partition=partition, broker_host=host, broker_port=port, topic=topic)


def put(client, path: str, data: bytes) -> None:
    client.ensure_path_async(path.rsplit("/", 1)[0]).get(timeout=ZK_TIMEOUT)
    if client.exists_async(path).get(timeout=ZK_TIMEOUT):
        client.set_async(path, data).get(timeout=ZK_TIMEOUT)
    else:
        client.create_async(path, data).get(timeout=ZK_TIMEOUT)


def get(client, path: str) -> Optional[bytes]:
    if not client.exists_async(path).get(timeout=ZK_TIMEOUT):
        return None
    return client.get_async(path).get(timeout=ZK_TIMEOUT)[0]


def snapshot(client, root: str) -> Dict[str, bytes]:
    """Every znode's bytes under ``root``."""
    out: Dict[str, bytes] = {}

    def walk(path: str) -> None:
        data = get(client, path)
        if data is None:
            return
        out[path] = data
        for child in client.get_children_async(path).get(timeout=ZK_TIMEOUT):
            walk(f"{path}/{child}")
    walk(root)
    return out


def parse_table(text: str) -> List[Dict[str, str]]:
    lines = [line for line in text.splitlines() if line.strip()]
    header = lines[0].split()
    return [dict(zip(header, line.split(None, len(header) - 1))) for line in lines[1:]]


class Job:
    """A ZkHosts job: Kafka's registry in a chroot of the test ZooKeeper pointing at
    tansu, offsets under a unique zkRoot."""

    def __init__(self, tmp_path: Path, zk_server, zk_client, zk_root: str, topic: str,
                 partitions: int, *, wildcard: bool = False, extra_spout: Optional[dict] = None,
                 topology_id: Optional[str] = None, tansu=None) -> None:
        self.zk = zk_client
        self.zk_root = zk_root
        self.topic = topic
        self.chroot = f"{zk_root}-kafka"
        self.broker = (tansu.host, tansu.port)
        zk_client.ensure_path_async(self.chroot).get(timeout=ZK_TIMEOUT)
        from tests.conftest import make_kazoo_client
        chrooted = make_kazoo_client(zk_server.connect_string + self.chroot)
        chrooted.start(timeout=15)
        try:
            registry.write_broker_registry(chrooted, brokers={1: (tansu.host, tansu.port)},
                                           topics={topic: {p: 1 for p in range(partitions)}})
        finally:
            chrooted.stop()
            chrooted.close()
        spout = {"topic": topic, "zkRoot": zk_root, "id": "spout1",
                 "zkServers": [zk_server.connect_string], "socketTimeoutMs": 5000}
        spout.update(extra_spout or {})
        topology = {"name": "clicks", "storm.zookeeper.connection.timeout": 5000,
                    "storm.zookeeper.retry.times": 1, "storm.zookeeper.retry.interval": 200}
        if wildcard:
            topology["kafka.topic.wildcard.match"] = True
        if topology_id:
            topology["id"] = topology_id
        self.config = {"spout": spout, "hosts": {"zk": zk_server.connect_string + self.chroot},
                       "topology": topology, "bolt": "tests.bolts:record",
                       "spark": {"master": "local[1]"}}
        self.path = tmp_path / "job.yaml"
        self.path.write_text(yaml.safe_dump(self.config))
        self.wildcard = wildcard

    def zk_path(self, partition: int, topic: Optional[str] = None) -> str:
        if self.wildcard:
            return f"{self.zk_root}/spout1/{topic or self.topic}/partition_{partition}"
        return f"{self.zk_root}/spout1/partition_{partition}"


@pytest.fixture
def make_job(tmp_path, zk_server, zk_client, zk_root, tansu):
    def make(topic: str, partitions: int, **kw) -> Job:
        return Job(tmp_path, zk_server, zk_client, zk_root, topic, partitions, tansu=tansu, **kw)
    return make


def _messages(counts: Dict[int, int]) -> list:
    return [(p, None, f"m{p}-{i}".encode()) for p, n in counts.items() for i in range(n)]


def test_show_json_is_storm_kafka_monitor_document(kafka_topic, make_job):
    topic = kafka_topic(partitions=3, messages=_messages({0: 10, 1: 4, 2: 0}))
    job = make_job(topic, 3)
    put(job.zk, job.zk_path(0), doc(7, 0, topic))
    put(job.zk, job.zk_path(1), doc(4, 1, topic))
    res = cli("offsets", "show", str(job.path), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == {topic: {
        "0": {"consumerCommittedOffset": 7, "logHeadOffset": 10, "lag": 3},
        "1": {"consumerCommittedOffset": 4, "logHeadOffset": 4, "lag": 0},
        # no node: -1 and lag = head + 1, as storm-kafka-monitor prints it
        "2": {"consumerCommittedOffset": -1, "logHeadOffset": 0, "lag": 1},
    }}


def test_show_table_has_consumer_groups_columns(kafka_topic, make_job):
    topic = kafka_topic(partitions=2, messages=_messages({0: 5, 1: 2}))
    job = make_job(topic, 2)
    put(job.zk, job.zk_path(0), doc(3, 0, topic))
    res = cli("offsets", "show", str(job.path))
    assert res.returncode == 0, res.stderr
    header = res.stdout.splitlines()[0].split()
    assert header == ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-START-OFFSET",
                      "LOG-END-OFFSET", "LAG", "BROKER", "TOPOLOGY-ID", "ZK-PATH", "NOTE"]
    rows = parse_table(res.stdout)
    assert rows[0] == {"TOPIC": topic, "PARTITION": "0", "CURRENT-OFFSET": "3",
                       "LOG-START-OFFSET": "0", "LOG-END-OFFSET": "5", "LAG": "2",
                       "BROKER": "kafka-2.example.com:9092",
                       "TOPOLOGY-ID": "clicks-17-1514764800", "ZK-PATH": job.zk_path(0),
                       "NOTE": "-"}
    assert rows[1] == {"TOPIC": topic, "PARTITION": "1", "CURRENT-OFFSET": "-",
                       "LOG-START-OFFSET": "0", "LOG-END-OFFSET": "2", "LAG": "-",
                       "BROKER": "-", "TOPOLOGY-ID": "-", "ZK-PATH": job.zk_path(1),
                       "NOTE": "-"}


def test_bad_config_exits_2_and_unreachable_zookeeper_exits_1(tmp_path, make_job, kafka_topic):
    bad = tmp_path / "bad.yaml"
    bad.write_text("spout: {topic: t}\n")
    res = cli("offsets", "show", str(bad))
    assert res.returncode == 2 and res.stderr.startswith("Error: ")
    res = cli("offsets", "reset", str(bad))
    assert res.returncode == 2 and "exactly one of" in res.stderr


# --- explain ------------------------------------------------------------------------------

UUID_ID = "5747dba6-c947-4c4f-af4a-4f50a84817bf"

MALFORMED = [
    (b'{"topology":{"id":"x","name":"n"},"offset":12.0,"partition":0}', "offset is not an integer"),
    (b'{"topology":{"id":"x","name":"n"},"offset":"12","partition":0}', "offset is not an integer"),
    (b'{"topology":{"id":"x","name":"n"},"offset":null,"partition":0}', "offset is not an integer"),
    (b'{"topology":{"id":"x","name":"n"},"partition":0}', "offset missing"),
    (b'{"offset":12,"partition":0}', "topology missing"),
    (b'{"topology":"x","offset":12}', "topology is not an object"),
    (b'{"topology":{"id":17,"name":"n"},"offset":12}', "topology.id is not a string"),
    (b'{"topology":{"id":"x"', "invalid JSON"),
    (b"", "empty document"),
    (b"[1,2]", "root is not an object"),
    (b"12", "root is not an object"),
    (b"null", "root is not an object"),
]


def test_explain_every_storm_line_and_every_malformed_kind(kafka_topic, make_job):
    n = 3 + len(MALFORMED)
    topic = kafka_topic(partitions=n, messages=_messages({p: 20 for p in range(n)}))
    job = make_job(topic, n, topology_id="clicks-18-1600000000")
    put(job.zk, job.zk_path(0), doc(5, 0, topic, tid=UUID_ID))            # 0.9.x UUID id
    put(job.zk, job.zk_path(1), doc(9, 1, topic))                         # 1.x Storm id
    for i, (data, _) in enumerate(MALFORMED):
        put(job.zk, job.zk_path(3 + i), data)
    res = cli("offsets", "explain", str(job.path), "--json")
    assert res.returncode == 0, res.stderr
    items = {e["partition"]: e for e in json.loads(res.stdout)}
    assert len(items) == n
    for e in items.values():
        assert {"topic", "partition", "zk_path", "stored", "decision", "start_offset",
                "reason"} <= set(e)
        assert e["topic"] == topic and e["zk_path"] == job.zk_path(e["partition"])
    assert items[0]["decision"] == "resume" and items[0]["start_offset"] == 5
    assert items[0]["stored"]["topology"]["id"] == UUID_ID
    assert UUID_ID in items[0]["reason"]
    assert items[1]["decision"] == "resume" and items[1]["start_offset"] == 9
    assert items[1]["stored"]["offset"] == 9
    assert items[2] == {**items[2], "decision": "no_state", "start_offset": 0, "stored": None}
    for i, (data, problem) in enumerate(MALFORMED):
        e = items[3 + i]
        assert e["decision"] == "invalid_state", (data, e)
        assert e["start_offset"] == 0, (data, e)      # startOffsetTime -2: the log start
        assert problem in e["rejected"] and problem in e["reason"], (data, e)
        assert e["stored_bytes"] == data.decode()


def test_explain_ignore_zk_offsets_and_wildcard_paths(kafka_topic, make_job):
    t1 = kafka_topic(partitions=1, messages=_messages({0: 8}))
    job = make_job(t1, 1, wildcard=True,
                   extra_spout={"ignoreZkOffsets": True, "startOffsetTime": -1},
                   topology_id="clicks-2-1700000000")
    # the wildcard regex matches the topic; documents live under zkRoot/id/<topic>/
    job.config["spout"]["topic"] = t1.split("-")[0] + "-.*"
    job.path.write_text(yaml.safe_dump(job.config))
    put(job.zk, job.zk_path(0, t1), doc(3, 0, t1))                    # another topology's id
    res = cli("offsets", "explain", str(job.path), "--json")
    assert res.returncode == 0, res.stderr
    [e] = [x for x in json.loads(res.stdout) if x["topic"] == t1]
    assert e["zk_path"] == f"{job.zk_root}/spout1/{t1}/partition_0"
    assert e["decision"] == "ignore_zk_offsets" and e["start_offset"] == 8
    assert "ignoreZkOffsets" in e["reason"]
    table_res = cli("offsets", "explain", str(job.path))
    assert table_res.returncode == 0
    row = [r for r in parse_table(table_res.stdout) if r["TOPIC"] == t1][0]
    assert row["DECISION"] == "ignore_zk_offsets" and row["START-OFFSET"] == "8"


def test_unreachable_zookeeper_exits_1(tmp_path):
    from storm_kafka_compat.workshop.servers.tansu import free_port
    addr = f"127.0.0.1:{free_port()}"
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump({
        "spout": {"topic": "t", "zkRoot": "/o", "id": "s", "zkServers": [addr]},
        "hosts": {"zk": addr},
        "topology": {"name": "n", "storm.zookeeper.connection.timeout": 500,
                     "storm.zookeeper.retry.times": 0}}))
    res = cli("offsets", "explain", str(path))
    assert res.returncode == 1, res.stderr
    # kazoo's own connection warnings may precede it; the last line is ours
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: ") and addr in last and "hosts.zk" in last


# --- reset ---------------------------------------------------------------------------------


def test_reset_dry_run_changes_nothing_byte_for_byte(kafka_topic, make_job, tmp_path):
    topic = kafka_topic(partitions=2, messages=_messages({0: 10, 1: 10}))
    job = make_job(topic, 2)
    put(job.zk, job.zk_path(0), doc(7, 0, topic))
    put(job.zk, job.zk_path(1), b'{"broken"')
    before = snapshot(job.zk, job.zk_root)
    export = tmp_path / "plan.csv"
    res = cli("offsets", "reset", str(job.path), "--to-earliest", "--json",
              "--export", str(export))
    assert res.returncode == 0, res.stderr
    assert snapshot(job.zk, job.zk_root) == before
    plan = json.loads(res.stdout)
    assert plan["executed"] is False and plan["written"] == 0
    p0, p1 = plan["partitions"]
    assert (p0["current_offset"], p0["new_offset"], p0["difference"]) == (7, 0, -7)
    assert p1["current_offset"] is None and p1["new_offset"] == 0
    assert "dry run" in res.stderr
    assert export.read_text() == f"{topic},0,0\n{topic},1,0\n"


def test_reset_execute_then_run_resumes_at_target(kafka_topic, make_job, tmp_path):
    topic = kafka_topic(partitions=2, messages=_messages({0: 12, 1: 12}))
    job = make_job(topic, 2, topology_id="clicks-9-1700000000")
    put(job.zk, job.zk_path(0), doc(2, 0, topic, tid=UUID_ID, name="old-clicks"))
    res = cli("offsets", "reset", str(job.path), "--to-offset", "6", "--execute",
              "--watch", "0")
    assert res.returncode == 0, res.stderr
    rows = parse_table(res.stdout)
    assert [(r["PARTITION"], r["CURRENT-OFFSET"], r["NEW-OFFSET"], r["DIFFERENCE"])
            for r in rows] == [("0", "2", "6", "4"), ("1", "-", "6", "-")]
    # the stored topology id and name are kept; the new document gets the configured id
    assert get(job.zk, job.zk_path(0)) == doc(6, 0, topic, tid=UUID_ID, name="old-clicks")
    assert get(job.zk, job.zk_path(1)) == doc(6, 1, topic, tid="clicks-9-1700000000",
                                              host=job.broker[0], port=job.broker[1])
    # a real start (Spark, the installed console script) resumes at the target
    run = cli("run", str(job.path), "--max-batches", "1", "--json", timeout=300)
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    resumed = {p["partition"]: (p["decision"], p["resumed_from"]) for p in summary["partitions"]}
    assert resumed == {0: ("resume", 6), 1: ("resume", 6)}


def test_reset_clamps_refuses_and_shift(kafka_topic, make_job):
    topic = kafka_topic(partitions=2, messages=_messages({0: 5, 1: 5}))
    job = make_job(topic, 2)
    put(job.zk, job.zk_path(0), doc(3, 0, topic))
    res = cli("offsets", "reset", str(job.path), "--to-offset", "100", "--json")
    assert res.returncode == 0, res.stderr
    p0, p1 = json.loads(res.stdout)["partitions"]
    assert p0["new_offset"] == 5 and "clamped to 5" in p0["notes"][0]
    # shift: partition 1 has no stored offset -> refused; --execute writes nothing
    before = snapshot(job.zk, job.zk_root)
    res = cli("offsets", "reset", str(job.path), "--shift-by", "-2", "--execute")
    assert res.returncode == 1
    assert "Error: reset refused" in res.stderr and f"{topic}/1" in res.stderr
    assert snapshot(job.zk, job.zk_root) == before
    res = cli("offsets", "reset", str(job.path), "--shift-by", "-2", "--partitions", "0",
              "--execute", "--watch", "0", "--json")
    assert res.returncode == 0, res.stderr
    assert [p["new_offset"] for p in json.loads(res.stdout)["partitions"]] == [1]
    assert get(job.zk, job.zk_path(0)) == doc(1, 0, topic)
    res = cli("offsets", "reset", str(job.path), "--to-latest", "--partitions", "7")
    assert res.returncode == 2 and "--partitions names 7" in res.stderr


# --- migrate -------------------------------------------------------------------------------


def _group_offsets(tansu, group: str, topic: str, n: int) -> Dict[int, Optional[int]]:
    with KafkaGroupOffsets(tansu.bootstrap, group) as g:
        got = g.read_many([(topic, p) for p in range(n)])
    return {p: (v[0] if v else None) for (_, p), v in got.items()}


def test_migrate_to_kafka_dry_run_execute_and_back(kafka_topic, make_job, tansu, unique):
    topic = kafka_topic(partitions=4, messages=_messages({0: 10, 1: 10, 2: 10, 3: 10}))
    job = make_job(topic, 4)
    put(job.zk, job.zk_path(0), doc(7, 0, topic))
    put(job.zk, job.zk_path(1), doc(10, 1, topic, tid=UUID_ID))
    put(job.zk, job.zk_path(2), doc(25, 2, topic))          # beyond the log end: skipped
    group = unique("group")
    before = snapshot(job.zk, job.zk_root)

    res = cli("offsets", "migrate", str(job.path), "--to-kafka-group", group, "--json")
    assert res.returncode == 0, res.stderr
    plan = json.loads(res.stdout)
    assert plan["executed"] is False
    acts = {p["partition"]: (p["action"], p["source_offset"]) for p in plan["partitions"]}
    assert acts == {0: ("move", 7), 1: ("move", 10), 2: ("skip", 25), 3: ("skip", None)}
    reasons = {p["partition"]: p["reason"] for p in plan["partitions"]}
    assert "beyond the log end 10" in reasons[2] and reasons[3] == "no document"
    meta = json.loads(plan["partitions"][1]["metadata"])
    assert meta == {"topologyId": UUID_ID, "taskId": 0, "threadName": "storm-kafka-compat-migrate"}
    assert _group_offsets(tansu, group, topic, 4) == {0: None, 1: None, 2: None, 3: None}

    res = cli("offsets", "migrate", str(job.path), "--to-kafka-group", group, "--execute")
    assert res.returncode == 0, res.stderr
    rows = {r["PARTITION"]: r for r in parse_table(res.stdout)}
    assert rows["0"]["ACTION"] == "move" and rows["2"]["ACTION"] == "skip"
    assert "moved 2 partition(s); 2 skipped" in res.stderr
    assert _group_offsets(tansu, group, topic, 4) == {0: 7, 1: 10, 2: None, 3: None}

    # and back: the documents hold these offsets already, nothing changes
    res = cli("offsets", "migrate", str(job.path), "--from-kafka-group", group, "--execute",
              "--watch", "0", "--json")
    assert res.returncode == 0, res.stderr
    acts = {p["partition"]: p["action"] for p in json.loads(res.stdout)["partitions"]}
    assert acts == {0: "unchanged", 1: "unchanged", 2: "skip", 3: "skip"}
    assert snapshot(job.zk, job.zk_root) == before


def test_migrate_from_kafka_round_trip_through_storm_and_kafka08(kafka_topic, make_job, tansu,
                                                                 unique):
    topic = kafka_topic(partitions=3, messages=_messages({0: 9, 1: 9, 2: 9}))
    job = make_job(topic, 3)
    source = unique("group")
    with KafkaGroupOffsets(tansu.bootstrap, source) as g:
        g.write_many({(topic, 0): (4, '{"topologyId":"clicks-3-1700000000","taskId":1,'
                                  '"threadName":"t"}'), (topic, 1): (9, "")})
    # Kafka group -> storm documents
    res = cli("offsets", "migrate", str(job.path), "--from-kafka-group", source, "--execute",
              "--watch", "0")
    assert res.returncode == 0, res.stderr
    assert parse_document_offset(get(job.zk, job.zk_path(0))) == 4
    assert parse_document_offset(get(job.zk, job.zk_path(1))) == 9
    assert get(job.zk, job.zk_path(2)) is None
    # storm documents -> another group: the same offsets
    copy = unique("group")
    res = cli("offsets", "migrate", str(job.path), "--to-kafka-group", copy, "--execute")
    assert res.returncode == 0, res.stderr
    assert _group_offsets(tansu, copy, topic, 3) == _group_offsets(tansu, source, topic, 3) == {
        0: 4, 1: 9, 2: None}
    # Kafka group -> Kafka 0.8 layout (in Kafka's ZooKeeper, hosts.zk) with the owners node
    zk08 = unique("zk08")
    res = cli("offsets", "migrate", str(job.path), "--from-kafka-group", source,
              "--layout", "kafka08", "--zk-group", zk08, "--owners", "--execute")
    assert res.returncode == 0, res.stderr
    base = f"{job.chroot}/consumers/{zk08}"
    assert get(job.zk, f"{base}/offsets/{topic}/0") == b"4"
    assert get(job.zk, f"{base}/offsets/{topic}/1") == b"9"
    assert get(job.zk, f"{base}/offsets/{topic}/2") is None
    assert get(job.zk, f"{base}/owners/{topic}") is not None
    # Kafka 0.8 layout -> a third group: the same offsets
    third = unique("group")
    res = cli("offsets", "migrate", str(job.path), "--to-kafka-group", third,
              "--layout", "kafka08", "--zk-group", zk08, "--execute", "--json")
    assert res.returncode == 0, res.stderr
    assert _group_offsets(tansu, third, topic, 3) == {0: 4, 1: 9, 2: None}


def parse_document_offset(data: Optional[bytes]) -> Optional[int]:
    from storm_kafka_compat.offsets.document import parse_document
    return None if data is None else parse_document(data).offset


def test_migrate_refuses_a_group_with_active_members(kafka_topic, make_job, tansu, unique):
    from kafka import KafkaConsumer
    topic = kafka_topic(partitions=1, messages=_messages({0: 5}))
    job = make_job(topic, 1)
    put(job.zk, job.zk_path(0), doc(3, 0, topic))
    group = unique("group")
    consumer = KafkaConsumer(topic, bootstrap_servers=tansu.bootstrap, group_id=group,
                             session_timeout_ms=2000, heartbeat_interval_ms=500,
                             enable_auto_commit=False)
    try:
        deadline = time.monotonic() + 15
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(timeout_ms=500)
        assert consumer.assignment()
        res = cli("offsets", "migrate", str(job.path), "--to-kafka-group", group, "--execute")
        assert res.returncode == 1
        last = res.stderr.strip().splitlines()[-1]
        assert last.startswith("Error: ") and group in last and "stop its consumers" in last
    finally:
        consumer.close()
    assert _group_offsets(tansu, group, topic, 1) == {0: None}
