"""``storm-kafka-compat ship``: what a Spark cluster's executors need."""

from __future__ import annotations

import click
import yaml

from storm_kafka_compat.cli.render import err


@click.command()
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True,
              help="Directory for executor-env.tar.gz (created when missing).")
def ship(out_dir: str) -> int:
    """Pack a virtual environment for the executors (venv-pack): this package and its
    executor-side dependencies at the driver's versions. Prints the spark.conf entries
    that make a CONFIG use it; the bolt modules go in spark.pyFiles.
    """
    from storm_kafka_compat.tools.ship import build, spark_settings
    archive = build(out_dir)
    err(f"packed {archive} ({archive.stat().st_size // 1024} KiB); add to the CONFIG:")
    click.echo(yaml.safe_dump({"spark": {"conf": spark_settings(archive)}}, sort_keys=False),
               nl=False)
    return 0
