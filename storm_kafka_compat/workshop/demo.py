"""The demo: a Storm topology's place in Kafka, picked up by the PySpark pipeline.

Everything runs on loopback, on the servers of :mod:`storm_kafka_compat.workshop.embedded`:
a real ZooKeeper from pyspark's jars and the tansu Kafka-protocol broker. The
demo writes Kafka's broker registry into ZooKeeper (as a ZooKeeper-mode Kafka
would), produces a topic, and writes the offset
documents a storm-kafka 1.2 topology would have left halfway through, byte for
byte; one partition has no document, as a partition Storm never committed.
Then the pipeline runs with ZkHosts until it has caught up, and the demo checks
that every partition resumed where Storm stopped and committed the log end.

With ``keep_dir`` the servers stay up after the demo, the job's CONFIG is written
there (``job.yaml``, and what was kept in ``kept.json``) and :func:`next_steps` lists
the commands to run against them (``demo --keep``). The broker (tansu) writes no broker
registry in ZooKeeper, so a topic made on it is not seen by ZkHosts until it is
registered: :func:`add_topic` (``demo --keep DIR --add-topic NAME``) creates one (or
takes one made otherwise), registers it and writes its CONFIG beside ``job.yaml``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Mapping, Optional

import yaml

from storm_kafka_compat.config import job_config_from_dict
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.offsets.document import encode_document, parse_document
from storm_kafka_compat.offsets.paths import partition_path

if TYPE_CHECKING:
    from storm_kafka_compat.workshop.embedded import EmbeddedServers
    from storm_kafka_compat.engine.report import RunSummary

log = logging.getLogger(__name__)

TOPIC = "clicks"
ZK_ROOT = "/kafka-offsets"
SPOUT_ID = "clicks-spout"
STORM_TOPOLOGY_ID = "clicks-12-1514764800"
#: what ``demo --keep`` left, beside its job.yaml
KEPT_FILE = "kept.json"


def page_view_bolt(t: Any) -> None:
    """The demo's bolt: parses ``user=<u> page=<p>`` and acks; a malformed
    message raises, which fails the tuple (none is produced malformed)."""
    fields = dict(part.split("=", 1) for part in t["str"].split())
    if "user" not in fields or "page" not in fields:
        raise ValueError(f"not a page view: {t['str']!r}")


def demo_config(zk_connect: str, zk_port: int) -> Dict[str, Any]:
    """The demo job's CONFIG mapping (ZkHosts on the embedded ZooKeeper)."""
    return {
        "spout": {"topic": TOPIC, "zkRoot": ZK_ROOT, "id": SPOUT_ID,
                  "scheme": "string", "stateUpdateIntervalMs": 500},
        "hosts": {"zk": zk_connect, "refreshFreqSecs": 60},
        "topology": {"topology.name": "clicks",
                     "storm.zookeeper.servers": ["127.0.0.1"],
                     "storm.zookeeper.port": zk_port},
        "spark": {"master": "local[2]", "appName": "storm-kafka-compat-demo"},
        "bolt": "storm_kafka_compat.workshop.demo:page_view_bolt",
    }


def command_name() -> str:
    """How to call this program from a shell: ``storm-kafka-compat`` when that is on
    the PATH and is this installation's, else the console script's full path beside
    this interpreter (the README installs into ``.venv``, not onto the PATH), else
    ``python -m storm_kafka_compat.cli.main``."""
    script = Path(sys.executable).with_name("storm-kafka-compat")
    found = shutil.which("storm-kafka-compat")
    if found is not None and (not script.exists() or Path(found).resolve() == script.resolve()):
        return "storm-kafka-compat"
    if script.exists():
        return shlex.quote(str(script))
    return f"{shlex.quote(sys.executable)} -m storm_kafka_compat.cli.main"


def next_steps(kept: Mapping[str, Any], command: Optional[str] = None) -> List[str]:
    """What to run against the servers ``demo --keep`` left up, as lines a shell
    takes as they are (``command``: how to call this program, :func:`command_name`)."""
    skc = command or command_name()
    config = shlex.quote(str(kept["config"]))
    zk = kept["zookeeper"]
    return [
        f"{skc} offsets show {config}",
        f"{skc} offsets show --zk {zk} --zk-root {ZK_ROOT} --id {SPOUT_ID} --topic {TOPIC}",
        f"{skc} offsets explain {config}",
        f"{skc} offsets reset {config} --to-earliest --partitions 0",
        f"{skc} run {config} --until-caught-up",
        f"{skc} run {config} --status-port 8099 & sleep 20; {skc} status 8099; kill -TERM $!",
        f"{skc} demo --keep {shlex.quote(str(kept.get('dir', '.')))} --add-topic my-topic "
        f"--partitions 3   # your own topic, registered for ZkHosts, with its CONFIG",
        f"kill {kept['zookeeper_pid']} {kept['broker_pid']}   # stop the servers",
    ]


def run_demo(*, messages: int = 2_000, partitions: int = 4,
             log: Callable[[str], None] = lambda s: None,
             keep_dir: Optional["os.PathLike[str] | str"] = None) -> Dict[str, Any]:
    """Run the demo end to end; return the per-partition result and a verdict
    (and, with ``keep_dir``, ``kept``: the servers left running and the CONFIG)."""
    from storm_kafka_compat.workshop.embedded import EmbeddedServers

    kept: Optional[Dict[str, Any]] = None
    with contextlib.ExitStack() as stack:
        base = _base_dir(keep_dir, stack)
        servers = EmbeddedServers("tansu", base).start()
        stack.callback(servers.close)       # dropped below when the servers are kept
        log(servers.describe())
        log_end = _seed_topic(servers, messages, partitions)
        with _zk_client(servers.zk.connect_string) as client:
            storm_offsets = _seed_storm_documents(client, servers, partitions, log_end)
            log(f"seeded {messages} messages in {partitions} partitions and the Storm "
                f"documents under {ZK_ROOT}/{SPOUT_ID}")
            config = demo_config(servers.zk.connect_string, servers.zk.port)
            summary = _run_pipeline(config, log)
            rows = _check(client, summary, storm_offsets, log_end)
            sample = client.get(partition_path(ZK_ROOT, SPOUT_ID, 0))[0].decode()
        if keep_dir is not None:
            kept = _keep(base, config, servers)
            stack.pop_all()                 # the servers outlive this process
    ok = all(row["OK"] == "yes" for row in rows)
    verdict = ("every partition resumed where Storm stopped and committed the log end; "
               f"document now: {sample}") if ok else "MISMATCH: see the rows marked NO"
    result = {"ok": ok, "partitions": rows, "verdict": verdict, "summary": summary.as_dict()}
    if kept is not None:
        result["kept"] = kept
    return result


def _base_dir(keep_dir: Optional["os.PathLike[str] | str"], stack: contextlib.ExitStack) -> Path:
    """Where the servers live: ``keep_dir`` (new or empty) with ``--keep``, else a
    temporary directory removed at the end."""
    if keep_dir is None:
        return Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="skc-demo-")))
    base = Path(keep_dir).resolve()
    if base.exists() and any(base.iterdir()):
        raise ConfigError(
            f"--keep {keep_dir}: the directory is not empty (a kept demo? its job.yaml names "
            f"the servers); stop those servers and remove it, or give another directory",
            key="--keep", value=str(keep_dir))
    base.mkdir(parents=True, exist_ok=True)
    return base


def page_views(messages: int, partitions: int) -> List[Any]:
    """``messages`` page views (``user=<u> page=<p>``, keyed by user) spread round-robin
    over ``partitions``: what :func:`page_view_bolt` reads."""
    return [(i % partitions, f"user{i % 97}".encode(),
             f"user=user{i % 97} page=/p/{i % 13}".encode()) for i in range(messages)]


def _seed_topic(servers: "EmbeddedServers", messages: int, partitions: int) -> Dict[int, int]:
    """The demo topic with ``messages`` page views; returns each partition's log end."""
    servers.create(TOPIC, partitions)
    servers.produce(TOPIC, page_views(messages, partitions))
    return {p: len(range(p, messages, partitions)) for p in range(partitions)}


@contextlib.contextmanager
def _zk_client(connect: str) -> Iterator[Any]:
    from kazoo.client import KazooClient
    from kazoo.retry import KazooRetry

    client = KazooClient(hosts=connect, connection_retry=KazooRetry(max_tries=-1, max_delay=1),
                         command_retry=KazooRetry(max_tries=5))
    client.start(timeout=15)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def _seed_storm_documents(client: Any, servers: "EmbeddedServers", partitions: int,
                          log_end: Mapping[int, int]) -> Dict[int, Optional[int]]:
    """Kafka's broker registry, and the documents a storm-kafka topology left: partitions
    0..n-2 halfway, the last one never committed. Returns the Storm offsets."""
    servers.write_registry(client, TOPIC, partitions)
    broker = servers.broker
    storm_offsets: Dict[int, Optional[int]] = {}
    for p in range(partitions - 1):
        offset = log_end[p] // 2 + p
        storm_offsets[p] = offset
        client.create(partition_path(ZK_ROOT, SPOUT_ID, p), encode_document(
            topology_id=STORM_TOPOLOGY_ID, topology_name="clicks", offset=offset,
            partition=p, broker_host=broker.host, broker_port=broker.port, topic=TOPIC),
            makepath=True)
    storm_offsets[partitions - 1] = None
    return storm_offsets


def _run_pipeline(config: Mapping[str, Any], log: Callable[[str], None]) -> "RunSummary":
    from storm_kafka_compat.engine.driver import Pipeline, RunOptions

    started = time.monotonic()
    log("starting Spark and the pipeline (the first Spark start takes a few seconds)")
    summary = Pipeline(job_config_from_dict(config), progress=log).run(
        RunOptions(until_caught_up=True))
    log(f"pipeline {summary.stopped_by} after {time.monotonic() - started:.1f} s: "
        f"{summary.messages} messages, {summary.batches} batches")
    return summary


def _check(client: Any, summary: "RunSummary", storm_offsets: Mapping[int, Optional[int]],
           log_end: Mapping[int, int]) -> List[Dict[str, Any]]:
    """One row per partition: did it resume where Storm stopped and commit the log end?"""
    rows: List[Dict[str, Any]] = []
    by_partition = {p.partition: p for p in summary.partitions}
    for p, stored in storm_offsets.items():
        data, _ = client.get(partition_path(ZK_ROOT, SPOUT_ID, p))
        committed = parse_document(data).offset
        s = by_partition[p]
        expected_start = stored if stored is not None else 0
        good = (s.resumed_from == expected_start and committed == log_end[p]
                and s.processed == log_end[p] - expected_start)
        rows.append({"PARTITION": p, "STORM-OFFSET": stored, "DECISION": s.decision,
                     "RESUMED-FROM": s.resumed_from, "PROCESSED": s.processed,
                     "LOG-END": log_end[p], "COMMITTED": committed,
                     "OK": "yes" if good else "NO"})
    return rows


def _keep(base: Path, config: Mapping[str, Any], servers: "EmbeddedServers") -> Dict[str, Any]:
    """Leave the servers running with the job's CONFIG in ``base``; what ``--keep`` prints."""
    config_path = base / "job.yaml"
    config_path.write_text(yaml.safe_dump(dict(config), sort_keys=False))
    servers.detach()
    kept = {"config": str(config_path), "zookeeper": servers.zk.connect_string,
            "zookeeper_pid": servers.zk.pid, "broker": servers.bootstrap,
            "broker_pid": servers.broker_pid, "dir": str(base)}
    (base / KEPT_FILE).write_text(json.dumps(kept, indent=1) + "\n")
    return kept


def add_topic(keep_dir: "os.PathLike[str] | str", topic: str, *, partitions: int,
              messages: int) -> Dict[str, Any]:
    """Make ``topic`` usable with ZkHosts on the servers a ``demo --keep`` left in
    ``keep_dir``: created with ``partitions`` and ``messages`` page views unless the
    broker has it already (a topic made with another client: then only registered),
    registered in ZooKeeper's broker registry, and its CONFIG written to
    ``keep_dir/<topic>.yaml`` (the demo's, with this topic and the id ``<topic>-spout``).
    Returns what was done (``config``, ``partitions``, ``created``, ``messages``)."""
    from storm_kafka_compat.workshop.embedded import register_topic
    base = Path(keep_dir).resolve()
    try:
        kept = json.loads((base / KEPT_FILE).read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--keep {keep_dir}: no kept demo there ({base / KEPT_FILE}: "
                          f"{exc}); start one with `demo --keep DIR`", key="--keep",
                          value=str(keep_dir)) from None
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,249}", topic) or topic in (".", ".."):
        raise ConfigError(f"--add-topic {topic!r} is not a Kafka topic name (letters, digits, "
                          f"'.', '_' and '-', at most 249)", key="--add-topic", value=topic)

    found, created = register_topic(kept["zookeeper"], kept["broker"], topic, partitions,
                                    messages=lambda n: page_views(messages, n))
    config = yaml.safe_load(Path(kept["config"]).read_text())
    config["spout"].update({"topic": topic, "id": f"{topic}-spout"})
    config_path = base / f"{topic}.yaml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    return {"config": str(config_path), "topic": topic, "partitions": found,
            "created": created, "messages": messages if created else 0,
            "registry": f"/brokers/topics/{topic}", "broker": kept["broker"]}
