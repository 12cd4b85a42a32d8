"""Which Spark task reads which group of a single-stage batch's plans.

A Python worker keeps its Kafka consumers between batches, each holding its partitions
at their next offsets with records already prefetched. Spark hands a batch's tasks to
whichever Python worker is free, so with the plans fixed per task index most partitions
changed worker every batch at 64 and 512 partitions (the bench's ``partition_moves``),
and each move cost a seek and a first fetch on the worker that got it, while the other
worker's prefetched records were dropped. Here, as Flink's split enumerator answers its
readers' requests, the driver deals the groups when the tasks ask: each task checks in
with its worker's name, and the tasks that checked in within :data:`DEAL_WAIT_S` of the
first are dealt their own groups' plans cut anew, each partition to the task whose worker
read it last where the sizes allow (:func:`sticky_deal`).

A task that checks in after that, or cannot reach the driver at all on its first attempt,
reads its own group: the deal only re-cuts the groups of tasks that checked in, so no
plan is read twice or left out. A retried attempt is dealt what its task was dealt.

:class:`PlanDealer` is the state (threads, no sockets; tested without servers);
:class:`DealerServer` serves it to the executors over ``multiprocessing.connection``.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from multiprocessing.connection import Connection, Listener
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from storm_kafka_compat.batch import FetchPlan
from storm_kafka_compat.executor.calls import Address, Answer, accept_each, stop_accepting
from storm_kafka_compat.kafka.fetch_group import PartitionKey

log = logging.getLogger(__name__)

#: how long the first task of a batch waits for the others to check in (s): a batch's
#: tasks start within milliseconds of each other when there are slots for all of them
DEAL_WAIT_S = 0.25

Group = Tuple[FetchPlan, ...]


def split_groups(plans: Sequence[FetchPlan], tasks: int) -> Tuple[Group, ...]:
    """``plans`` cut into ``tasks`` consecutive groups of sizes differing by at most one,
    as Spark's ``parallelize`` slices a list: each task's own plans, which the dealer
    re-cuts by worker (:func:`sticky_deal`) for the tasks that check in.
    """
    n = len(plans)
    return tuple(tuple(plans[i * n // tasks:(i + 1) * n // tasks]) for i in range(tasks))


def sticky_deal(groups: Sequence[Group], workers: Mapping[int, str],
                last: Mapping[PartitionKey, str]) -> Dict[int, Group]:
    """Task -> the plans it reads, for the tasks in ``workers`` (task -> its worker's
    name): their own groups' plans (task ``t``'s is ``groups[t]``) cut anew, each plan
    to a task whose worker read its partition last (``last``) while that task has room;
    a plan no worker here read last stays with its own task where room allows, else goes
    where room is left. Each task gets as many plans as its own group held, in the
    plans' order. Only the checked-in tasks' plans move, so no plan is read twice or
    left out.

    The groups Spark's slicing cuts follow the plans' order, which moves each batch (a
    partition a batch did not reach is planned first), so a permutation of whole groups
    still moved partitions between workers (362-474 moves over 5 batches at 512
    partitions, confluent); cut by the workers, a partition moves only when the sizes
    force it.
    """
    tasks = sorted(workers)
    pool = [plan for t in tasks for plan in groups[t]]
    owner = [t for t in tasks for _ in groups[t]]
    room = {t: len(groups[t]) for t in tasks}
    by_worker: Dict[str, List[int]] = {}
    for t in tasks:
        by_worker.setdefault(workers[t], []).append(t)
    chosen: Dict[int, List[int]] = {t: [] for t in tasks}
    rest: List[int] = []
    for i, plan in enumerate(pool):
        home = [t for t in by_worker.get(last.get((plan.topic, plan.partition), ""), ())
                if room[t] > 0]
        if home:
            t = max(home, key=lambda h: (room[h], -h))
            chosen[t].append(i)
            room[t] -= 1
        else:
            rest.append(i)
    for i in rest:          # no worker of theirs here: their own task's, else where room is
        t = owner[i] if room[owner[i]] > 0 else max(tasks, key=lambda h: (room[h], -h))
        chosen[t].append(i)
        room[t] -= 1
    return {t: tuple(pool[i] for i in sorted(chosen[t])) for t in tasks}


class PlanDealer:
    """The groups of the batch being run, and who read which partition last.

    Parameters
    ----------
    wait_s : float
        How long after the first check-in the deal waits for the other tasks.
    clock : callable returning seconds
    """

    def __init__(self, wait_s: float = DEAL_WAIT_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.wait_s = wait_s
        self.clock = clock
        self._cond = threading.Condition()
        self._last: Dict[PartitionKey, str] = {}
        self._batch: Optional[int] = None
        self._groups: Tuple[Group, ...] = ()
        self._workers: Dict[int, str] = {}
        self._dealt: Optional[Dict[int, Group]] = None
        self._first: Optional[float] = None
        #: over the run: tasks dealt other plans than their own group's, tasks dealt
        #: their own group, tasks that checked in after the deal (their own group)
        self.swapped = 0
        self.kept = 0
        self.late = 0

    def open(self, batch: int, groups: Sequence[Group]) -> None:
        """Start dealing ``batch``'s ``groups`` (group ``t`` is task ``t``'s own)."""
        with self._cond:
            self._batch = batch
            self._groups = tuple(groups)
            self._workers = {}
            self._dealt = None
            self._first = None
            self._cond.notify_all()

    def claim(self, batch: int, task: int, worker: str) -> Group:
        """The plans task ``task`` of ``batch`` reads, on the worker named ``worker``;
        waits for the deal (at most ``wait_s`` after the batch's first check-in).

        Raises ValueError for a batch that is not being dealt or a task it does not
        have (a task of an earlier job still running).
        """
        with self._cond:
            if batch != self._batch or not 0 <= task < len(self._groups):
                raise ValueError(f"task {task} of batch {batch} is not being dealt "
                                 f"(batch {self._batch}, {len(self._groups)} tasks)")
            if self._dealt is None:
                self._workers[task] = worker
                if self._first is None:
                    self._first = self.clock()
                while self._dealt is None and batch == self._batch:
                    if len(self._workers) == len(self._groups):
                        self._deal()
                        break
                    left = self._first + self.wait_s - self.clock()
                    if left <= 0:
                        self._deal()
                        break
                    self._cond.wait(left)
                if batch != self._batch or self._dealt is None:
                    raise ValueError(f"batch {batch} ended before task {task} was dealt")
            if task not in self._dealt:          # late: its own group, nobody else's
                self._dealt[task] = self._groups[task]
                self._remember(self._dealt[task], worker)
                self.late += 1
            return self._dealt[task]

    def _deal(self) -> None:
        self._dealt = sticky_deal(self._groups, self._workers, self._last)
        log.debug("batch %s dealt to %s (%d of %d tasks checked in)", self._batch,
                  self._workers, len(self._workers), len(self._groups))
        for task, group in self._dealt.items():
            self._remember(group, self._workers[task])
            if group == self._groups[task]:
                self.kept += 1
            else:
                self.swapped += 1
        self._cond.notify_all()

    def _remember(self, group: Group, worker: str) -> None:
        for p in group:
            self._last[(p.topic, p.partition)] = worker


class DealerServer:
    """A :class:`PlanDealer` served on ``bind`` (a free port): requests
    ``("claim", batch, task, worker)`` answered ``("ok", plans)`` or ``("error", text)``.
    One thread accepts, one serves each worker's connection."""

    def __init__(self, dealer: PlanDealer, bind: str) -> None:
        self.dealer = dealer
        self.authkey = secrets.token_bytes(32)
        self._listener = Listener((bind, 0), authkey=self.authkey)
        self.address: Address = self._listener.address
        self._stopped = threading.Event()
        self._connections: List[Connection] = []
        #: a connection is closed once, by whichever of its thread and close() comes first
        self._closing = threading.Lock()
        threading.Thread(target=accept_each, name="plan-dealer", daemon=True,
                         args=(self._listener, self._stopped, self._answer,
                               "plan-dealer-conn")).start()

    def _answer(self, conn: Connection) -> None:
        self._connections.append(conn)
        try:
            while not self._stopped.is_set():
                conn.send(self._handle(conn.recv()))
        except (EOFError, OSError, ValueError, TypeError):
            return          # the worker went away, or close() closed the connection
        finally:
            self._close(conn)

    def _handle(self, request: Any) -> Answer:
        try:
            kind, batch, task, worker = request
            if kind != "claim":
                raise ValueError(f"unknown request {kind!r}")
            return "ok", self.dealer.claim(int(batch), int(task), str(worker))
        except Exception as exc:  # noqa: BLE001 - the task reads the error, the dealer goes on
            return "error", f"{type(exc).__name__}: {exc}"

    def close(self) -> None:
        """Stop serving; the tasks' next claims find nobody (a first attempt then reads
        its own group)."""
        stop_accepting(self._listener, self._stopped)
        for conn in list(self._connections):
            self._close(conn)

    def _close(self, conn: Connection) -> None:
        # closed twice, the second close failed (EBADF) or closed a descriptor reused since
        with self._closing:
            if conn in self._connections:
                self._connections.remove(conn)
                conn.close()
