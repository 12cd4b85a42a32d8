"""The plan dealer (engine/dealing.py, executor/dealt.py): a batch's groups of plans go to
the tasks whose Python workers read them last, as a permutation of the groups of the tasks
that checked in, so that no group is read twice or left out; a task that cannot reach the
dealer on its first attempt reads its own group, a retried one is told what it was dealt."""

import threading
import time

import pytest

from storm_kafka_compat.batch import FetchPlan
from storm_kafka_compat.engine.dealing import (DealerServer, PlanDealer, split_groups,
                                               sticky_deal)
from storm_kafka_compat.errors import PipelineError
from storm_kafka_compat.executor.calls import Service
from storm_kafka_compat.executor.dealt import dealt_plans


def plans(n, topic="t"):
    return [FetchPlan(topic=topic, partition=p, offset=0) for p in range(n)]


def keys(group):
    return [(p.topic, p.partition) for p in group]


def test_groups_are_cut_as_spark_slices_a_list():
    groups = split_groups(plans(5), 2)
    assert [[p.partition for p in g] for g in groups] == [[0, 1], [2, 3, 4]]
    assert sorted(len(g) for g in split_groups(plans(64), 3)) == [21, 21, 22]


def test_the_deal_gives_each_worker_the_partitions_it_read_last():
    groups = split_groups(plans(8), 2)
    last = {k: "A" for k in keys(groups[0])} | {k: "B" for k in keys(groups[1])}
    assert sticky_deal(groups, {0: "B", 1: "A"}, last) == {0: groups[1], 1: groups[0]}
    assert sticky_deal(groups, {0: "A", 1: "B"}, last) == {0: groups[0], 1: groups[1]}
    # unknown workers: each task its own group
    assert sticky_deal(groups, {0: "C", 1: "D"}, last) == {0: groups[0], 1: groups[1]}
    # only the checked-in tasks' plans are dealt: task 1 absent keeps group 1 for itself
    assert sticky_deal(groups, {0: "B"}, last) == {0: groups[0]}


def test_the_deal_follows_partitions_when_the_plans_order_shifts_the_cut():
    # batch 1: A read 0-3, B read 4-7; batch 2 plans partition 5 first (not reached),
    # so Spark's slices would cut 5,0,1,2 | 3,4,6,7 and move 5 and 3
    last = {("t", p): "A" if p < 4 else "B" for p in range(8)}
    order = [5, 0, 1, 2, 3, 4, 6, 7]
    groups = split_groups([FetchPlan(topic="t", partition=p, offset=0) for p in order], 2)
    dealt = sticky_deal(groups, {0: "B", 1: "A"}, last)
    assert [p.partition for p in dealt[1]] == [0, 1, 2, 3]             # A's, in plan order
    assert [p.partition for p in dealt[0]] == [5, 4, 6, 7]             # 5 first, as planned
    # sizes force a move: A read 6 of 8, its task has room for 4; every plan once
    last = {("t", p): "A" if p < 6 else "B" for p in range(8)}
    dealt = sticky_deal(split_groups(plans(8), 2), {0: "A", 1: "B"}, last)
    assert [len(dealt[0]), len(dealt[1])] == [4, 4]
    assert sorted(p.partition for g in dealt.values() for p in g) == list(range(8))
    assert {p.partition for p in dealt[0]} == {0, 1, 2, 3}
    # two tasks on one worker share its partitions by room
    dealt = sticky_deal(split_groups(plans(6), 3), {0: "A", 1: "A", 2: "B"},
                        {("t", p): "A" for p in range(6)})
    assert sorted(len(g) for g in dealt.values()) == [2, 2, 2]
    assert sorted(p.partition for g in dealt.values() for p in g) == list(range(6))


def run_claims(dealer, batch, workers):
    out, threads = {}, []
    for task, worker in workers.items():
        def claim(task=task, worker=worker):
            out[task] = dealer.claim(batch, task, worker)
        threads.append(threading.Thread(target=claim))
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    return out


def test_batches_follow_the_workers_whichever_task_they_run():
    dealer = PlanDealer(wait_s=5.0)
    groups = split_groups(plans(64), 2)
    dealer.open(1, groups)
    first = run_claims(dealer, 1, {0: "A", 1: "B"})
    assert first == {0: groups[0], 1: groups[1]}
    for batch in range(2, 8):                       # tasks land on the workers at random
        dealer.open(batch, groups)
        workers = {0: "B", 1: "A"} if batch % 2 == 0 else {0: "A", 1: "B"}
        got = run_claims(dealer, batch, workers)
        by_worker = {workers[t]: got[t] for t in got}
        assert by_worker == {"A": groups[0], "B": groups[1]}
    assert (dealer.swapped, dealer.kept, dealer.late) == (6, 8, 0)


def test_a_late_task_reads_its_own_group_and_a_retry_what_it_was_dealt():
    now = [0.0]
    dealer = PlanDealer(wait_s=0.0, clock=lambda: now[0])
    groups = split_groups(plans(4), 2)
    dealer.open(1, groups)
    dealer.claim(1, 0, "A")
    dealer.claim(1, 1, "B")                        # A read group 0, B group 1
    dealer.open(2, groups)
    assert dealer.claim(2, 0, "B") == groups[0]   # alone when the wait ended: its own
    assert dealer.claim(2, 1, "A") == groups[1]   # late: its own, never task 0's
    assert dealer.claim(2, 0, "C") == groups[0]   # a retried attempt: what it was dealt
    assert (dealer.kept, dealer.late) == (2, 2)
    with pytest.raises(ValueError, match="task 0 of batch 1 is not being dealt"):
        dealer.claim(1, 0, "A")                   # a task of an earlier batch


def test_tasks_reach_the_dealer_over_its_connection_and_fall_back_without_it():
    dealer = PlanDealer(wait_s=5.0)
    server = DealerServer(dealer, "127.0.0.1")
    service = Service(server.address, server.authkey)
    groups = split_groups(plans(6), 2)
    try:
        dealer.open(3, groups)
        got = {}

        def claim(task):
            got[task] = dealt_plans(service, 3, task, groups[task], attempt=0)
        threads = [threading.Thread(target=claim, args=(t,)) for t in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert sorted(keys(g) for g in got.values()) == [keys(g) for g in groups]
        with pytest.raises(PipelineError, match="refused: ValueError: task 5 of batch 3"):
            dealt_plans(service, 3, 5, (), attempt=0)
    finally:
        server.close()
    # the driver gone: a first attempt reads its own plans, a retried one fails
    assert dealt_plans(service, 4, 1, groups[1], attempt=0) == groups[1]
    with pytest.raises(PipelineError, match="cannot be reached .* by a retried task"):
        dealt_plans(service, 4, 1, groups[1], attempt=1)


def test_the_runner_keeps_its_dealer_when_the_job_is_sent_again():
    """New brokers learned send the job again: the dealer, which knows which worker read
    which partition, stays, and the job names it; closing the runner stops it."""
    import types

    from storm_kafka_compat.config import Broker, SpoutConfig, StaticHosts
    from storm_kafka_compat.engine.runner import SparkRunner, StagedSparkRunner
    from storm_kafka_compat.executor.worker import WorkerJob

    sent = []

    class Context:
        def broadcast(self, value):
            sent.append(value)
            return types.SimpleNamespace(value=value, unpersist=lambda: None)

    spark = types.SimpleNamespace(sparkContext=Context())
    spout = SpoutConfig(hosts=StaticHosts({0: Broker("k", 9092)}), topic="t", zk_root="/r",
                        id="s")
    runner = SparkRunner(lambda: spark, deal_on="127.0.0.1")
    runner.start(WorkerJob(job_id="j", spout=spout, bootstrap=("a:1",)))
    dealer = runner.dealer
    runner.start(WorkerJob(job_id="j", spout=spout, bootstrap=("a:1", "b:2")))
    assert runner.dealer is dealer and dealer is not None
    assert [job.dealer.address for job in sent] == [dealer.address] * 2
    runner.close()
    assert runner.dealer is None
    assert dealt_plans(sent[0].dealer, 1, 0, (), attempt=0) == ()      # nobody answers
    staged = StagedSparkRunner(lambda: spark, deal_on="127.0.0.1")
    staged.start(WorkerJob(job_id="k", spout=spout, bootstrap=("a:1",)))
    assert staged.dealer is None and sent[-1].dealer is None     # stages without hosts
    staged.start(WorkerJob(job_id="h", spout=spout, bootstrap=("a:1",),
                           hosts=types.SimpleNamespace()))     # type: ignore[arg-type]
    assert staged.dealer is not None and sent[-1].dealer.address == staged.dealer.address
    staged.close()


def test_closing_the_dealer_ends_its_accepting_thread():
    """A listener closed under a blocked accept does not wake it on Linux: each run's
    dealer left a thread behind (and a bolt host its whole process) until woken."""
    before = {t for t in threading.enumerate() if t.name == "plan-dealer"}
    server = DealerServer(PlanDealer(), "127.0.0.1")
    accepting = [t for t in threading.enumerate() if t.name == "plan-dealer" and t not in before]
    assert len(accepting) == 1 and accepting[0].is_alive()
    server.dealer.open(1, split_groups(plans(2), 1))
    assert dealt_plans(Service(server.address, server.authkey), 1, 0, (), attempt=0)
    time.sleep(0.2)                     # back in accept, waiting for the next worker
    server.close()
    accepting[0].join(5)
    assert not accepting[0].is_alive()


def test_a_port_that_accepts_and_never_answers_is_unreachable_not_a_hang(monkeypatch):
    """The handshake is bounded: a task reaching for a driver's service whose port
    another server took since (seen in a parallel test run) waited for ever."""
    import socket

    from storm_kafka_compat.executor import calls
    monkeypatch.setattr(calls, "CONNECT_TIMEOUT_S", 0.3)
    outcome = []
    with socket.create_server(("127.0.0.1", 0)) as silent:   # the kernel accepts; nobody talks

        def reach():
            try:
                calls.call(silent.getsockname()[:2], b"k" * 32, ("claim", 1, 0, "w"))
            except calls.Unreachable as exc:
                outcome.append(exc)
        thread = threading.Thread(target=reach, daemon=True)
        thread.start()
        thread.join(10)
    assert not thread.is_alive() and len(outcome) == 1


def test_closing_the_dealer_as_its_workers_leave_closes_each_connection_once():
    """A worker that leaves and the dealer's close() both end the connection: once
    (closed twice, close() failed with EBADF, once in 2,087 tests)."""
    from multiprocessing.connection import Client
    for _ in range(20):
        server = DealerServer(PlanDealer(wait_s=0.0), "127.0.0.1")
        clients = [Client(server.address, authkey=server.authkey) for _ in range(3)]
        for c in clients:
            c.close()                       # the serving threads see EOF and close
        server.close()                      # while close() closes what is left
        deadline = time.monotonic() + 5     # a thread started late ends at its EOF
        while server._connections and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not server._connections
