"""Fixtures of the fault suite (``pytest -m fault``).

The job runs as ``storm-kafka-compat run CONFIG`` in a subprocess (Spark local)
against a real ZooKeeper (``zk_server_factory``), Apache Kafka 0.9 clusters
(``kafka09_factory``) and tansu brokers (``tansu_factory``) the tests may stop,
pause, kill or cut. Each test writes its own
CONFIG; :class:`~tests.faults.harness.JobProcess` keeps the job's
stdout, stderr and metrics per start in the test's ``tmp_path``, and the stderr
of every start is appended to the report of a failed test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator, List

import pytest

# the broker fixtures live in tests/integration/conftest.py; import them explicitly
from tests.integration.conftest import (_BROKERS_KEY, _kafka_log_sections,  # noqa: F401
                                       kafka09, kafka09_factory, kafka09_topic, modern_factory,
                                       tansu_factory)

REPO_ROOT = str(Path(__file__).resolve().parents[2])

_JOBS_KEY = pytest.StashKey[list]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Append the stderr of every job start (and the broker log tails) to the report
    of a failed test."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    _kafka_log_sections(item, report)
    for job in item.stash.get(_JOBS_KEY, []):
        for start in range(1, job.starts + 1):
            text = job.stderr(start)
            report.sections.append((f"job start {start} stderr ({job.workdir})",
                                    "\n".join(text.splitlines()[-60:])))
    for broker in dict.fromkeys(item.stash.get(_BROKERS_KEY, [])):
        report.sections.append((f"tansu {broker.bootstrap} log tail ({broker.log_path})",
                                broker.log_tail(60)))


@pytest.fixture
def job_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., object]]:
    """Return ``make(config_path, args=(), **kwargs) -> JobProcess`` (not started);
    every job is killed (process group) and closed at teardown."""
    from tests.faults.harness import JobProcess

    jobs: List[JobProcess] = []

    def make(config_path: Path, args: tuple = (), *, name: str = "job",
             **kwargs: object) -> JobProcess:
        workdir = tmp_path / f"{name}-{len(jobs) + 1}"
        workdir.mkdir()
        kwargs.setdefault("record_path", tmp_path / "deliveries.jsonl")
        job = JobProcess(config_path, workdir=workdir, args=args,
                         python_path=[REPO_ROOT], **kwargs)  # type: ignore[arg-type]
        jobs.append(job)
        request.node.stash.setdefault(_JOBS_KEY, []).append(job)
        return job

    yield make
    for job in jobs:
        job.close()


# --- hard timeout ---------------------------------------------------------------------------

#: seconds a fault test may take unless it says otherwise with ``@pytest.mark.hard_timeout(s)``
DEFAULT_HARD_TIMEOUT_S = 180


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "hard_timeout(seconds): abort the fault test after this "
                            "many seconds (SIGALRM); the jobs it started are killed at teardown")


@pytest.fixture(autouse=True)
def _hard_timeout(request: pytest.FixtureRequest) -> Iterator[None]:
    """Abort a fault test that runs longer than its budget (no pytest-timeout needed)."""
    import signal
    import threading

    marker = request.node.get_closest_marker("hard_timeout")
    seconds = float(marker.args[0]) if marker else DEFAULT_HARD_TIMEOUT_S
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum: int, frame: object) -> None:
        raise TimeoutError(f"fault test exceeded its hard timeout of {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --- servers and data -------------------------------------------------------------------------

@pytest.fixture
def seed() -> Callable[..., dict]:
    """Return ``seed(broker, topic, partitions, per_partition, start=0) -> {partition: log end}``:
    creates the topic when ``start`` is 0 and produces ``per_partition`` messages
    (values ``m-<partition>-<n>``) to each partition, one record per batch."""
    from storm_kafka_compat.workshop.servers.tansu import create_topic, produce_exact

    def make(broker: object, topic: str, partitions: int, per_partition: int,
             start: int = 0) -> dict:
        bootstrap = broker.bootstrap  # type: ignore[attr-defined]
        if start == 0:
            create_topic(bootstrap, topic, partitions)
        produce_exact(bootstrap, topic, [(p, None, f"m-{p}-{n}".encode())
                                         for n in range(start, start + per_partition)
                                         for p in range(partitions)])
        return {p: start + per_partition for p in range(partitions)}

    return make
