"""``storm-kafka-compat run CONFIG`` and ``storm-kafka-compat demo``."""

from __future__ import annotations

import json
import os
import shlex
import sys
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, TextIO

import click

from storm_kafka_compat.config.model import DEFAULT_MAX_MESSAGES_PER_PARTITION
from storm_kafka_compat.cli.console import ProgressPrinter, load_config
from storm_kafka_compat.cli.render import as_json, err, table

if TYPE_CHECKING:
    from storm_kafka_compat.engine.report import RunSummary

SUMMARY_COLUMNS = ("TOPIC", "PARTITION", "DECISION", "RESUMED-FROM", "PROCESSED", "ACKED",
                   "FAILED", "GIVEN-UP", "LOST", "COMMITTED")


def plural(n: int, noun: str) -> str:
    """``1 batch``, ``2 batches``, ``1 round trip``, ``0 messages``."""
    if n == 1:
        return f"{n} {noun}"
    return f"{n} {noun}es" if noun.endswith(("ch", "sh", "s", "x")) else f"{n} {noun}s"


def summary_rows(summary: "RunSummary") -> List[Dict[str, Any]]:
    return [{"TOPIC": p.topic, "PARTITION": p.partition, "DECISION": p.decision,
             "RESUMED-FROM": p.resumed_from, "PROCESSED": p.processed, "ACKED": p.acked,
             "FAILED": p.failed, "GIVEN-UP": p.given_up, "LOST": p.lost,
             "COMMITTED": p.committed} for p in summary.partitions]


def _metrics_sink(path: Optional[str], prometheus_port: Optional[int]) -> Any:
    """Where metric records go: JSON lines to ``path`` ('-' for stderr) and/or the
    Prometheus exporter; None (no records) when neither is asked for."""
    if path is None and prometheus_port is None:
        return None
    stream: Optional[TextIO] = None
    if path == "-":
        stream = sys.stderr
    elif path is not None:
        stream = open(path, "a", buffering=1)
    exporter = None
    if prometheus_port is not None:
        from storm_kafka_compat.engine.prometheus import PrometheusExporter
        exporter = PrometheusExporter(prometheus_port)

    def sink(record: Dict[str, Any]) -> None:
        if stream is not None:
            stream.write(json.dumps(record, separators=(",", ":")) + "\n")
        if exporter is not None:
            exporter.update(record)
    return sink


@click.command()
@click.argument("config_path", metavar="CONFIG", type=click.Path(dir_okay=False))
@click.option("--until-caught-up", is_flag=True,
              help="Stop once every partition has nothing pending and a fetch returned nothing.")
@click.option("--max-batches", type=click.IntRange(min=1), default=None,
              help="Stop after this many batches.")
@click.option("--max-messages", type=click.IntRange(min=1),
              default=DEFAULT_MAX_MESSAGES_PER_PARTITION, show_default=True,
              help="New messages fetched per partition per batch (a task also stops "
                   "fetching after its time budget).")
@click.option("--metrics-file", type=click.Path(dir_okay=False, allow_dash=True), default=None,
              help="Append metric records (JSON lines, Storm names) here every "
                   "metricsTimeBucketSizeInSecs and at shutdown; '-' for stderr.")
@click.option("--prometheus-port", type=int, default=None,
              help="Serve the metrics for Prometheus on this port (needs the prometheus extra).")
@click.option("--task-index", type=click.IntRange(min=0), default=0, show_default=True,
              help="This application's index among --total-tasks applications sharing the "
                   "topic; it owns partitions L[i::T] of the ordered partition list.")
@click.option("--total-tasks", type=click.IntRange(min=1), default=1, show_default=True,
              help="How many applications split the topic's partitions (Storm's spout tasks).")
@click.option("--status-port", type=click.IntRange(min=0, max=65535), default=None,
              help="Serve the job's status (lag, rate, pending, retries per partition) as "
                   "JSON on http://127.0.0.1:PORT/status; read it with `storm-kafka-compat "
                   "status`. 0 picks a free port (printed at start).")
@click.option("--spark-ui", is_flag=True,
              help="Turn Spark's web UI on (off by default; spark.ui.port sets its port).")
@click.option("--json", "as_json_flag", is_flag=True, help="Print the run summary as JSON.")
@click.option("--summary-file", type=click.Path(dir_okay=False), default=None,
              help="Write the run summary (the --json document) to this file when the run "
                   "ends, before it is printed: it survives a console or pipe that went away "
                   "(`run ... | tee log` and a Ctrl-C that ends tee too).")
@click.option("--no-imports", is_flag=True,
              help="Do not import the bolts and schemes on the driver before starting (when "
                   "they exist only on the executors, e.g. in an archive spark.archives ships).")
@click.option("--take-over", is_flag=True,
              help="Start even though another job's ownership record of the documents is "
                   "there (its host crashed, or it is being replaced); that job stops at its "
                   "next commit without writing.")
@click.option("--new-id", is_flag=True,
              help="spout.id is new on purpose: start it at startOffsetTime although other "
                   "ids under the zkRoot hold offsets of the topic (without it such a start "
                   "stops with exit 2, naming them, as `migrate plan` does).")
def run(config_path: str, until_caught_up: bool, max_batches: Optional[int], max_messages: int,
        metrics_file: Optional[str], prometheus_port: Optional[int], task_index: int,
        total_tasks: int, status_port: Optional[int], spark_ui: bool,
        as_json_flag: bool, summary_file: Optional[str], no_imports: bool, take_over: bool,
        new_id: bool) -> int:
    """Run the pipeline described by CONFIG.

    Prints one line per partition at start (where it resumes and why), a progress
    line every 5 s (rate, lag, pending and retries over the last interval) and a
    summary at the end. SIGTERM or Ctrl-C finishes the batch in flight, commits
    and exits 0 (during start-up it stops at once); a second one cancels the batch
    in flight and commits what was acknowledged. The bolts and schemes are imported
    before anything starts (exit 2 when one cannot be).
    """
    from storm_kafka_compat.engine.signals import StopBeforeStart, stop_at_once_handlers
    restore_signals = stop_at_once_handlers()
    try:
        summary = _run(config_path, restore_signals, until_caught_up=until_caught_up,
                       max_batches=max_batches, max_messages=max_messages,
                       metrics_file=metrics_file, prometheus_port=prometheus_port,
                       task_index=task_index, total_tasks=total_tasks, status_port=status_port,
                       spark_ui=spark_ui, no_imports=no_imports, take_over=take_over,
                       new_id=new_id)
    except StopBeforeStart as stopped:
        err(f"stopped during start-up ({stopped.signal_name}): no batch ran; nothing was "
            "read or committed")
        return 0
    finally:
        restore_signals()
    if summary_file is not None:
        write_summary_file(summary_file, summary)
    if as_json_flag:
        as_json(summary.as_dict())
    else:
        print_summary(summary)
    return 1 if summary.final_commit_failed else 0


def write_summary_file(path: str, summary: "RunSummary") -> None:
    """The summary's JSON document in ``path``, whole or not at all (written beside it,
    then renamed); said on stderr."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as out:
        json.dump(summary.as_dict(), out, indent=1)
        out.write("\n")
    os.replace(tmp, path)
    err(f"summary: {path}")


def print_summary(summary: "RunSummary") -> None:
    """The end of a run for an operator: the table on stdout; on stderr a warning for
    each partition that started over an unusable document (said at the start too,
    where it may have scrolled away) and the one ``stopped:`` line."""
    table(summary_rows(summary), SUMMARY_COLUMNS)
    for p in summary.partitions:
        if p.decision == "invalid_state":
            err(f"warning: {p.topic}/{p.partition} found an unusable document at "
                f"{p.location} and started at {p.resumed_from} (corruptStatePolicy: "
                "storm); see the warning at the start and `offsets explain`")
    for bolt, kinds in summary.bolt_errors.items():
        err(f"warning: bolt {bolt!r} raised " + ", ".join(
            f"{kind} {n:,} times" for kind, n in kinds.items()) +
            " (each failed its input, retried per the retry settings; the first is in the log)")
    for stuck in summary.stuck:
        err(f"warning: {stuck['topic']}/{stuck['partition']} was stuck at offset "
            f"{stuck['offset']} when the run ended ({stuck['batches']} batches failing"
            + (f", bolt {stuck['bolt']!r} {stuck['error']})" if stuck["bolt"] else ")"))
    err(f"stopped: {summary.stopped_by}; {plural(summary.messages, 'message')} in "
        f"{plural(summary.batches, 'batch')}, {summary.elapsed_s:.1f} s; "
        f"{plural(summary.commits, 'document')} written in "
        f"{plural(summary.commit_round_trips, 'round trip')}")


def _run(config_path: str, restore_signals: Callable[[], None], *, until_caught_up: bool,
         max_batches: Optional[int], max_messages: int, metrics_file: Optional[str],
         prometheus_port: Optional[int], task_index: int, total_tasks: int,
         status_port: Optional[int], spark_ui: bool, no_imports: bool,
         take_over: bool, new_id: bool) -> "RunSummary":
    """The run of ``run``: load, check, build the pipeline, run it."""
    from storm_kafka_compat.engine.driver import Pipeline, RunOptions
    from storm_kafka_compat.engine.shipping import resolve
    from storm_kafka_compat.engine.spark import is_local, prepare_environment
    from storm_kafka_compat.config.objects import check_references

    job = load_config(config_path)
    base_dir = os.path.dirname(os.path.abspath(config_path))
    if task_index >= total_tasks:
        raise click.UsageError(f"--task-index {task_index} must be below --total-tasks "
                               f"{total_tasks} (indexes start at 0)")
    prepare_environment((base_dir,), local=is_local(job.spark))
    if job.spark.py_files:       # relative to the CONFIG file
        import dataclasses
        job = dataclasses.replace(job, spark=dataclasses.replace(
            job.spark, py_files=tuple(resolve(job.spark.py_files, base_dir))))
    if not no_imports:
        # a bolt or scheme that cannot be imported is a configuration error, said
        # before anything starts (as `config check` says it), not a task failure
        # once Spark runs
        check_references(job, (base_dir, os.getcwd(), *job.spark.py_files))
    # the spout task this application is: partitions L[task_index::total_tasks]; the
    # runtime picks the spout (kafkaSpout.offsetStore: kafka -> consumer-group commits)
    # and the pipeline its runner (dataframe: -> the DataFrame mode)
    extra: Dict[str, Any] = {"task_index": task_index, "total_tasks": total_tasks,
                             "take_over": take_over, "new_id": new_id}
    if spark_ui:
        import dataclasses
        job = dataclasses.replace(job, spark=dataclasses.replace(
            job.spark, conf={**dict(job.spark.conf), "spark.ui.enabled": "true"}))
    from storm_kafka_compat.engine.spark import under_spark_submit
    if under_spark_submit():
        err(f"driver pid {os.getpid()}: SIGTERM or Ctrl-C to spark-submit, or SIGTERM to this "
            "pid, finishes the batch in flight and commits")
    progress = ProgressPrinter()
    pipeline = Pipeline(job, progress=progress,
                        metrics=_metrics_sink(metrics_file, prometheus_port), **extra)
    server = None
    if status_port is not None:
        from storm_kafka_compat.engine.status import StatusServer
        server = StatusServer(status_port, lambda: pipeline.status)
        err(f"status: {server.url}")
    try:
        return pipeline.run(RunOptions(until_caught_up=until_caught_up, max_batches=max_batches,
                                       max_messages_per_partition=max_messages))
    finally:
        restore_signals()       # the summary is printed with the usual handlers
        progress.close()
        if server is not None:
            server.close()


@click.command()
@click.option("--messages", type=click.IntRange(min=1), default=2_000, show_default=True,
              help="Messages to produce across the topic's partitions.")
@click.option("--partitions", type=click.IntRange(min=1), default=4, show_default=True,
              help="Partitions of the demo topic; Storm's documents cover all but the last.")
@click.option("--keep", "keep_dir", type=click.Path(file_okay=False), default=None,
              help="Leave ZooKeeper and the broker running, with the job's CONFIG in this "
                   "(new or empty) directory, and print the commands to try against them.")
@click.option("--add-topic", "add_topic", default=None, metavar="NAME",
              help="With --keep DIR of a kept demo: create topic NAME on its broker (with "
                   "--partitions and --messages page views; a topic made otherwise is only "
                   "registered), register it in its ZooKeeper's broker registry so ZkHosts "
                   "sees it, and write DIR/NAME.yaml, the CONFIG that reads it.")
@click.option("--json", "as_json_flag", is_flag=True, help="Print the result as JSON.")
def demo(messages: int, partitions: int, keep_dir: Optional[str], add_topic: Optional[str],
         as_json_flag: bool) -> int:
    """Run the main job on embedded servers.

    Starts a real ZooKeeper (pyspark's jars) and the tansu Kafka-protocol broker on
    loopback, seeds a topic and the offsets a Storm topology would have left
    halfway through, runs the PySpark pipeline, which resumes from them, and
    prints what each partition did. With --keep the servers stay up afterwards.
    """
    from storm_kafka_compat.workshop.demo import next_steps, run_demo

    if add_topic is not None:
        return _add_topic(keep_dir, add_topic, partitions, messages, as_json_flag)
    result = run_demo(messages=messages, partitions=partitions, log=err, keep_dir=keep_dir)
    if as_json_flag:
        as_json(result)
    else:
        table(result["partitions"], ("PARTITION", "STORM-OFFSET", "DECISION", "RESUMED-FROM",
                                     "PROCESSED", "LOG-END", "COMMITTED", "OK"))
        err(result["verdict"])
    if "kept" in result:
        kept = result["kept"]
        err(f"\nthe servers keep running: ZooKeeper {kept['zookeeper']} (pid "
            f"{kept['zookeeper_pid']}), broker {kept['broker']} (pid {kept['broker_pid']}); "
            f"CONFIG {kept['config']}. Try:")
        for line in next_steps(kept):
            err(f"  {line}")
    return 0 if result["ok"] else 1


def _add_topic(keep_dir: Optional[str], topic: str, partitions: int, messages: int,
               as_json_flag: bool) -> int:
    """``demo --keep DIR --add-topic NAME``."""
    from storm_kafka_compat.workshop.demo import add_topic, command_name
    if keep_dir is None:
        raise click.UsageError("--add-topic needs --keep DIR, the directory of a kept demo")
    done = add_topic(keep_dir, topic, partitions=partitions, messages=messages)
    if as_json_flag:
        as_json(done)
        return 0
    made = (f"created on {done['broker']} with {done['partitions']} partitions and "
            f"{done['messages']} messages" if done["created"] else
            f"found on {done['broker']} with {done['partitions']} partitions (nothing produced)")
    err(f"topic {topic!r} {made}; registered at {done['registry']} in the demo's ZooKeeper, "
        f"so ZkHosts sees it; CONFIG {done['config']}. Try:")
    skc, config = command_name(), shlex.quote(done["config"])
    for line in (f"{skc} offsets explain {config}", f"{skc} run {config} --until-caught-up"):
        err(f"  {line}")
    return 0
