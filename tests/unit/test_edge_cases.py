"""Reference section 11 cases not covered elsewhere, through the driver loop without Spark."""

from storm_kafka_compat.config import Broker, JobConfig, SpoutConfig, StaticHosts, TopologyConfig
from storm_kafka_compat.errors import OffsetOutOfRangeError
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
    p = pipeline(job(partitions=2, use_start_offset_time_if_offset_out_of_range=False), kafka, store)
    p.spout.maybe_refresh(0)
    stuck = p.spout.managers()[("orders", 0)]
    summary = p.run(RunOptions(max_batches=4))
    assert summary.fetch_failures >= 4                      # retried every batch, never skipped
    assert stuck.emitted_to == 1                            # Storm: stuck at the same offset
    assert parse_document(store.docs["/kafka/spout1/partition_1"]).offset == 5   # not starved


def test_another_writer_of_our_documents_is_reported(caplog):
    kafka = ScriptedKafka()
    kafka.create_topic("orders", 1)
    kafka.append("orders", 0, b"a", b"b")
    store = MemoryStateStore()
    p = pipeline(job(), kafka, store)
    p.spout.maybe_refresh(0)
    pm = p.spout.managers()[("orders", 0)]
    plan = pm.plan_fetch(max_messages=1)
    pm.fetched(plan, [(0, 1)]); pm.ack(0)
    p.spout.commit()
    # a second job with the same zkRoot/id writes over our document
    store.docs["/kafka/spout1/partition_0"] = encode_document(
        topology_id="other-job-9-9", topology_name="t", offset=1, partition=0,
        broker_host="k1", broker_port=9092, topic="orders")
    plan = pm.plan_fetch(max_messages=1)
    pm.fetched(plan, [(1, 2)]); pm.ack(1)
    p.spout.commit()
    assert p.spout.ownership_conflicts == 1
    assert "other-job-9-9" in caplog.text and "/kafka/spout1/partition_0" in caplog.text


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
