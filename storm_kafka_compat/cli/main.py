"""Entry point of ``storm-kafka-compat``.

Each command group lives in its own module and is added here. Commands return
data; ``render`` prints it. Exit codes: 0 success, 1 operational failure,
2 usage or configuration error. Diagnostics go to stderr.
"""

from __future__ import annotations

import importlib
import sys
from typing import Optional, Sequence

import click

from storm_kafka_compat import __version__
from storm_kafka_compat.errors import StormKafkaCompatError

#: (module, attribute) of each command or group, added when importable
_COMMANDS = (
    ("storm_kafka_compat.cli.config_cmd", "config"),
    ("storm_kafka_compat.cli.offsets_cmd", "offsets"),
    ("storm_kafka_compat.cli.migrate_cmd", "migrate"),
    ("storm_kafka_compat.cli.run_cmd", "run"),
    ("storm_kafka_compat.cli.run_cmd", "demo"),
    ("storm_kafka_compat.cli.bench_cmd", "bench"),
    ("storm_kafka_compat.cli.status_cmd", "status"),
    ("storm_kafka_compat.cli.ship_cmd", "ship"),
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="storm-kafka-compat",
                      message="%(prog)s %(version)s")
@click.option("-v", "--verbose", count=True,
              help="More diagnostics on stderr: -v our INFO lines and the libraries' "
                   "warnings, -vv everything at DEBUG.")
def cli(verbose: int) -> None:
    """Storm's KafkaSpout (storm-kafka, storm-kafka-client) on PySpark."""
    from storm_kafka_compat.cli.console import configure
    configure(verbose)


for _module, _attr in _COMMANDS:
    try:
        _mod = importlib.import_module(_module)
    except ModuleNotFoundError as exc:  # a command group not built yet
        if exc.name != _module:
            raise
        continue
    cli.add_command(getattr(_mod, _attr))


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the CLI; map project errors to ``Error: ...`` and their exit code. When
    spark-submit's JVM is shutting down (SIGTERM or Ctrl-C to it), the JVM ends with
    this exit code (engine.signals.exit_via_jvm)."""
    from storm_kafka_compat.engine.signals import exit_via_jvm
    status = _run(argv)
    exit_via_jvm(status)
    return status


def _run(argv: Optional[Sequence[str]]) -> int:
    from storm_kafka_compat.engine.signals import StopBeforeStart
    try:
        rv = cli.main(args=list(argv) if argv is not None else None, standalone_mode=False)
    except StopBeforeStart as stopped:      # a signal while a run was starting
        click.echo(f"stopped during start-up ({stopped.signal_name}): nothing was read or "
                   "committed", err=True)
        return 0
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 1
    except click.ClickException as exc:
        exc.show()
        return 2 if isinstance(exc, click.UsageError) else exc.exit_code
    except StormKafkaCompatError as exc:
        from storm_kafka_compat.cli.console import redacted
        click.echo(redacted(f"Error: {exc}"), err=True)
        return exc.exit_code
    except SystemExit as exc:  # commands may sys.exit(code)
        return int(exc.code or 0)
    except BrokenPipeError:
        # the reader of stdout or stderr went away (`... | head`, or a Ctrl-C that
        # ended the pipe's reader too): commands print after their work is done
        from storm_kafka_compat.cli.render import discard
        discard(sys.stdout)
        discard(sys.stderr)
        return 0
    # a command may return its exit code; click returns ctx.exit(code) codes too
    return rv if isinstance(rv, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
