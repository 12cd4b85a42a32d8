"""``storm-kafka-compat migrate plan CONFIG``: the cut-over checked against the live
servers, with no writes (:mod:`storm_kafka_compat.tools.plan`).

Exit code 0 when the verdict is "safe to start", 1 when it is not (or a server cannot be
reached), 2 for a configuration error.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import click

from storm_kafka_compat.cli.render import as_json, err, table

PARTITION_COLUMNS = ("TOPIC", "PARTITION", "STORED-OFFSET", "STORED-TOPOLOGY-ID", "DECISION",
                     "START-OFFSET", "LAG", "REASON")
ID_COLUMNS = ("ID", "DOCUMENTS", "OFFSETS", "TOPOLOGY-IDS", "LAST-WRITTEN")


@click.group()
def migrate() -> None:
    """Plan a cut-over from a Storm topology (reads only)."""


def id_rows(found: List[Any]) -> List[Dict[str, Any]]:
    """Table rows of :class:`~storm_kafka_compat.offsets.spout_ids.SpoutIdDocuments`."""
    from storm_kafka_compat.offsets.spout_ids import written_at
    return [{"ID": d.spout_id, "DOCUMENTS": len(d.offsets),
             "OFFSETS": ",".join(str(o) for o in d.offsets.values()),
             "TOPOLOGY-IDS": ",".join(d.topology_ids),
             "LAST-WRITTEN": written_at(d.modified_ms)}
            for d in found]


@migrate.command("plan")
@click.argument("config_path", metavar="CONFIG", type=click.Path(dir_okay=False))
@click.option("--watch", "watch_s", type=click.FloatRange(min=0), default=5.0,
              show_default=True,
              help="Seconds to watch the documents for a writer still at work (0: no watch).")
@click.option("--topology-id", default=None,
              help="The id the job will write (default: what a run would use).")
@click.option("--json", "as_json_flag", is_flag=True, help="Print one JSON document.")
def plan(config_path: str, watch_s: float, topology_id: Optional[str],
         as_json_flag: bool) -> int:
    """Is it safe to start CONFIG on the Storm topology's offsets? Per partition: the
    stored offset, what a start would do and the lag; the other ids under the zkRoot
    when this id has no document; whether the offsets still move (a short watch); the
    traps; and one verdict line. Nothing is written."""
    from storm_kafka_compat.cli.console import load_config
    from storm_kafka_compat.tools import ToolEnv
    from storm_kafka_compat.tools.plan import plan_migration
    with ToolEnv(load_config(config_path)) as env:
        result = plan_migration(env, watch_s=watch_s, topology_id=topology_id)
    if as_json_flag:
        as_json(result.as_dict())
        return 0 if result.safe else 1
    lags = {(r.topic, r.partition): r.lag for r in result.lag}
    click.echo(f"{result.location} (this job writes topology id {result.topology_id!r})")
    table([{"TOPIC": d.topic, "PARTITION": d.partition,
            "STORED-OFFSET": getattr(d, "stored_offset", getattr(d, "committed", None)),
            "STORED-TOPOLOGY-ID": getattr(d, "stored_topology_id",
                                          getattr(d, "committed_topology_id", None)),
            "DECISION": d.decision, "START-OFFSET": d.start_offset,
            "LAG": lags.get((d.topic, d.partition)), "REASON": d.reason}
           for d in result.decisions], PARTITION_COLUMNS)
    if result.other_ids:
        click.echo("other ids under the root:")
        table(id_rows(result.other_ids), ID_COLUMNS)
    click.echo(f"watch: {len(result.changed)} offset(s) changed in {result.watch_s:g} s"
               if result.watch_s > 0 else "watch: skipped (--watch 0)")
    for trap in result.traps:
        err(f"trap: {trap.message()}")
    click.echo(result.verdict)
    return 0 if result.safe else 1
