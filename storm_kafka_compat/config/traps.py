"""The traps of a migration, said before anything runs (pure).

A CONFIG can be valid and still lose a Storm topology's place at the first start, or at
some later restart. Each :class:`Trap` names the setting, what happens and the fix. The
same function serves ``config check`` (a loaded :class:`JobConfig`), ``config convert``
(a converted CONFIG that may still hold placeholders, plus what the source code said
about a value: a random or time-based expression) and ``migrate plan``.

The topology id a run writes without ``topology.id`` is ``<name>-<driver pid>-<epoch
seconds>`` (:func:`storm_kafka_compat.runtime.topology_instance_id`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, Final, List, Literal, Mapping, Optional, Sequence, Tuple

from storm_kafka_compat.config.fields import SPOUT_FIELDS, is_callable_ref
from storm_kafka_compat.config.stages import stage_levels
from storm_kafka_compat.config.model import (DEFAULT_MAX_MESSAGES_PER_PARTITION,
                                             DEFAULT_STORM_ZOOKEEPER, EARLIEST_TIME,
                                             LATEST_TIME, LONG_MAX, JobConfig, SCHEME_NAMES)

#: how hard a trap bites
Severity = Literal["danger", "caution"]
#: a trap that replays or skips data at the cut-over itself
DANGER: Final = "danger"
#: a trap that bites later (a restart, a pause) or needs a port
CAUTION: Final = "caution"

#: a UUID, or an epoch in seconds or milliseconds, inside an id
_UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                      r"[0-9a-fA-F]{12}")
_EPOCH_RE = re.compile(r"(?<!\d)1[3-9]\d{8}(\d{3})?(?!\d)")
#: a scheme class's name and the built-in scheme that does the same
_SCHEME_HINTS: Tuple[Tuple[str, str], ...] = (
    ("keyvalue", "string_key_value (KeyValueSchemeAsMultiScheme(StringKeyValueScheme))"),
    ("metadata", "message_metadata (string, partition, offset)"),
    ("string", "string (one str field)"), ("text", "string (one str field)"),
    ("json", "string, with json.loads in the first bolt"),
    ("raw", "raw (one bytes field)"), ("byte", "raw (one bytes field)"),
)


@dataclass(frozen=True)
class Evidence:
    """What the source code said about a CONFIG value (``config convert`` of Java):
    ``kind`` is ``random``, ``time``, ``unresolved`` or a run-time lookup."""

    kind: str
    where: str          # File.java:42
    expression: str


@dataclass(frozen=True)
class Trap:
    """One trap: the setting, what happens, and the fix."""

    kind: str
    key: str
    consequence: str
    fix: str
    severity: Severity = CAUTION
    where: Optional[str] = None

    def message(self) -> str:
        at = f" ({self.where})" if self.where else ""
        return f"{self.key}{at}: {self.consequence} Fix: {self.fix}"

    def as_dict(self) -> Dict[str, Any]:
        return {"kind": self.kind, "key": self.key, "severity": self.severity,
                "where": self.where, "consequence": self.consequence, "fix": self.fix}


@dataclass
class TrapFacts:
    """The settings the traps read, from a JobConfig or a raw CONFIG mapping."""

    topic: Any = None
    zk_root: Any = None
    spout_id: Any = None
    ignore_zk_offsets: bool = False
    start_offset_time: Any = EARLIEST_TIME
    max_offset_behind: Any = LONG_MAX
    reset_to_window: bool = False
    #: topology.max.spout.pending (None: unset)
    max_spout_pending: Any = None
    scheme: Any = None
    topology_name: Any = None
    topology_id: Any = None
    zk_servers: Sequence[str] = ()
    client: bool = False
    first_poll: Any = None
    documents: bool = True            # the offsets are ZooKeeper documents
    #: spout.zkServers or storm.zookeeper.servers is set (else Storm's default ZooKeeper)
    zk_servers_given: bool = True
    evidence: Dict[str, Evidence] = field(default_factory=dict)
    ported_schemes: Sequence[str] = ()  # Java scheme classes written as placeholders
    #: the ``topology.bolts`` entries as written (name, parallelism, inputs)
    bolts: Sequence[Any] = ()
    #: a single ``bolt: module:callable``
    simple_bolt: bool = False
    #: topology.state.dir (None: the default under ~/.local/state)
    state_dir: Any = None

    @classmethod
    def from_job(cls, job: JobConfig) -> "TrapFacts":
        from storm_kafka_compat.config.effective import offset_store_servers
        s = job.spout
        client = job.kafka_spout
        return cls(topic=s.topic, zk_root=s.zk_root, spout_id=s.id,
                   ignore_zk_offsets=s.ignore_zk_offsets, start_offset_time=s.start_offset_time,
                   max_offset_behind=s.max_offset_behind,
                   reset_to_window=s.max_offset_behind_reset_to_window,
                   max_spout_pending=job.topology.max_spout_pending, scheme=s.scheme,
                   topology_name=job.topology.name, topology_id=job.topology.id,
                   zk_servers=offset_store_servers(s, job.topology),
                   client=client is not None,
                   first_poll=client.first_poll_offset_strategy if client else None,
                   documents=not job.uses_kafka_offsets,
                   zk_servers_given=s.zk_servers is not None or
                   job.topology.zookeeper_servers != DEFAULT_STORM_ZOOKEEPER,
                   bolts=tuple(job.topology_spec.as_dict()["bolts"]
                               if job.topology_spec is not None else ()),
                   simple_bolt=job.bolt is not None, state_dir=job.topology.state_dir)

    @classmethod
    def from_mapping(cls, config: Mapping[str, Any],
                     evidence: Optional[Mapping[str, Evidence]] = None,
                     ported_schemes: Sequence[str] = ()) -> "TrapFacts":
        """From a CONFIG mapping as written (Storm names, or their aliases)."""
        spout = config.get("spout") or {}
        topology = config.get("topology") or {}
        client = config.get("kafkaSpout")
        client = client if isinstance(client, Mapping) else None

        def field_value(name: str, default: Any) -> Any:
            spec = next(s for s in SPOUT_FIELDS if s.storm_name == name)
            for key in (spec.storm_name, spec.attr) + tuple(spec.aliases):
                if key in spout:
                    return spout[key]
            return default

        servers = field_value("zkServers", None) or topology.get("storm.zookeeper.servers") or ()
        port = field_value("zkPort", None) or topology.get("storm.zookeeper.port") or 2181
        kafka_store = client is not None and str(client.get("offsetStore", "kafka")) == "kafka"
        return cls(topic=field_value("topic", None), zk_root=field_value("zkRoot", None),
                   spout_id=field_value("id", None),
                   ignore_zk_offsets=field_value("ignoreZkOffsets", False) is True or
                   spout.get("forceFromStart") is True,
                   start_offset_time=field_value("startOffsetTime", EARLIEST_TIME),
                   max_offset_behind=field_value("maxOffsetBehind", LONG_MAX),
                   reset_to_window=field_value("maxOffsetBehindResetToWindow", False) is True,
                   max_spout_pending=topology.get("topology.max.spout.pending"),
                   scheme=field_value("scheme", None),
                   topology_name=topology.get("name", topology.get("topology.name")),
                   topology_id=topology.get("id", topology.get("topology.id")),
                   zk_servers=[f"{h}:{port}" for h in servers] if isinstance(servers, list)
                   else (), client=client is not None,
                   first_poll=(client or {}).get("firstPollOffsetStrategy",
                                                 "UNCOMMITTED_EARLIEST" if client else None),
                   documents=not kafka_store, zk_servers_given=bool(servers),
                   evidence=dict(evidence or {}),
                   ported_schemes=tuple(ported_schemes),
                   bolts=tuple(topology.get("bolts") or ()) if isinstance(
                       topology.get("bolts"), list) else (),
                   simple_bolt=config.get("bolt") is not None,
                   state_dir=topology.get("topology.state.dir"))


def find_traps(facts: TrapFacts) -> List[Trap]:
    """Every trap of these settings, the dangerous ones first."""
    traps: List[Trap] = []
    if facts.documents:
        traps.extend(t for t in (_per_run_id(facts), _zk_root(facts), _ignore_zk_offsets(facts),
                                 _max_offset_behind(facts), _max_offset_behind_in_flight(facts),
                                 offsets_zookeeper(facts))
                     if t is not None)
    traps.extend(t for t in (_first_poll(facts), _topology_id(facts), _custom_scheme(facts),
                             bolt_tasks(facts))
                 if t is not None)
    return sorted(traps, key=lambda t: t.severity != DANGER)


def suggested_topology_id(name: Any) -> str:
    """The fixed ``topology.id`` the migration guide recommends for a topology name."""
    base = str(name) if name and "${" not in str(name) else "my-topology"
    return f"{base}-compat"


# --- one trap each ----------------------------------------------------------------------------


def _where(facts: TrapFacts, key: str) -> Optional[str]:
    ev = facts.evidence.get(key)
    return f"{ev.where} `{ev.expression}`" if ev is not None else None


def _list_command(facts: TrapFacts, root: Any) -> str:
    zk = ",".join(facts.zk_servers) or "ZK_HOST:2181"
    return f"storm-kafka-compat offsets show --zk {zk} --zk-root {root or 'ZK_ROOT'}"


def _start_time(facts: TrapFacts) -> str:
    t = facts.start_offset_time
    if t == EARLIEST_TIME:
        return "startOffsetTime -2: the whole retained log is processed again"
    if t == LATEST_TIME:
        return "startOffsetTime -1: everything produced since Storm stopped is skipped"
    return f"startOffsetTime {t}: the messages from that time on are read, whatever was processed"


def _per_run_id(facts: TrapFacts) -> Optional[Trap]:
    ev = facts.evidence.get("spout.id")
    text = str(facts.spout_id or "")
    if ev is not None and ev.kind in ("random", "time"):
        what = "random" if ev.kind == "random" else "built from the time of the run"
    elif _UUID_RE.search(text):
        what = "a UUID (a random id, new on every submission in the Java code?)"
    elif _EPOCH_RE.search(text):
        what = "built around an epoch time (new on every submission in the Java code?)"
    else:
        return None
    return Trap(
        "per_run_id", "spout.id",
        f"the spout id is {what}. Storm kept its offsets under zkRoot/<the id of its last "
        f"submission> (and lost its place on every redeploy); any other id finds no document "
        f"and starts at the {_start_time(facts)}.",
        f"find the id Storm last wrote: `{_list_command(facts, facts.zk_root)}` lists every id "
        f"under the root with its offsets and last-modified time; set spout.id to the newest "
        f"one and keep it fixed from now on.",
        DANGER, _where(facts, "spout.id"))


def _zk_root(facts: TrapFacts) -> Optional[Trap]:
    ev = facts.evidence.get("spout.zkRoot")
    root = str(facts.zk_root or "")
    if ev is not None and ev.kind in ("random", "time"):
        return Trap(
            "zk_root_per_run", "spout.zkRoot",
            "zkRoot is built from the time of the run (or a random value): every Storm "
            "submission kept its offsets under a new root, so no root written here holds "
            f"them; the job starts at the {_start_time(facts)}.",
            "list the roots Storm created (ZooKeeper's `zkCli.sh ls /`, then "
            f"`{_list_command(facts, '<root>')}`) and set zkRoot to the newest, fixed.",
            DANGER, _where(facts, "spout.zkRoot"))
    topic = str(facts.topic or "")
    if topic and root and topic in root.split("/"):
        return Trap(
            "zk_root_topic", "spout.zkRoot",
            f"zkRoot {root!r} is built from the topic {topic!r}: the documents move when the "
            f"topic does; a CONFIG whose topic differs from the one the Storm topology read "
            f"(a placeholder filled differently, a renamed topic) reads another path and starts "
            f"at the {_start_time(facts)}.",
            f"write zkRoot as the literal path Storm used (`{_list_command(facts, root)}` shows "
            f"its documents) and keep it when the topic changes.",
            CAUTION, _where(facts, "spout.zkRoot"))
    return None


def _ignore_zk_offsets(facts: TrapFacts) -> Optional[Trap]:
    if not facts.ignore_zk_offsets:
        return None
    return Trap(
        "ignore_zk_offsets", "spout.ignoreZkOffsets",
        "ignoreZkOffsets (forceFromStart) is true: a document written by another topology id "
        "is ignored, and Storm's documents always name Storm's id, so the first start ignores "
        f"the stored offsets and starts at the {_start_time(facts)}"
        + ("; without a fixed topology.id every restart does the same." if not facts.topology_id
           else "."),
        "set spout.ignoreZkOffsets: false for the cut-over (`offsets explain` then says "
        "`resume`); keep true only if a fresh start is really wanted.",
        DANGER, _where(facts, "spout.ignoreZkOffsets"))


def _max_offset_behind(facts: TrapFacts) -> Optional[Trap]:
    behind = facts.max_offset_behind
    if not isinstance(behind, int) or isinstance(behind, bool) or behind >= LONG_MAX or \
            facts.start_offset_time == EARLIEST_TIME:
        # Storm measures the distance to the startOffsetTime offset: from the log start
        # (-2) a stored offset is never far behind unless retention deleted it anyway
        return None
    target = ("latest - maxOffsetBehind (the last window is kept)" if facts.reset_to_window
              else f"the startOffsetTime offset ({_start_time(facts).split(':')[0]})")
    return Trap(
        "max_offset_behind", "spout.maxOffsetBehind",
        f"maxOffsetBehind is {behind} with {_start_time(facts).split(':')[0]}: after a pause "
        f"(the cut-over itself, a long stop) in which more than {behind} messages arrive on a "
        f"partition, the stored offset is reset to {target} and the messages in between are "
        f"skipped (STORM-399).",
        "leave maxOffsetBehind unset (Long.MAX_VALUE) for the cut-over, or make it larger than "
        "the most a partition receives during the longest stop you plan; `migrate plan` and "
        "`offsets explain` say `max_offset_behind` for a partition where it applies now.",
        CAUTION, _where(facts, "spout.maxOffsetBehind"))


def _max_offset_behind_in_flight(facts: TrapFacts) -> Optional[Trap]:
    """maxOffsetBehind below what a partition may hold in flight: Storm's ack/fail
    bound then drops failed messages (never retried) and pending ones (committed
    past), whatever startOffsetTime is."""
    behind = facts.max_offset_behind
    if not isinstance(behind, int) or isinstance(behind, bool) or behind >= LONG_MAX:
        return None
    pending = facts.max_spout_pending
    in_flight = pending if isinstance(pending, int) and not isinstance(pending, bool) and \
        pending > 0 else DEFAULT_MAX_MESSAGES_PER_PARTITION
    if behind >= in_flight:
        return None
    limit = ("topology.max.spout.pending" if in_flight == pending
             else "a batch (run --max-messages)")
    return Trap(
        "max_offset_behind_in_flight", "spout.maxOffsetBehind",
        f"maxOffsetBehind is {behind}, below the {in_flight} messages a partition may have in "
        f"flight ({limit}): a failed message more than {behind} offsets behind the newest "
        "emitted one is not retried, and pending messages more than that behind the newest "
        "ack are dropped and committed past (Storm's PartitionManager.ack/fail), so failures "
        "are skipped, not replayed.",
        f"raise maxOffsetBehind above {in_flight} (or leave it unset), or lower "
        f"{'topology.max.spout.pending' if in_flight == pending else 'run --max-messages'} "
        f"below {behind}.",
        CAUTION, _where(facts, "spout.maxOffsetBehind"))


def offsets_zookeeper(facts: TrapFacts) -> Optional[Trap]:
    """Neither spout.zkServers nor storm.zookeeper.servers: the documents are read from and
    written to Storm's default ZooKeeper, 127.0.0.1:2181 (storm-kafka's rule, STORM-692)."""
    if facts.zk_servers_given or not facts.documents:
        return None
    default = ",".join(f"{h}:2181" for h in DEFAULT_STORM_ZOOKEEPER)
    return Trap(
        "offsets_zookeeper", "spout.zkServers",
        f"neither spout.zkServers nor topology storm.zookeeper.servers is set: the offsets "
        f"are stored in Storm's ZooKeeper, as storm-kafka does (STORM-692), which here is the "
        f"default {default}; the Storm topology's documents are on its cluster's ZooKeeper, "
        f"so a job that does not run beside it finds none and starts at the "
        f"{_start_time(facts)}.",
        "set spout.zkServers (and zkPort) to the ZooKeeper that holds the Storm topology's "
        "offsets: its zkServers, else storm.zookeeper.servers of the Storm cluster's "
        "storm.yaml.",
        DANGER)


def _topology_id(facts: TrapFacts) -> Optional[Trap]:
    ev = facts.evidence.get("topology.id")
    text = str(facts.topology_id or "")
    suggestion = suggested_topology_id(facts.topology_name)
    if facts.topology_id and not (ev is not None and ev.kind in ("random", "time")) and not \
            _UUID_RE.search(text) and not _EPOCH_RE.search(text):
        return None
    what = ("is unset: each run writes a new id, <name>-<driver pid>-<epoch seconds>"
            if not facts.topology_id else f"{text!r} changes on every run")
    severity: Severity
    if facts.client and facts.first_poll in ("EARLIEST", "LATEST"):
        effect = (f"with firstPollOffsetStrategy {facts.first_poll} each restart treats the "
                  f"group's commits as another topology's and starts over")
        severity = DANGER
    elif facts.ignore_zk_offsets and facts.documents:
        effect = "with ignoreZkOffsets true each restart ignores the documents and starts over"
        severity = DANGER
    else:
        effect = ("it does not change where a start resumes, but a second job on the same "
                  "documents cannot be told from a restart of this one")
        severity = CAUTION
    return Trap("topology_id", "topology.id", f"topology.id {what}; {effect}.",
                f"set a fixed id, e.g. `topology: {{id: {suggestion}}}`.", severity,
                _where(facts, "topology.id"))


def _first_poll(facts: TrapFacts) -> Optional[Trap]:
    if not facts.client or facts.first_poll not in ("EARLIEST", "LATEST"):
        return None
    other = f"UNCOMMITTED_{facts.first_poll}"
    what = ("replays the whole retained log" if facts.first_poll == "EARLIEST"
            else "skips everything produced since Storm stopped")
    return Trap(
        "first_poll", "kafkaSpout.firstPollOffsetStrategy",
        f"firstPollOffsetStrategy {facts.first_poll} overrides a commit made by another "
        f"topology id, and the Storm topology's commits name its own id: the first start "
        f"{what}. {other} resumes from any commit.",
        f"set firstPollOffsetStrategy: {other} for the cut-over.", DANGER,
        _where(facts, "kafkaSpout.firstPollOffsetStrategy"))


def _custom_scheme(facts: TrapFacts) -> Optional[Trap]:
    scheme = facts.scheme
    if not facts.ported_schemes or not is_callable_ref(scheme) or scheme in SCHEME_NAMES:
        return None
    cls = facts.ported_schemes[0]
    low = cls.rsplit(".", 1)[-1].lower()
    hint = next((h for word, h in _SCHEME_HINTS if word in low), None)
    fix = (f"if {cls} decodes as {hint.split(' (')[0]} does, set spout.scheme: {hint}; "
           f"otherwise " if hint else "")
    return Trap(
        "custom_scheme", "spout.scheme",
        f"the topology decodes messages with its own Scheme class {cls}, which cannot run "
        f"here; the CONFIG names a Python placeholder {scheme!r}.",
        f"{fix}port deserialize() as a Python callable bytes -> list of values "
        f"(None for no tuple) and name it in spout.scheme (docs/configuration.md, scheme).",
        CAUTION)


# --- what differs for bolts -------------------------------------------------------------------

#: where a bolt task's state is saved when topology.state.dir is unset
DEFAULT_STATE_DIR = "~/.local/state/storm-kafka-compat/<zkRoot>/<id>"


def workers_note(value: Any) -> str:
    """What ``config convert`` says of Storm's ``topology.workers`` (not a CONFIG key)."""
    return (f"config.topology.workers {value!r} not mapped: Storm's worker processes have no "
            f"equal here. The Spark master and its executors (spark.master, spark.conf) run "
            f"the fetching tasks and every bolt behind shuffle groupings; the tasks of bolts "
            f"fed by fields, global or all groupings run one instance each in bolt-host "
            f"processes on the driver's machine (topology.bolt.hosts); see the trap on "
            f"topology.bolts and docs/migration-guide.md, \"Bolts: parallelism, workers, "
            f"state\".")


def _bolt_shape(entry: Any) -> Tuple[str, int, List[Tuple[str, str]]]:
    """``(name, parallelism, [(source, grouping)])`` of a ``topology.bolts`` entry as
    written (a placeholder parallelism counts as 1)."""
    if not isinstance(entry, Mapping):
        return str(entry), 1, []
    parallelism = entry.get("parallelism", 1)
    inputs = entry.get("inputs") or [{"from": "spout", "grouping": "shuffle"}]
    return (str(entry.get("name")), parallelism if isinstance(parallelism, int) else 1,
            [(str(i.get("from", "spout")), str(i.get("grouping", "shuffle")).lower())
             for i in inputs if isinstance(i, Mapping)])


def bolt_tasks(facts: TrapFacts) -> Optional[Trap]:
    """What parallelism, Storm's workers, bolt state and a restart mean here, for the
    bolts of this CONFIG (issue 31): the tasks of a bolt fed by a fields, global or all
    grouping are one instance each in bolt hosts on the driver's machine, with their state
    saved beside the offsets; the others run in every fetching Spark task's Python
    worker."""
    shapes = [_bolt_shape(b) for b in facts.bolts]
    if not shapes:
        if not facts.simple_bolt:
            return None
        return Trap(
            "bolt_tasks", "bolt",
            "the bolt runs in every fetching Spark task's Python worker: one instance per "
            "worker (spark.master's cores), not per Storm task; what it keeps in its own "
            "fields is per worker and gone at a restart, as a plain Storm bolt's memory is.",
            "keep state that must be exact behind a fields grouping (topology.bolts): its "
            "tasks keep one state each, saved with the offsets (docs/migration-guide.md).")
    _level, crossing = stage_levels([n for n, _, _ in shapes],
                                    {n: i for n, _, i in shapes}, "spout")
    hosted = [f"{n} ({p} task{'s' if p != 1 else ''})" for n, p, _ in shapes if crossing[n]]
    in_workers = [n for n, _, _ in shapes if not crossing[n]]
    where = str(facts.state_dir) if facts.state_dir else DEFAULT_STATE_DIR
    parts = []
    if hosted:
        parts.append(
            f"the bolts fed by fields, global or all groupings, {', '.join(hosted)}, run one "
            f"instance per task for the life of the job in bolt-host processes on the "
            f"driver's machine (topology.bolt.hosts), not spread over Storm's "
            f"topology.workers; their state is saved with the offsets at each commit under "
            f"{where} (topology.state.dir, on the driver's machine); at a restart it is "
            f"restored when the saved offsets equal the stored ones, else they start empty "
            f"with a warning (after an offsets reset, or another writer)")
    if in_workers:
        parts.append(
            f"{', '.join(in_workers)} run{'s' if len(in_workers) == 1 else ''} in every "
            f"fetching Spark task's Python worker: one instance per worker, whatever its "
            f"parallelism, and what {'it keeps' if len(in_workers) == 1 else 'they keep'} in "
            f"fields is per worker and gone at a restart")
    return Trap(
        "bolt_tasks", "topology.bolts", "; ".join(parts) + ".",
        ("keep topology.state.dir on a disk that outlives the driver's host (the state is "
         "not in ZooKeeper); " if hosted else "") +
        "docs/migration-guide.md, \"Bolts: parallelism, workers, state\", says what a crash "
        "and a restart do.")
