"""``storm-kafka-compat offsets show|explain|reset|migrate``.

Each command loads CONFIG, builds a :class:`~storm_kafka_compat.tools.ToolEnv`
(offset store with the configured ZooKeeper digest credentials, Kafka access
with the ``kafka`` security settings, the pipeline's coordinator), calls the
tool and renders its data: a table, or one JSON document with ``--json``.
Anything that writes is a dry run unless ``--execute``.

A CONFIG with ``kafkaSpout.offsetStore: kafka`` (the storm-kafka-client spout)
keeps its offsets in a consumer group: ``show`` and ``explain`` read the
group; ``reset`` refuses it and prints the equivalent ``kafka-consumer-groups
--reset-offsets`` command (Kafka's own tool resets a group).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, cast

import click

from storm_kafka_compat.cli.console import load_config
from storm_kafka_compat.config import JobConfig
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.cli.render import as_json, err, table

_config_arg = click.argument("config_path", metavar="CONFIG", type=click.Path(dir_okay=False))
_json_opt = click.option("--json", "as_json_flag", is_flag=True,
                         help="Print one JSON document instead of a table.")
_force_opt = click.option("--force", is_flag=True,
                          help="Write even while a job owns the documents or they change "
                               "during the watch (a running job then stops at its next "
                               "commit without overwriting them).")
_watch_opt = click.option("--watch", "watch_s", type=click.FloatRange(min=0), default=None,
                          help="Seconds to watch the documents for a writer at work before "
                               "--execute writes (default: twice stateUpdateIntervalMs, at "
                               "least 2; 0: no watch).")


def _watch_for(job: JobConfig, watch_s: Optional[float]) -> float:
    """The watch before a write: given, else two commit intervals of the job (a Storm
    topology that still processes writes once per interval), at least 2 s."""
    if watch_s is not None:
        return watch_s
    return max(2.0, 2 * job.spout.state_update_interval_ms / 1000.0)


def _env(config_path: str) -> Any:
    from storm_kafka_compat.tools import ToolEnv
    return ToolEnv(load_config(config_path))


@click.group()
def offsets() -> None:
    """Inspect, explain, reset and migrate the spout's offsets."""


def job_from_flags(*, zk: Optional[str], zk_root: Optional[str], spout_id: Optional[str],
                   topic: Optional[str], bootstrap: Optional[str], broker_zk: Optional[str],
                   group: Optional[str]) -> JobConfig:
    """The JobConfig of the flag-only form of ``offsets show``: the ZooKeeper store
    (``--zk --zk-root --id --topic``, as storm-kafka-monitor takes them) or a Kafka
    consumer group (``--group --bootstrap --topic``, as kafka-consumer-groups does)."""
    from storm_kafka_compat.config import job_config_from_dict
    if not topic:
        raise click.UsageError("--topic is required without CONFIG")
    if group is not None:
        if not bootstrap:
            raise click.UsageError("--group needs --bootstrap HOST:PORT (the group's brokers)")
        return job_config_from_dict({
            "kafkaSpout": {"groupId": group, "bootstrapServers": bootstrap, "topics": [topic]},
            "topology": {"name": "offsets-show"}})
    missing = [f for f, v in (("--zk", zk), ("--zk-root", zk_root), ("--id", spout_id))
               if not v]
    if missing:
        raise click.UsageError(f"give CONFIG, or {', '.join(missing)} with --topic (the "
                               "ZooKeeper store), or --group with --bootstrap (a Kafka group)")
    hosts = {"bootstrap": bootstrap} if bootstrap else {"zk": broker_zk or zk}
    return job_config_from_dict({
        "spout": {"topic": topic, "zkRoot": zk_root, "id": spout_id,
                  "zkServers": [h.strip() for h in str(zk).split(",") if h.strip()]},
        "hosts": hosts, "topology": {"name": "offsets-show"}})


@offsets.command()
@click.argument("config_path", metavar="[CONFIG]", required=False,
                type=click.Path(dir_okay=False))
@click.option("--zk", default=None, metavar="HOST:PORT[,...]",
              help="Without CONFIG: the ZooKeeper holding the spout's documents.")
@click.option("--zk-root", default=None, help="Without CONFIG: the spout's zkRoot.")
@click.option("--id", "spout_id", default=None, help="Without CONFIG: the spout's id.")
@click.option("--topic", default=None, help="Without CONFIG: the topic.")
@click.option("--bootstrap", default=None, metavar="HOST:PORT[,...]",
              help="Without CONFIG: the brokers (default: Kafka's registry in --broker-zk).")
@click.option("--broker-zk", default=None, metavar="HOST:PORT[,...][/chroot]",
              help="Without CONFIG: the ZooKeeper of Kafka's broker registry (default --zk).")
@click.option("--group", default=None,
              help="Without CONFIG: read this Kafka consumer group instead (with --bootstrap).")
@_json_opt
def show(config_path: Optional[str], zk: Optional[str], zk_root: Optional[str],
         spout_id: Optional[str], topic: Optional[str], bootstrap: Optional[str],
         broker_zk: Optional[str], group: Optional[str], as_json_flag: bool) -> int:
    """Lag per partition and in total: committed offset (ZooKeeper document, or the
    Kafka consumer group of a kafkaSpout offsetStore: kafka CONFIG), log start and
    end. Without CONFIG the flags name the spout, as storm-kafka-monitor's and
    kafka-consumer-groups' do; --zk and --zk-root alone list every spout id under
    the root with its documents' offsets and when one was last written, the newest
    first (the id a Storm topology with a random id used last).

    --json prints storm-kafka-monitor's document: {topic: {partition:
    {consumerCommittedOffset, logHeadOffset, lag}}}, with -1 as the committed
    offset of a partition that has none (its lag is then head + 1).
    """
    from storm_kafka_compat.tools import ToolEnv
    from storm_kafka_compat.tools.lag import (GROUP_TABLE_COLUMNS, TABLE_COLUMNS, lag,
                                              monitor_json, total_row)
    flags = {"--zk": zk, "--zk-root": zk_root, "--id": spout_id, "--topic": topic,
             "--bootstrap": bootstrap, "--broker-zk": broker_zk, "--group": group}
    given = [f for f, v in flags.items() if v is not None]
    if config_path is not None and given:
        raise click.UsageError(f"give CONFIG or the flags, not both ({', '.join(given)})")
    if config_path is None and zk and zk_root is not None and not spout_id and not topic:
        return _show_ids(zk, zk_root, as_json_flag)
    job = load_config(config_path) if config_path is not None else job_from_flags(
        zk=zk, zk_root=zk_root, spout_id=spout_id, topic=topic, bootstrap=bootstrap,
        broker_zk=broker_zk, group=group)
    with ToolEnv(job) as env:
        rows = lag(env)
        kafka_store = env.kafka_store
    if as_json_flag:
        as_json(monitor_json(rows))
        return 0
    columns = GROUP_TABLE_COLUMNS if kafka_store else TABLE_COLUMNS
    body = [r.group_table_row() if kafka_store else r.table_row() for r in rows]
    table(body + [total_row(rows, columns)], columns)
    if not kafka_store:
        for r in rows:
            if r.problem:
                err(f"note: {r.topic}/{r.partition} at {r.zk_path}: stored document unusable "
                    f"({r.problem}); see `offsets explain`")
            elif r.outside is not None:
                err(f"note: {r.topic}/{r.partition}: {r.outside.note}")
    return 0


def _show_ids(zk: str, zk_root: str, as_json_flag: bool) -> int:
    """``offsets show --zk Z --zk-root R``: the spout ids under a root."""
    from storm_kafka_compat.cli.migrate_cmd import ID_COLUMNS, id_rows
    from storm_kafka_compat.offsets.zkstore import ZkStateStore
    from storm_kafka_compat.offsets.spout_ids import ids_under_root
    with ZkStateStore(zk) as store:
        found = ids_under_root(store, zk_root)
    if as_json_flag:
        as_json([d.as_dict() for d in found])
        return 0
    table(id_rows(found), ID_COLUMNS)
    if not found:
        err(f"no spout documents under {zk_root} on {zk}")
    return 0


EXPLAIN_COLUMNS = ("TOPIC", "PARTITION", "ZK-PATH", "STORED-OFFSET", "STORED-TOPOLOGY-ID",
                   "DECISION", "START-OFFSET", "REASON")
#: ``offsets explain`` columns of a Kafka-store CONFIG
GROUP_EXPLAIN_COLUMNS = ("GROUP", "TOPIC", "PARTITION", "COMMITTED", "COMMITTED-TOPOLOGY-ID",
                         "STRATEGY", "DECISION", "START-OFFSET", "REASON")


@offsets.command()
@_config_arg
@_json_opt
@click.option("--topology-id", default=None,
              help="Compare stored ids with this one (default: what a run would use).")
def explain(config_path: str, as_json_flag: bool, topology_id: Optional[str]) -> int:
    """Per partition: path, stored document, the start decision and offset, and why.

    For a kafkaSpout offsetStore: kafka CONFIG: the group's commit and its
    metadata, and storm-kafka-client's firstPollOffsetStrategy decision.
    """
    from storm_kafka_compat.tools.explain import explain as run_explain
    from storm_kafka_compat.tools.explain import explain_group
    with _env(config_path) as env:
        if env.kafka_store:
            groups = explain_group(env, topology_id=topology_id)
            if as_json_flag:
                as_json([g.as_dict() for g in groups])
            else:
                table([{"GROUP": g.group, "TOPIC": g.topic, "PARTITION": g.partition,
                        "COMMITTED": g.committed,
                        "COMMITTED-TOPOLOGY-ID": g.committed_topology_id,
                        "STRATEGY": g.strategy, "DECISION": g.decision,
                        "START-OFFSET": g.start_offset, "REASON": g.reason} for g in groups],
                      GROUP_EXPLAIN_COLUMNS)
            return 0
        items = run_explain(env, topology_id=topology_id)
    if as_json_flag:
        as_json([e.as_dict() for e in items])
    else:
        table([{"TOPIC": e.topic, "PARTITION": e.partition, "ZK-PATH": e.zk_path,
                "STORED-OFFSET": e.stored_offset, "STORED-TOPOLOGY-ID": e.stored_topology_id,
                "DECISION": e.decision, "START-OFFSET": e.start_offset, "REASON": e.reason}
               for e in items], EXPLAIN_COLUMNS)
        for e in items:
            if e.stored_bytes is not None:
                err(f"{e.zk_path} holds {e.stored_bytes[:200]!r}")
    return 0


@offsets.command()
@_config_arg
@click.option("--to-earliest", is_flag=True, help="Kafka's log start.")
@click.option("--to-latest", is_flag=True, help="Kafka's log end.")
@click.option("--to-offset", type=click.IntRange(min=0), default=None,
              help="This next offset to read.")
@click.option("--to-datetime", default=None,
              help="First message at or after this time (ISO 8601, UTC if no zone; or epoch ms).")
@click.option("--shift-by", type=int, default=None, help="Stored offset plus N (N may be < 0).")
@click.option("--partitions", default=None,
              help="Only these partitions: N, N-M or TOPIC:N, comma-separated.")
@click.option("--topology-id", default=None,
              help="Write this topology.id (default: keep the stored one).")
@click.option("--execute", is_flag=True, help="Write the documents (default: dry run).")
@click.option("--export", "export_path", type=click.Path(dir_okay=False), default=None,
              help="Write the plan as topic,partition,offset CSV (kafka-consumer-groups "
                   "--from-file).")
@_force_opt
@_watch_opt
@_json_opt
def reset(config_path: str, to_earliest: bool, to_latest: bool, to_offset: Optional[int],
          to_datetime: Optional[str], shift_by: Optional[int], partitions: Optional[str],
          topology_id: Optional[str], execute: bool, export_path: Optional[str], force: bool,
          watch_s: Optional[float], as_json_flag: bool) -> int:
    """Reset the spout's offsets; prints the plan and writes nothing without --execute.

    Targets outside [log start, log end] are clamped with a notice. With --execute
    the reset is refused while a job owns the documents (its ownership record, which
    names it) or while they change during a short watch (a Storm topology still
    committing): a running spout would overwrite them. --force writes anyway; a
    running job then stops at its next commit without overwriting them.
    """
    from storm_kafka_compat.tools.reset import (PLAN_COLUMNS, ResetMode, ResetSpec, execute_reset,
                                                export_csv, parse_datetime, plan_reset)
    modes: Tuple[Tuple[ResetMode, Any, bool], ...] = (
        ("earliest", None, to_earliest), ("latest", None, to_latest),
        ("offset", to_offset, to_offset is not None),
        ("datetime", to_datetime, to_datetime is not None),
        ("shift", shift_by, shift_by is not None))
    chosen = [(m, v) for m, v, given in modes if given]
    if len(chosen) != 1:
        raise click.UsageError("give exactly one of --to-earliest, --to-latest, --to-offset N, "
                               "--to-datetime T, --shift-by N")
    name, raw = chosen[0]
    value = parse_datetime(str(raw)) if name == "datetime" else cast(Optional[int], raw)
    spec = ResetSpec(name, value)
    job = load_config(config_path)
    if job.uses_kafka_offsets:
        assert job.kafka_spout is not None
        raise ConfigError(
            f"offsets reset writes the spout's ZooKeeper documents, but {config_path} keeps its "
            f"offsets in Kafka consumer group {job.kafka_spout.group_id!r} (kafkaSpout."
            "offsetStore: kafka); stop the job and reset the group with Kafka's tool: "
            f"{kafka_consumer_groups_reset(job, name, value, partitions, execute)} (or copy "
            "ZooKeeper offsets into the group with `storm-kafka-compat offsets migrate "
            f"ZK-CONFIG --to-kafka-group {job.kafka_spout.group_id}`)",
            key="kafkaSpout.offsetStore", value="kafka")
    from storm_kafka_compat.tools import ToolEnv
    with ToolEnv(job) as env:
        plan = plan_reset(env, spec, partitions=partitions, topology_id=topology_id)
        if export_path:
            Path(export_path).write_text(export_csv(plan))
            err(f"plan exported to {export_path}")
        if execute:
            if not force and not plan.refused:      # a refused plan is refused anyway
                env.refuse_if_owned("offsets reset --execute",
                                    [e.zk_path for e in plan.entries if e.changes],
                                    watch_s=_watch_for(env.job, watch_s))
            execute_reset(env, plan)
    if as_json_flag:
        as_json(plan.as_dict())
    else:
        table([e.table_row() for e in plan.entries], PLAN_COLUMNS)
    if execute:
        err(f"wrote {plan.written} document(s); {len(plan.entries) - plan.written} unchanged")
    else:
        refused = len(plan.refused)
        err("dry run: nothing written; add --execute to write"
            + (f" ({refused} partition(s) refused)" if refused else ""))
    return 0


def _kcg_topics(job: JobConfig, partitions: Optional[str]) -> str:
    """``--topic``/``--all-topics`` arguments of kafka-consumer-groups for the
    subscription and a ``--partitions`` list (``T:0,1,2``: no ranges there)."""
    config = job.kafka_spout
    assert config is not None
    topics = list(config.topics or ())
    if not topics:  # a pattern subscription
        return "--all-topics"
    if partitions is None:
        return " ".join(f"--topic {t}" for t in topics)
    wanted: Dict[str, List[str]] = {}
    for raw in partitions.split(","):
        item = raw.strip()
        if not item:
            continue
        topic_part, _, numbers = item.rpartition(":")
        chosen = [topic_part] if topic_part else topics
        lo, _, hi = numbers.partition("-")
        try:
            rng = range(int(lo), int(hi or lo) + 1)
        except ValueError:
            raise ConfigError(f"--partitions item {item!r} is not N, N-M or TOPIC:N; give e.g. "
                              "0,2,5-7", key="--partitions", value=partitions) from None
        for t in chosen:
            wanted.setdefault(t, []).extend(str(n) for n in rng)
    return " ".join(f"--topic {t}:{','.join(ns)}" for t, ns in wanted.items())


def kafka_consumer_groups_reset(job: JobConfig, mode: str, value: Optional[int],
                                partitions: Optional[str], execute: bool) -> str:
    """The ``kafka-consumer-groups --reset-offsets`` command equivalent to an
    ``offsets reset`` of a Kafka-store CONFIG."""
    from datetime import datetime, timezone
    config = job.kafka_spout
    assert config is not None
    if mode == "datetime":
        assert value is not None
        when = datetime.fromtimestamp(value / 1000, tz=timezone.utc)
        target = f"--to-datetime {when.strftime('%Y-%m-%dT%H:%M:%S')}.{value % 1000:03d}Z"
    else:
        target = {"earliest": "--to-earliest", "latest": "--to-latest",
                  "offset": f"--to-offset {value}", "shift": f"--shift-by {value}"}[mode]
    return (f"kafka-consumer-groups --bootstrap-server {','.join(config.bootstrap_servers)} "
            f"--group {config.group_id} {_kcg_topics(job, partitions)} --reset-offsets "
            f"{target} {'--execute' if execute else '--dry-run'}")


@offsets.command()
@_config_arg
@click.option("--to-kafka-group", default=None, metavar="GROUP",
              help="Copy ZooKeeper offsets into this Kafka consumer group.")
@click.option("--from-kafka-group", default=None, metavar="GROUP",
              help="Copy this Kafka consumer group's offsets into ZooKeeper.")
@click.option("--layout", type=click.Choice(["storm", "kafka08"]), default="storm",
              show_default=True,
              help="ZooKeeper side: storm-kafka documents or the Kafka 0.8 consumer layout.")
@click.option("--zk-group", default=None,
              help="Group name of the kafka08 layout (default: the Kafka group).")
@click.option("--owners", is_flag=True,
              help="kafka08 target: also create /consumers/<group>/owners/<topic>.")
@click.option("--partitions", default=None,
              help="Only these partitions: N, N-M or TOPIC:N, comma-separated.")
@click.option("--topology-id", default=None,
              help="topologyId of the commit metadata / topology.id of new documents.")
@click.option("--execute", is_flag=True, help="Write (default: dry run).")
@_force_opt
@_watch_opt
@_json_opt
def migrate(config_path: str, to_kafka_group: Optional[str], from_kafka_group: Optional[str],
            layout: str, zk_group: Optional[str], owners: bool, partitions: Optional[str],
            topology_id: Optional[str], execute: bool, force: bool, watch_s: Optional[float],
            as_json_flag: bool) -> int:
    """Move offsets between ZooKeeper and a Kafka consumer group (dry run unless --execute).

    Both sides hold the next offset to read. A group with active members is
    refused; offsets outside the log are skipped with the reason. Into the spout's
    documents (--from-kafka-group), --execute is refused while a job owns them or
    they change during a short watch, unless --force (as for `offsets reset`).
    """
    from storm_kafka_compat.kafka.groups import KafkaGroupOffsets
    from storm_kafka_compat.tools.migrate import (FROM_KAFKA, REPORT_COLUMNS, TO_KAFKA,
                                                  execute_migrate, kafka08_store, plan_migrate)
    if (to_kafka_group is None) == (from_kafka_group is None):
        raise click.UsageError("give exactly one of --to-kafka-group GROUP or "
                               "--from-kafka-group GROUP")
    direction = TO_KAFKA if to_kafka_group is not None else FROM_KAFKA
    group = to_kafka_group if to_kafka_group is not None else from_kafka_group
    assert group is not None
    with _env(config_path) as env:
        env.partitions()  # learn the brokers before opening the group client
        zk08, owns_zk08 = kafka08_store(env) if layout == "kafka08" else (None, False)
        try:
            with KafkaGroupOffsets(list(env.kafka.bootstrap), group,
                                   env.job.kafka_settings.for_kafka_python()) as groups:
                plan = plan_migrate(env, direction=direction, group=group, groups=groups,
                                    layout=layout, zk_group=zk_group, zk08=zk08,
                                    topology_id=topology_id, partitions=partitions,
                                    owners=owners)
                if plan.active_members:
                    err(f"group {group!r} has active members ({', '.join(plan.active_members)}); "
                        "a migration into it is refused")
                if execute:
                    if direction == FROM_KAFKA and layout == "storm" and not force:
                        env.refuse_if_owned("offsets migrate --execute",
                                            [e.target for e in plan.to_move],
                                            watch_s=_watch_for(env.job, watch_s))
                    execute_migrate(env, plan, groups=groups, zk08=zk08)
        finally:
            if owns_zk08 and zk08 is not None:
                zk08.close()
    if as_json_flag:
        as_json(plan.as_dict())
    else:
        table([e.table_row() for e in plan.entries], REPORT_COLUMNS)
    skipped = sum(1 for e in plan.entries if e.action == "skip")
    if execute:
        err(f"moved {plan.moved} partition(s); {skipped} skipped")
    else:
        err(f"dry run: {len(plan.to_move)} partition(s) would move, {skipped} skipped; "
            "add --execute to write")
    return 0
