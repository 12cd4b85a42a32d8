"""``storm-kafka-compat config``: validate CONFIG, convert Flux/.properties into CONFIG.

``config check CONFIG [--json]`` prints the effective configuration (every
default filled in, secrets masked) on stdout and advice on stderr.
``config convert FILE`` prints the CONFIG converted from a Storm Flux topology or
a Java ``.properties`` file on stdout and names on stderr everything it could
not carry over. Configuration errors raise :class:`ConfigError`, which the entry
point prints as ``Error: ...`` with exit code 2.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional

import click
import yaml

from storm_kafka_compat.cli.console import load_config
from storm_kafka_compat.config import config_warnings, effective_config, job_config_from_dict
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.flux import Conversion, convert_file


@click.group("config")
def config() -> None:
    """Validate CONFIG files; convert Storm Flux YAML or .properties into CONFIG."""


def _render_effective(effective: Dict[str, Any], as_json: bool) -> str:
    if as_json:
        return json.dumps(effective, indent=2) + "\n"
    return yaml.safe_dump(effective, sort_keys=False, default_flow_style=False,
                          allow_unicode=True)


@config.command("check")
@click.argument("config_path", metavar="CONFIG", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True,
              help="Print the effective config as one JSON document.")
@click.option("--no-imports", is_flag=True,
              help="Do not import the bolts and other objects the CONFIG names (when they "
                   "exist only where the job runs).")
def check(config_path: str, as_json: bool, no_imports: bool) -> int:
    """Validate CONFIG and print the effective configuration.

    Every SpoutConfig field is shown under its Storm name with its default
    filled in; secrets are shown as ***. Every bolt, scheme, retry manager and
    DataFrame function the CONFIG names is imported (the CONFIG's directory first
    on the path, as `run` has it). Exit code 2 on a configuration error.
    """
    import os

    from storm_kafka_compat.config.objects import check_references
    job = load_config(config_path)
    from storm_kafka_compat.kafka.settings import check_client_settings
    check_client_settings(job.kafka_settings)       # each key known to its client
    checked = [] if no_imports else check_references(
        job, (os.path.dirname(os.path.abspath(config_path)), os.getcwd()))
    click.echo(_render_effective(effective_config(job), as_json), nl=False)
    for note in config_warnings(job):
        click.echo(f"Note: {note}", err=True)
    if checked:
        click.echo(f"imported: {', '.join(ref for _, ref in checked)}", err=True)
    click.echo(f"{config_path}: valid", err=True)
    return 0


@config.command("convert")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True),
              help="Write the CONFIG to this file instead of stdout.")
@click.option("--filter", "filter_path", type=click.Path(dir_okay=False),
              help="A .properties file whose keys replace ${key} in a Flux file "
                   "(Flux --filter).")
@click.option("--env-filter", is_flag=True,
              help="Replace ${ENV-NAME} in a Flux file from the environment (Flux --env-filter).")
@click.option("--format", "fmt", type=click.Choice(["auto", "flux", "properties"]),
              default="auto", show_default=True, help="Input format (auto: by extension).")
def convert(file: str, output: Optional[str], filter_path: Optional[str], env_filter: bool,
            fmt: str) -> int:
    """Convert a Storm Flux topology or a .properties file into CONFIG.

    The CONFIG goes to stdout (or --output); what could not be mapped, such as
    Java bolts, which must be ported to Python, is listed on stderr.
    """
    result: Conversion = convert_file(
        file, filter_path=filter_path, env=dict(os.environ) if env_filter else None,
        fmt=None if fmt == "auto" else fmt)
    text = f"# converted from {os.path.basename(file)} by storm-kafka-compat config convert\n" \
        + result.to_yaml()
    if output is not None:
        try:
            with open(output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise click.FileError(output, hint=exc.strerror or str(exc)) from None
        click.echo(f"wrote {output}", err=True)
    else:
        click.echo(text, nl=False)
    for item in result.unmapped:
        click.echo(f"convert: {item}", err=True)
    try:
        job_config_from_dict(result.config)
    except ConfigError as exc:
        click.echo(f"Warning: the converted CONFIG does not validate yet ({exc}); edit it, "
                   f"then run 'storm-kafka-compat config check'.", err=True)
    return 0
