"""``storm-kafka-compat status URL``: a running job's status (``run --status-port``)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import click

from storm_kafka_compat.cli.render import as_json, err, table
from storm_kafka_compat.errors import StormKafkaCompatError


@click.command()
@click.argument("url", metavar="URL")
@click.option("--json", "as_json_flag", is_flag=True, help="Print the status JSON as served.")
@click.option("--timeout", type=float, default=5.0, show_default=True,
              help="Seconds to wait for the job's answer.")
def status(url: str, as_json_flag: bool, timeout: float) -> int:
    """Lag, rate, pending and retries per partition of a running job.

    URL is what `run --status-port PORT` printed (http://127.0.0.1:PORT/status), or
    just PORT for a job on this host.
    """
    from storm_kafka_compat.engine.report import STATUS_COLUMNS, status_rows
    if url.isdigit():
        url = f"http://127.0.0.1:{url}/status"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            snapshot = json.loads(answer.read())
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise StormKafkaCompatError(
            f"no status from {url} ({exc}); is the job running with --status-port, and is "
            "this the port it printed?") from exc
    if as_json_flag:
        as_json(snapshot)
        return 0
    flight = snapshot.get("in_flight")
    if "partitions" not in snapshot:
        err("the job is starting: no progress interval has ended yet")
    else:
        table(list(status_rows(snapshot)), STATUS_COLUMNS)
        err(f"batches {snapshot['batches']}, messages {snapshot['messages']}, commits "
            f"{snapshot['commits']} ({snapshot['commit_failures']} failed), fetch failures "
            f"{snapshot['fetch_failures']}; rates over the last {snapshot['interval_s']} s")
    if flight is not None:
        err(f"batch {flight['batch']} in flight for {flight['running_s']} s over "
            f"{flight['partitions']} partition(s) ({flight['retries']} retries): its messages "
            "are not in PENDING until it comes back")
    since = snapshot.get("store_unreachable_since")
    if since is not None:
        import time
        err(f"ZooKeeper unreachable since {time.strftime('%H:%M:%S', time.localtime(since))}: "
            "commits fail and are retried every commit interval; processing goes on")
    return 0
