"""Reference section 11 cases not covered elsewhere, through the driver loop without Spark."""

from storm_kafka_compat.config import (BootstrapHosts, Broker, JobConfig, SpoutConfig, StaticHosts,
                                       TopologyConfig)
import json

import pytest

from storm_kafka_compat.engine import driver as driver_module
from storm_kafka_compat.errors import NoLeaderError, OwnershipConflictError
from storm_kafka_compat.testing.scripted import ScriptedKafka
from storm_kafka_compat.engine.driver import Pipeline, RunOptions
from storm_kafka_compat.testing.inprocess import InProcessRunner
from storm_kafka_compat.offsets.document import encode_document, parse_document
from storm_kafka_compat.testing.memory_store import MemoryStateStore


def job(topic="orders", partitions=1, **spout_kw):
    hosts = StaticHosts({p: Broker("k1", 9092) for p in range(partitions)})
    spout = SpoutConfig(hosts=hosts, topic=topic, zk_root="/kafka", id="spout1", scheme="string",
                        **spout_kw)
    return JobConfig(spout=spout, topology=TopologyConfig(name="t", id="t-1-1"),
                     bolt="tests.bolts:record")


def pipeline(j, kafka, store):
    return Pipeline(j, runner=InProcessRunner(kafka), store=store,
                    kafka_factory=lambda boot: kafka, sleep=lambda s: None)


def doc(offset, topic="orders", partition=0):
    return encode_document(topology_id="storm-1-1", topology_name="t", offset=offset,
                           partition=partition, broker_host="k1", broker_port=9092, topic=topic)


def test_case_1_idle_partition_never_gets_a_node():
    kafka = ScriptedKafka()
    kafka.create_topic("orders", 2)
    kafka.append("orders", 0, b"a", b"b")
    store = MemoryStateStore()
    pipeline(job(partitions=2), kafka, store).run(RunOptions(until_caught_up=True))
    assert "/kafka/spout1/partition_0" in store.docs
    assert "/kafka/spout1/partition_1" not in store.docs     # offset never changed from 0


def test_case_25_renamed_topic_inherits_offsets_of_the_same_partition_numbers():
    kafka = ScriptedKafka()
    kafka.create_topic("orders-v2", 1)
    kafka.append("orders-v2", 0, *[b"x"] * 10)
    store = MemoryStateStore({"/kafka/spout1/partition_0": doc(7, topic="orders")})
    summary = pipeline(job(topic="orders-v2"), kafka, store).run(RunOptions(until_caught_up=True))
    assert summary.partitions[0].resumed_from == 7             # the path holds no topic
    stored = parse_document(store.docs["/kafka/spout1/partition_0"])
    assert stored.offset == 10 and stored.parsed["topic"] == "orders-v2"


def test_case_26_broker_field_follows_the_leader_on_the_next_write():
    kafka = ScriptedKafka()
    kafka.create_topic("orders", 1)
    kafka.append("orders", 0, b"a")
    store = MemoryStateStore()
    p = pipeline(job(), kafka, store)
    p.spout.maybe_refresh(0)
    pm = p.spout.managers()[("orders", 0)]
    pm.set_leader(Broker("k2", 9093))
    kafka.append("orders", 0, b"b")
    p.run(RunOptions(until_caught_up=True))
    assert parse_document(store.docs["/kafka/spout1/partition_0"]).parsed["broker"] == {
        "host": "k2", "port": 9093}


def test_case_32_out_of_range_without_fallback_is_a_fetch_failure_and_others_go_on():
    kafka = ScriptedKafka()
    kafka.create_topic("orders", 2)
    kafka.append("orders", 0, *[b"x"] * 5)
    kafka.append("orders", 1, *[b"y"] * 5)
    kafka.set_log_start("orders", 0, 3)
    store = MemoryStateStore({"/kafka/spout1/partition_0": doc(1)})
    p = pipeline(job(partitions=2, use_start_offset_time_if_offset_out_of_range=False),
                 kafka, store)
    p.spout.maybe_refresh(0)
    stuck = p.spout.managers()[("orders", 0)]
    summary = p.run(RunOptions(max_batches=4))
    assert summary.fetch_failures >= 4                      # retried every batch, never skipped
    assert stuck.emitted_to == 1                            # Storm: stuck at the same offset
    assert parse_document(store.docs["/kafka/spout1/partition_1"]).offset == 5   # not starved


def _one_acked(p, offset):
    pm = p.spout.managers()[("orders", 0)]
    plan = pm.plan_fetch(max_messages=1)
    pm.fetched(plan, [(offset, offset + 1)])
    pm.ack(offset)


@pytest.mark.parametrize("writer, said", [
    ("other-job-9-9", "now names topology 'other-job-9-9' (offset 1), but this job ('t-1-1') "
                      "wrote it last (offset 1): another job with the same zkRoot/id"),
    # the same topology id: an operator's `offsets reset --force` (or a second job
    # deployed with the same topology.id)
    ("t-1-1", "was changed by another writer: offset 0 is stored where this job ('t-1-1') "
              "wrote 1"),
])
def test_another_writer_of_our_documents_stops_the_job_without_overwriting(writer, said):
    kafka = ScriptedKafka()
    kafka.create_topic("orders", 2)
    kafka.append("orders", 0, b"a", b"b")
    kafka.append("orders", 1, b"c", b"d")
    store = MemoryStateStore()
    j = job(partitions=2)
    p = pipeline(j, kafka, store)
    p.spout.maybe_refresh(0)
    for part in (0, 1):
        pm = p.spout.managers()[("orders", part)]
        plan = pm.plan_fetch(max_messages=1)
        pm.fetched(plan, [(0, 1)])
        pm.ack(0)
    p.spout.commit()
    theirs = encode_document(topology_id=writer, topology_name="t",
                             offset=0 if writer == "t-1-1" else 1, partition=0,
                             broker_host="k1", broker_port=9092, topic="orders")
    store.docs["/kafka/spout1/partition_0"] = theirs
    for part in (0, 1):
        pm = p.spout.managers()[("orders", part)]
        plan = pm.plan_fetch(max_messages=1)
        pm.fetched(plan, [(1, 2)])
        pm.ack(1)
    with pytest.raises(OwnershipConflictError) as err:
        p.spout.commit(patient=False)
    assert said in str(err.value) and "stops without" in str(err.value)
    assert p.spout.ownership_conflicts == 1 and p.spout.counts.commit_failures == 1
    # the other writer's document stands; the partition nobody touched was committed
    assert store.docs["/kafka/spout1/partition_0"] == theirs
    assert parse_document(store.docs["/kafka/spout1/partition_1"]).offset == 2
    # and the final commit on the way out leaves it alone too
    assert p.spout.final_commit(1, lambda s: None) is True
    assert store.docs["/kafka/spout1/partition_0"] == theirs


def test_a_second_job_on_the_same_documents_refuses_to_start_naming_the_first():
    import os
    import socket
    kafka = ScriptedKafka()
    kafka.create_topic("orders", 1)
    storm = doc(0)                                        # the Storm topology's document
    store = MemoryStateStore({"/kafka/spout1/partition_0": storm})
    first = pipeline(job(), kafka, store)
    first.spout.maybe_refresh(0)
    (path,) = [p for p in store.ephemeral]
    assert path == "/kafka/spout1/owner~task-0"
    record = json.loads(store.docs[path])
    assert (record["topology_id"], record["pid"], record["host"]) == \
        ("t-1-1", os.getpid(), socket.gethostname())
    # the same topology id, the same host: a live driver (this process) owns it
    second = pipeline(job(), kafka, store)
    with pytest.raises(OwnershipConflictError) as err:
        second.spout.maybe_refresh(0)
    text = str(err.value)
    assert text.startswith("another job owns the documents under /kafka/spout1: topology "
                           f"'t-1-1' (t), driver pid {os.getpid()} on {socket.gethostname()}")
    assert "--take-over" in text
    # told to take over, the second claims the record; the first stops at its next commit
    third = Pipeline(job(), runner=InProcessRunner(kafka), store=store, take_over=True,
                     kafka_factory=lambda boot: kafka, sleep=lambda s: None)
    third.spout.maybe_refresh(0)
    assert json.loads(store.docs[path])["token"] != record["token"]
    kafka.append("orders", 0, b"a")
    _one_acked(first, 0)
    with pytest.raises(OwnershipConflictError) as err:
        first.spout.commit()
    assert "holds the ownership record of another job" in str(err.value)
    assert store.docs["/kafka/spout1/partition_0"] == storm    # the first wrote nothing
    assert first.spout.final_commit(1, lambda s: None)
    assert store.docs["/kafka/spout1/partition_0"] == storm


def test_on_new_documents_the_record_is_made_before_the_first_write():
    """No zkRoot/id yet: a start leaves no node behind (a start that fails writes
    nothing); the record comes with the first commit, and of two jobs started on
    the same new documents the second to commit stops without writing."""
    kafka = ScriptedKafka()
    kafka.create_topic("orders", 1)
    kafka.append("orders", 0, b"a", b"b")
    store = MemoryStateStore()
    a, b = pipeline(job(), kafka, store), pipeline(job(), kafka, store)
    a.spout.maybe_refresh(0)
    b.spout.maybe_refresh(0)
    assert store.docs == {}
    _one_acked(a, 0)
    assert a.spout.commit().written == 1
    assert "/kafka/spout1/owner~task-0" in store.ephemeral
    _one_acked(b, 0)
    _one_acked(b, 1)
    with pytest.raises(OwnershipConflictError) as err:
        b.spout.commit()
    assert "another job owns the documents under /kafka/spout1" in str(err.value)
    assert parse_document(store.docs["/kafka/spout1/partition_0"]).offset == 1
    assert b.spout.final_commit(1, lambda s: None)       # and not on the way out either
    assert parse_document(store.docs["/kafka/spout1/partition_0"]).offset == 1


def test_a_record_of_a_crashed_driver_on_this_host_is_removed_and_an_expired_one_remade():
    from storm_kafka_compat.offsets.ownership import OwnerRecord
    kafka = ScriptedKafka()
    kafka.create_topic("orders", 1)
    kafka.append("orders", 0, b"a")
    import socket
    dead = OwnerRecord("x", "t-1-1", "t", socket.gethostname(), 2**22 + 7, 0)
    store = MemoryStateStore({"/kafka/spout1/owner~task-0": dead.encode()})
    p = pipeline(job(), kafka, store)
    p.spout.maybe_refresh(0)               # pid 4194311 does not run here: removed
    path = "/kafka/spout1/owner~task-0"
    assert json.loads(store.docs[path])["pid"] != dead.pid
    store.expire()                         # the session expired: the record went with it
    _one_acked(p, 0)
    assert p.spout.commit().written == 1
    assert path in store.docs and (
        json.loads(store.docs[path])["token"] == p.spout.policy.record.token)


def test_a_record_of_another_host_is_waited_for_up_to_the_session_timeout(caplog):
    from storm_kafka_compat.offsets.ownership import OwnerRecord
    from storm_kafka_compat.spout.legacy import ZkDocuments
    from storm_kafka_compat.testing.clock import ManualClock
    kafka = ScriptedKafka()
    kafka.create_topic("orders", 1)
    path = "/kafka/spout1/owner~task-0"
    elsewhere = OwnerRecord("x", "t-1-1", "t", "other-host", 123, 0)
    store = MemoryStateStore({path: elsewhere.encode()})
    clock = ManualClock()

    def sleep(s):
        clock.sleep(s)
        if len(clock.sleeps) == 3:
            store.delete(path)                 # its session timed out: ZooKeeper removed it

    policy = ZkDocuments(job(), store, "t-1-1", sleep=sleep, clock=clock)
    policy.claim()
    assert clock.sleeps == [1.0, 1.0, 1.0] and policy.record is not None
    assert "waiting up to 22 s for it to expire" in caplog.text
    # a record that stays past the session timeout (20 s, plus 2): the job does not start
    late = ZkDocuments(job(), MemoryStateStore({path: elsewhere.encode()}), "t-1-1",
                       sleep=clock.sleep, clock=clock)
    with pytest.raises(OwnershipConflictError) as err:
        late.claim()
    assert "driver pid 123 on other-host" in str(err.value)


def test_generated_topology_ids_differ_between_processes():
    from storm_kafka_compat.runtime import topology_instance_id
    j = JobConfig(spout=job().spout, topology=TopologyConfig(name="t"), bolt="tests.bolts:record")
    import os
    assert topology_instance_id(j, now_s=100) == f"t-{os.getpid()}-100"


def test_case_29_applications_split_partitions_by_task_index():
    from tests import bolts
    kafka = ScriptedKafka()
    kafka.create_topic("orders", 4)
    for p in range(4):
        kafka.append("orders", p, b"x", b"y")
    store = MemoryStateStore()
    seen = {}
    for index in (0, 1):
        bolts.SEEN.clear()
        Pipeline(job(partitions=4), runner=InProcessRunner(kafka), store=store,
                 kafka_factory=lambda b: kafka,
                 sleep=lambda s: None,
                 task_index=index, total_tasks=2
                 ).run(RunOptions(until_caught_up=True))
        seen[index] = sorted({r["partition"] for r in bolts.SEEN})
    assert seen == {0: [0, 2], 1: [1, 3]}
    assert sorted(store.docs) == [f"/kafka/spout1/partition_{p}" for p in range(4)]


def test_run_rejects_a_task_index_outside_total_tasks(tmp_path, capsys):
    from storm_kafka_compat.cli.main import main
    cfg = tmp_path / "c.yaml"
    cfg.write_text("spout: {topic: t, zkRoot: /r, id: s}\nhosts: {static: {0: 'h:9092'}}\n"
                   "topology: {topology.name: n}\nbolt: tests.bolts:record\n")
    assert main(["run", str(cfg), "--task-index", "2", "--total-tasks", "2"]) == 2
    assert "--task-index 2" in capsys.readouterr().err


def test_an_out_of_range_partition_is_said_once_and_counted_every_batch(caplog):
    """useStartOffsetTimeIfOffsetOutOfRange false: the fault round saw the same warning
    470 times in 90 s; one line, and the outOfRange metric counts each batch."""
    kafka = ScriptedKafka()
    kafka.create_topic("orders", 1)
    kafka.append("orders", 0, *[b"x"] * 5)
    kafka.set_log_start("orders", 0, 3)
    store = MemoryStateStore({"/kafka/spout1/partition_0": doc(1)})
    p = pipeline(job(use_start_offset_time_if_offset_out_of_range=False), kafka, store)
    p.run(RunOptions(max_batches=6))
    said = [r for r in caplog.records if "useStartOffsetTimeIfOffsetOutOfRange is false" in
            r.getMessage()]
    assert len(said) == 1 and said[0].levelname == "WARNING"
    assert p.spout.counts.out_of_range == p.spout.counts.fetch_failures >= 6


def _bootstrap_job():
    spout = SpoutConfig(hosts=BootstrapHosts(("k1:9092",)), topic="orders", zk_root="/kafka",
                        id="spout1", scheme="string")
    return JobConfig(spout=spout, topology=TopologyConfig(name="t", id="t-1-1"),
                     bolt="tests.bolts:record")


def test_a_topic_whose_leaders_are_being_elected_at_start_is_asked_again():
    """The first refresh finds the topic with no partition led (a broker back from a lost
    ZooKeeper session): the run asks again a second later instead of failing."""
    kafka = ScriptedKafka()
    kafka.create_topic("orders", 1)
    kafka.append("orders", 0, b"a", b"b")
    kafka.set_leader("orders", 0, None)
    slept = []

    def sleep(s):
        slept.append(s)
        if len(slept) == 2:
            kafka.set_leader("orders", 0, Broker("k1", 9092))

    p = Pipeline(_bootstrap_job(), runner=InProcessRunner(kafka), store=MemoryStateStore(),
                 kafka_factory=lambda boot: kafka, sleep=sleep)
    summary = p.run(RunOptions(until_caught_up=True))
    assert slept[:2] == [1.0, 1.0] and summary.messages == 2


def test_a_leaderless_topic_fails_the_start_after_the_attempts(monkeypatch):
    monkeypatch.setattr(driver_module, "FIRST_REFRESH_ATTEMPTS", 3)
    kafka = ScriptedKafka()
    kafka.create_topic("orders", 1)
    kafka.set_leader("orders", 0, None)
    slept = []
    p = Pipeline(_bootstrap_job(), runner=InProcessRunner(kafka), store=MemoryStateStore(),
                 kafka_factory=lambda boot: kafka, sleep=slept.append)
    with pytest.raises(NoLeaderError, match="'orders' exists on k1:9092"):
        p.run(RunOptions(until_caught_up=True))
    assert slept == [1.0, 1.0]
