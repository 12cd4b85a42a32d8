"""The benchmark's pure figures and its ratio/target arithmetic (no servers)."""

import pytest

from storm_kafka_compat.workshop.bench.memory import pending_memory
from storm_kafka_compat.workshop.bench.planning import planning_time
from storm_kafka_compat.workshop.bench.analysis import check_targets, compute_ratios
from storm_kafka_compat.cli.bench_cmd import figure_rows


def test_in_order_acks_keep_one_range_far_below_the_map():
    m = _in_clean_process("in_order", window=5_000)
    assert m["failures"] == 0 and m["in_flight"] == 5_000
    assert m["ranges_bytes_per_offset"] < 1
    assert m["map_bytes_per_offset"] > 50          # a dict entry and two int objects
    assert m["map_over_ranges"] > 100


def _in_clean_process(scenario, **kw):
    """tracemalloc counts every thread's allocations: threads left running by other
    tests in this process (Kafka clients, kazoo) would inflate the small figures, so
    measure in a fresh interpreter, as the bench command does."""
    import json
    import subprocess
    import sys
    code = ("import json; from storm_kafka_compat.workshop.bench.memory import pending_memory; "
            f"print(json.dumps(pending_memory({scenario!r}, **{kw!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    return json.loads(out.stdout)


def test_random_acks_with_failures_keep_only_the_failures():
    m = _in_clean_process("random", window=10_000, failure_rate=0.01)
    assert m["failures"] == 100
    assert m["ranges_retained_bytes"] < m["ranges_peak_bytes"]
    assert m["map_over_ranges"] > 10


def test_batches_count_one_batch_plus_waiting_failures_in_flight():
    m = _in_clean_process("batches", window=10_000, failure_rate=0.01, batch=1_000)
    assert m["failures"] == 100
    assert 1_000 < m["in_flight"] < 1_100
    assert m["ranges_peak_bytes"] < m["map_peak_bytes"]


def test_unknown_scenario():
    with pytest.raises(ValueError, match="in_order"):
        pending_memory("sideways")


def test_planning_plans_every_partition():
    r = planning_time(50, batches=2)
    assert r["partitions"] == 50 and r["batches"] == 2
    assert r["plan_ms"] > 0 and r["apply_ms"] > 0
    assert r["total_ms"] == pytest.approx(r["plan_ms"] + r["apply_ms"])


def test_the_driver_memory_per_partition_does_not_grow_with_the_partitions():
    def memory(n):      # tracemalloc figures: in a fresh interpreter (see _in_clean_process)
        import json
        import subprocess
        import sys
        code = (
            "import json\n"
            "from storm_kafka_compat.workshop.bench.planning import driver_memory\n"
            "from storm_kafka_compat.config import (Broker, JobConfig, SpoutConfig, "
            "StaticHosts, TopologyConfig)\n"
            f"hosts = StaticHosts({{p: Broker('127.0.0.1', 9092) for p in range({n})}})\n"
            "job = JobConfig(spout=SpoutConfig(hosts=hosts, topic='t', zk_root='/b', id='m'),"
            " topology=TopologyConfig(name='b', id='b-1-1'),"
            " bolt='storm_kafka_compat.workshop.bench.pipeline:noop_bolt')\n"
            f"print(json.dumps(driver_memory(job, {n}, 100)))\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, timeout=300)
        return json.loads(out.stdout.strip().splitlines()[-1])

    small, large = memory(100), memory(2_000)
    assert 0 < small["state_bytes_per_partition"] < 5_000
    assert large["state_bytes_per_partition"] < 1.5 * small["state_bytes_per_partition"]
    # a batch's plans and results grow with the partitions, about linearly
    for key in ("plan_bytes", "result_bytes", "batch_peak_bytes"):
        assert 10 < large[key] / small[key] < 30, key


def test_the_scaling_cases_keep_the_messages_or_the_bytes_of_the_main_figure():
    from storm_kafka_compat.workshop.bench.scaling import Case, cases
    got = cases(4_000_000, 100, 4, more_partitions=[4, 64, 512], sizes=[100, 10_000, 1_000_000],
                multi_stage=True)
    assert got == [Case("partitions", 64, 4_000_000, 100), Case("partitions", 512, 4_000_000, 100),
                   Case("size", 4, 40_000, 10_000), Case("size", 4, 400, 1_000_000),
                   Case("multi_stage", 4, 4_000_000, 100)]
    # at least one message per partition, whatever the size
    assert cases(100, 10, 4, more_partitions=[], sizes=[1_000_000], multi_stage=False) == [
        Case("size", 4, 4, 1_000_000)]
    assert [c.name for c in got[:3]] == ["64 partitions", "512 partitions", "10,000 B values"]


def test_a_scaling_row_says_how_the_cost_per_message_or_per_byte_grew():
    from storm_kafka_compat.workshop.bench.scaling import Case, row_figures
    main = Case("main", 4, 4_000_000, 100)
    base = (main, {"plain": {"confluent": {"msgs_per_s": 800_000.0}},
                   "pipeline": {"confluent": {"msgs_per_s": 600_000.0}}})
    more = row_figures(Case("partitions", 512, 4_000_000, 100),
                       {"confluent": {"msgs_per_s": 400_000.0}},
                       {"confluent": {"msgs_per_s": 200_000.0}}, base)
    f = more["backends"]["confluent"]
    assert f["pipeline_over_plain"] == 0.5
    assert f["pipeline_growth"] == pytest.approx(3.0)       # 3x the time per message
    assert f["plain_growth"] == pytest.approx(2.0)
    assert f["pipeline_us_per_message"] == pytest.approx(5.0)
    assert "pipeline_over_spark_arrow" not in f
    # beside Spark's source read with mapInArrow on the same topic
    beside = row_figures(Case("partitions", 512, 4_000_000, 100),
                         {"confluent": {"msgs_per_s": 400_000.0}},
                         {"confluent": {"msgs_per_s": 200_000.0}}, base,
                         {"msgs_per_s": 160_000.0})
    assert beside["spark_arrow"]["msgs_per_s"] == 160_000.0
    assert beside["backends"]["confluent"]["pipeline_over_spark_arrow"] == pytest.approx(1.25)
    # values 100x larger at 1/50 of the message rate: each byte costs half as much
    big = row_figures(Case("size", 4, 40_000, 10_000), {"confluent": {"msgs_per_s": 16_000.0}},
                      {"confluent": {"msgs_per_s": 12_000.0}}, base)["backends"]["confluent"]
    assert big["pipeline_growth"] == pytest.approx(0.5)
    assert big["pipeline_mb_per_s"] == pytest.approx(120.0)
    # the main figure's own row has no growth; a backend missing from the plain job no row
    own = row_figures(main, base[1]["plain"], {**base[1]["pipeline"], "kafka-python": {
        "msgs_per_s": 1.0}})
    assert set(own["backends"]) == {"confluent"}
    assert "pipeline_growth" not in own["backends"]["confluent"]


def test_the_plain_job_deals_its_partitions_like_the_pipelines_runner():
    from storm_kafka_compat.workshop.bench.plain import plain_work
    work = plain_work("confluent", "t", {p: 10 * p for p in range(5)}, {"b": 1}, 2)
    assert [w[2] for w in work] == [((0, 0), (2, 20), (4, 40)), ((1, 10), (3, 30))]
    assert all(w[:2] == ("confluent", "t") and w[3] == (("b", 1),) for w in work)
    assert len(plain_work("confluent", "t", {0: 5}, {}, 8)) == 1     # one task a partition at most


KP_TARGET = ("pipeline kafka-python / plain PySpark job kafka-python (the pipeline's consumer "
             "settings)")
CF_TARGET = ("pipeline confluent / plain PySpark job confluent (the pipeline's consumer "
             "settings)")


def test_spark_source_and_default_settings_rows_have_ratios_and_targets():
    r = _report()
    r["plain_defaults"] = {"confluent": {"msgs_per_s": 100_000.0, "messages": 10,
                                         "seconds": 1.0}}
    r["spark_source"] = {"arrow": {"msgs_per_s": 250_000.0, "messages": 10, "seconds": 1.0},
                         "batch": {"msgs_per_s": 400_000.0, "messages": 10, "seconds": 1.0},
                         "count": {"msgs_per_s": 800_000.0, "messages": 10, "seconds": 1.0},
                         "streaming": {"msgs_per_s": 160_000.0, "messages": 10, "seconds": 1.0}}
    r["ratios"] = compute_ratios(r)
    assert r["ratios"]["pipeline_over_plain_defaults"]["confluent"] == 2.0
    assert r["ratios"]["plain_over_plain_defaults"]["confluent"] == 2.5
    assert r["ratios"]["pipeline_over_spark_arrow"]["confluent"] == 0.8
    assert r["ratios"]["pipeline_over_spark_batch"]["confluent"] == 0.5
    assert r["ratios"]["pipeline_over_spark_count"]["confluent"] == 0.25
    assert r["ratios"]["pipeline_over_spark_streaming"]["confluent"] == 1.25
    met = {t["name"]: t["met"] for t in check_targets(r)}
    assert met["pipeline confluent / Spark's Kafka source (batch, mapInArrow), same "
               "per-message function"] is False
    assert met["pipeline confluent / Spark's Kafka source (batch, Row by Row), same "
               "per-message function"] is False
    assert met["pipeline confluent / Spark's Kafka source (Structured Streaming, "
               "mapInArrow), same per-message function"] is True
    rows = {row["FIGURE"]: row for row in figure_rows({**r, "targets": check_targets(r)})}
    assert rows["Spark's Kafka source (Structured Streaming, mapInArrow)"]["VALUE"] == "160,000"
    assert rows["Spark's Kafka source (batch, JVM-only count())"]["VALUE"] == "800,000"
    assert rows["Spark's Kafka source (batch, Row by Row)"]["VALUE"] == "400,000"
    assert rows["plain PySpark job confluent (library defaults)"]["VALUE"] == "100,000"


def test_the_projects_front_ends_are_set_beside_sparks_source_read_with_arrow():
    r = _report()
    r["spark_source"] = {"arrow": {"msgs_per_s": 250_000.0, "messages": 10, "seconds": 1.0}}
    r["frontends"] = {
        "storm_source": {"confluent": {"msgs_per_s": 500_000.0, "messages": 10,
                                       "seconds": 1.0}},
        "dataframe": {"confluent": {"msgs_per_s": 125_000.0, "messages": 10, "seconds": 1.0}}}
    r["ratios"] = compute_ratios(r)
    assert r["ratios"]["storm_source_over_spark_arrow"]["confluent"] == 2.0
    assert r["ratios"]["dataframe_over_spark_arrow"]["confluent"] == 0.5
    assert r["ratios"]["storm_source_over_spark_arrow"]["kafka-python"] is None
    rows = {row["FIGURE"]: row for row in figure_rows({**r, "targets": check_targets(r)})}
    assert rows['format("storm-kafka"), mapInArrow confluent']["VALUE"] == "500,000"
    assert rows["DataFrame mode, mapInArrow confluent"]["VALUE"] == "125,000"


def _report(pipe_kp=60_000.0, confluent=True):
    raw = {"kafka-python": {"msgs_per_s": 50_000.0, "messages": 10, "seconds": 1.0}}
    adapter = {"kafka-python": {"msgs_per_s": 40_000.0, "messages": 10, "seconds": 1.0}}
    pipeline = {"kafka-python": {"msgs_per_s": pipe_kp, "messages": 10, "seconds": 1.0,
                                 "batches": 2, "commits": 4, "commit_round_trips": 2}}
    plain = {"kafka-python": {"msgs_per_s": 70_000.0, "messages": 10, "seconds": 1.0}}
    latency = {"kafka-python": {"rate_msgs_per_s": 30_000.0, "seconds": 10.0,
                                "samples": 300_000, "p50_ms": 400.0, "p99_ms": 1_900.0}}
    if confluent:
        raw["confluent"] = {"msgs_per_s": 1_000_000.0, "messages": 10, "seconds": 1.0}
        plain["confluent"] = {"msgs_per_s": 250_000.0, "messages": 10, "seconds": 1.0}
        pipeline["confluent"] = {"msgs_per_s": 200_000.0, "messages": 10, "seconds": 1.0,
                                 "batches": 2, "commits": 4, "commit_round_trips": 2,
                                 "min": 150_000.0, "median": 200_000.0, "max": 210_000.0,
                                 "runs": [150_000.0, 200_000.0, 210_000.0]}
        latency["confluent"] = {"rate_msgs_per_s": 100_000.0, "seconds": 10.0,
                                "samples": 1_000_000, "p50_ms": 900.0, "p99_ms": 2_500.0}
    mem = {"in_order": {"ranges_bytes_per_offset": 0.01, "map_bytes_per_offset": 140.0,
                        "map_over_ranges": 14_000.0, "in_flight": 10, "failures": 0},
           "random": {"ranges_bytes_per_offset": 4.0, "map_bytes_per_offset": 140.0,
                      "map_over_ranges": 35.0, "in_flight": 10, "failures": 1}}
    return {"options": {"messages": 4_000_000, "size": 100, "partitions": 4},
            "fetch": {"raw": raw, "adapter": adapter}, "plain": plain, "pipeline": pipeline,
            "latency": latency, "memory": mem,
            "zookeeper": [{"partitions": 1, "commit_ms": 2.0, "round_trips_per_commit": 1,
                           "min_round_trips": 1, "document_bytes": 129},
                          {"partitions": 10_000, "commit_ms": 700.0, "round_trips_per_commit": 7,
                           "min_round_trips": 6, "document_bytes": 1_300_000}],
            "planning": [{"partitions": 10, "plan_ms": 0.05, "apply_ms": 0.1,
                          "state_bytes": 27_000, "state_bytes_per_partition": 2_700.0,
                          "batch_peak_bytes": 5_000, "plan_bytes": 477, "result_bytes": 1_224},
                         {"partitions": 10_000, "plan_ms": 150.0, "apply_ms": 200.0,
                          "state_bytes": 20_000_000, "state_bytes_per_partition": 2_000.0,
                          "batch_peak_bytes": 6_600_000, "plan_bytes": 360_000,
                          "result_bytes": 1_000_000}]}


def test_ratios_and_targets():
    r = _report()
    r["ratios"] = compute_ratios(r)
    assert r["ratios"]["pipeline_over_raw"] == {"kafka-python": 1.2, "confluent": 0.2}
    assert r["ratios"]["pipeline_over_plain"] == {"kafka-python": pytest.approx(60 / 70),
                                                  "confluent": 0.8}
    assert r["ratios"]["confluent_over_kafka_python"]["raw"] == 20.0
    assert r["ratios"]["adapter_over_raw"]["confluent"] is None      # not measured
    assert r["ratios"]["planning_per_partition_growth"] == pytest.approx(3.0)
    met = {t["name"]: t["met"] for t in check_targets(r)}
    assert met[KP_TARGET] is False                                       # 0.86 < 0.9
    assert met[CF_TARGET] is True                                        # 0.8 exactly
    assert met["pipeline confluent / raw confluent consumer"] is False
    assert met["p99 end-to-end latency kafka-python at 30,000 msg/s (ms)"] is True
    assert met["p99 end-to-end latency confluent at 100,000 msg/s (ms)"] is False
    assert met["pending bytes per in-flight offset, in-order acks"] is True
    assert met["per-offset map / ranges, random acks, 1% failures"] is True
    assert met["ZooKeeper round trips per commit above the request-size floor"] is False
    assert met["driver planning per batch at 10,000 partitions (ms)"] is False
    assert met["planning cost per partition, largest / smallest count"] is False


def test_throughput_targets_are_judged_only_at_the_size_they_are_set_at():
    r = _report()
    r["options"] = {"messages": 200_000, "size": 100, "partitions": 4}
    r["ratios"] = compute_ratios(r)
    targets = {t["name"]: t for t in check_targets(r)}
    ratio = targets[KP_TARGET]
    assert ratio["met"] is None and ratio["value"] == pytest.approx(60 / 70)
    assert "set at 4,000,000 x 100 B over 4 partitions" in ratio["note"]
    rows = {row["FIGURE"]: row for row in figure_rows({**r, "targets": list(targets.values())})}
    assert rows[f"target: {KP_TARGET}"]["NOTE"].startswith("set at 4,000,000")
    # the other targets do not depend on the topic's size
    assert targets["p99 end-to-end latency kafka-python at 30,000 msg/s (ms)"]["met"] is True


def test_scaling_rows_render_with_their_growth():
    from storm_kafka_compat.workshop.bench.scaling import Case, row_figures
    r = _report()
    r["ratios"] = compute_ratios(r)
    r["targets"] = check_targets(r)
    base = (Case("main", 4, 4_000_000, 100), {"plain": r["plain"], "pipeline": r["pipeline"]})
    r["scaling"] = [row_figures(Case("partitions", 512, 4_000_000, 100),
                                {"confluent": {"msgs_per_s": 125_000.0}},
                                {"confluent": {"msgs_per_s": 100_000.0}}, base,
                                {"msgs_per_s": 50_000.0})]
    rows = {row["FIGURE"]: row for row in figure_rows(r)}
    arrow = rows["scaling 512 partitions: pipeline confluent / Spark's Kafka source (mapInArrow)"]
    assert arrow["VALUE"] == "2.00" and "50,000 msg/s" in arrow["NOTE"]
    row = rows["scaling 512 partitions: pipeline confluent / plain job"]
    assert row["VALUE"] == "0.80"
    assert "cost per message 2.00x the main figure's (plain 2.00x)" in row["NOTE"]
    plan = rows["plan 10,000 partitions"]["NOTE"]
    assert "driver state 20.0 MB (2,000 B a partition)" in plan


def test_targets_not_measured_without_confluent_and_rows_render():
    r = _report(confluent=False)
    r["ratios"] = compute_ratios(r)
    r["targets"] = check_targets(r)
    met = {t["name"]: t["met"] for t in r["targets"]}
    assert met["pipeline confluent / raw confluent consumer"] is None
    assert met[CF_TARGET] is None
    rows = figure_rows(r)
    by_name = {row["FIGURE"]: row for row in rows}
    assert by_name["pipeline kafka-python"]["VALUE"] == "60,000"
    assert by_name["plain PySpark job kafka-python (the pipeline's consumer settings)"][
        "VALUE"] == "70,000"
    assert by_name["latency p99 kafka-python"]["VALUE"] == "1,900"
    assert by_name["target: pipeline confluent / raw confluent consumer"]["NOTE"] == \
        "not measured"
    assert by_name["ZK commit 10,000 partitions"]["NOTE"].startswith("7 round trips (floor 6)")


def test_summarize_keeps_the_spread_and_the_median_round():
    from storm_kafka_compat.workshop.bench.analysis import summarize
    runs = [{"msgs_per_s": v, "messages": 10, "seconds": 10 / v} for v in (30.0, 10.0, 20.0)]
    s = summarize(runs)
    assert (s["min"], s["median"], s["max"], s["runs"]) == (10.0, 20.0, 30.0, [30.0, 10.0, 20.0])
    assert s["msgs_per_s"] == 20.0 and s["seconds"] == pytest.approx(0.5)
    assert summarize(runs[:2])["median"] == 20.0                 # even count: the mean of two


def test_percentile_nearest_rank():
    from storm_kafka_compat.workshop.bench.latency import percentile
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0 and percentile(values, 99) == 99.0
    assert percentile([5.0], 99) == 5.0 and percentile([], 50) is None


def test_batch_breakdown_lays_tasks_against_their_jobs():
    from storm_kafka_compat.workshop.bench.pipeline import batch_breakdown
    batches = [
        # job 10.0-12.0 on 2 slots: tasks 10.1-11.1 and 10.2-11.9 (read 0.5 / 1.2)
        {"submitted": 10.0, "returned": 12.0, "moved": 0,
         "tasks": [(10.1, 11.1, 0.2, 0.8), (10.2, 11.9, 0.5, 1.2)]},
        # the driver took 0.5 s; job 12.5-13.0, one task that moved worker
        {"submitted": 12.5, "returned": 13.0, "moved": 1, "tasks": [(12.6, 12.9, 0.1, 0.2)],
         "dealt": (1, 3, 0)},
    ]
    b = batch_breakdown(batches, slots=2)
    assert b["batches"] == 2 and b["jobs"] == 2.5 and b["driver"] == 0.5
    assert b["to_first_task"] == pytest.approx(0.2)
    assert b["after_last_task"] == pytest.approx(0.2)
    assert b["read"] == pytest.approx(0.8) and b["process"] == pytest.approx(2.2)
    assert b["idle_slots"] == pytest.approx(2 * 2.0 - 2.7 + 2 * 0.5 - 0.3)
    assert b["partition_moves"] == 1
    assert b["dealt"] == {"swapped": 1, "kept": 3, "late": 0}     # the run's counts so far


def test_each_front_end_run_reads_under_a_zk_root_of_its_own():
    """As the pipeline's runs: a run's root holds only its own id's documents, so the
    source never warns that other ids live there."""
    from storm_kafka_compat.workshop.bench.frontends import source_options
    one, two = (source_options(topic="t", bootstrap="127.0.0.1:9092", zk_port=2181,
                               spout_id=f"bench-source-{i}", backend="confluent")
                for i in (1, 2))
    assert one["zkRoot"] != two["zkRoot"]
    assert one["zkRoot"].endswith("/bench-source-1") and two["id"] == "bench-source-2"


def test_a_replayed_batch_is_counted_apart_and_a_shortfall_still_fails():
    """A bench run whose Spark job failed once processes some messages twice (at least
    once); its figure counts the topic's messages and says how many were replayed.
    Fewer processed, or a partition not committed to its end, is an error."""
    from storm_kafka_compat.workshop.bench.pipeline import read_once
    from storm_kafka_compat.engine.report import PartitionSummary, RunSummary

    def summary(messages, committed):
        parts = [PartitionSummary(topic="t", partition=p, location="", decision="earliest",
                                  resumed_from=0, committed=c) for p, c in enumerate(committed)]
        return RunSummary(messages=messages, partitions=parts, stopped_by="caught up")

    assert read_once("x", summary(200, [100, 100]), 200) == 0
    assert read_once("x", summary(232, [100, 100]), 200) == 32
    with pytest.raises(RuntimeError, match="processed 190 messages of 200 and committed to 200"):
        read_once("x", summary(190, [100, 100]), 200)
    with pytest.raises(RuntimeError, match="committed to 168"):
        read_once("x", summary(232, [100, 68]), 200)


def test_a_runs_start_is_its_first_batches_with_data_against_the_rest():
    from storm_kafka_compat.workshop.bench.pipeline import start_and_steady

    def batch(submitted, returned, taken):
        return {"submitted": submitted, "returned": returned, "taken": taken}
    # an empty first batch does not count; 5 batches of 100 in 2 s, then 4 of 200 in 2 s
    batches = [batch(0.0, 0.5, 0)] + [batch(1.0 + 0.4 * i, 1.3 + 0.4 * i, 100)
                                      for i in range(5)]
    batches += [batch(2.8 + 0.5 * i, 3.3 + 0.5 * i, 200) for i in range(4)]
    start = start_and_steady(batches)
    assert start["first_batches"] == 5
    assert start["first_msgs_per_s"] == pytest.approx(500 / 1.9)      # 1.0 -> 2.9
    assert start["steady_msgs_per_s"] == pytest.approx(800 / 1.9)     # 2.9 -> 4.8
    assert start["first_over_steady"] == pytest.approx(500 / 800)
    assert start_and_steady(batches[:6])["first_over_steady"] is None  # no steady part
