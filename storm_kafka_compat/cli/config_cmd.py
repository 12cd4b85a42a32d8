"""``storm-kafka-compat config``: validate CONFIG, convert Flux/.properties/Java into CONFIG.

``config check CONFIG [--json]`` prints the effective configuration (every
default filled in, secrets masked) on stdout and advice on stderr.
``config convert FILE...`` prints the CONFIG converted from a Storm Flux topology, a
``.properties`` file or Java topology sources (one CONFIG per KafkaSpout) on stdout
and names on stderr everything it could not carry over, and the migration traps
(:mod:`storm_kafka_compat.config.traps`) of the result; ``config check`` names the
traps too. Configuration errors raise :class:`ConfigError`, which the entry
point prints as ``Error: ...`` with exit code 2.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Tuple

import click
import yaml

from storm_kafka_compat.cli.console import load_config
from storm_kafka_compat.config import (JobConfig, config_warnings, effective_config,
                                       job_config_from_dict)
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.flux import Conversion, convert_file, load_properties
from storm_kafka_compat.flux.convert import FILE_FORMATS


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
    from storm_kafka_compat.config.kafka_settings import check_client_settings
    check_client_settings(job.kafka_settings)       # each key known to its client
    checked = [] if no_imports else check_references(
        job, (os.path.dirname(os.path.abspath(config_path)), os.getcwd()))
    if not no_imports and job.topology_spec is not None:
        _build_topology(job)
    click.echo(_render_effective(effective_config(job), as_json), nl=False)
    for note in config_warnings(job):
        click.echo(f"Note: {note}", err=True)
    from storm_kafka_compat.config.traps import TrapFacts, find_traps
    for trap in find_traps(TrapFacts.from_job(job)):
        click.echo(f"trap: {trap.message()}", err=True)
    if checked:
        click.echo(f"imported: {', '.join(ref for _, ref in checked)}", err=True)
    click.echo(f"{config_path}: valid", err=True)
    return 0


def _build_topology(job: JobConfig) -> None:
    """Build the bolt topology as ``run`` does, its groupings on the spout checked
    against the scheme's fields: a grouping, source, stream or field that is wrong is
    an error here (a TopologyError names it), not at ``run``'s start or its first batch."""
    from storm_kafka_compat.topology.schemes import load_scheme
    from storm_kafka_compat.topology.spec import from_spec
    assert job.topology_spec is not None
    from_spec(job.topology_spec, spout_fields=load_scheme(job.spout.scheme).fields)


@config.command("convert")
@click.argument("paths", metavar="FILE...", nargs=-1, required=True, type=click.Path())
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True),
              help="Write the CONFIG to this file instead of stdout.")
@click.option("--output-dir", type=click.Path(file_okay=False),
              help="Java sources: write one CONFIG per KafkaSpout into this directory "
                   "(<topology>-<spout>.yaml).")
@click.option("--filter", "filter_path", type=click.Path(dir_okay=False),
              help="A .properties file whose keys replace ${key} (Flux --filter); for Java, "
                   "the values the code reads at run time (kafka.topic=..., args.0=...).")
@click.option("--env-filter", is_flag=True,
              help="Replace ${ENV-NAME} from the environment (Flux --env-filter; Java's "
                   "System.getenv).")
@click.option("--format", "fmt",
              type=click.Choice(["auto", "java", *FILE_FORMATS]),
              default="auto", show_default=True,
              help="Input format (auto: .java files and directories are Java, .py a "
                   "streamparse Topology, YAML with a list under 'topology' Pyleus, else by "
                   "extension).")
def convert(paths: Tuple[str, ...], output: Optional[str], output_dir: Optional[str],
            filter_path: Optional[str], env_filter: bool, fmt: str) -> int:
    """Convert a Storm topology into CONFIG: a Flux file, a .properties file, Java
    sources (files or directories: one CONFIG per KafkaSpout found), a streamparse
    Topology class (topologies/NAME.py) or a Pyleus topology YAML.

    The CONFIG goes to stdout (or --output/--output-dir); what could not be mapped,
    such as Java bolts, which must be ported to Python, is listed on stderr, and so
    are the traps of the result (settings that would lose the topology's place).
    """
    env = dict(os.environ) if env_filter else None
    if fmt == "auto":
        paths = _skip_unread(paths)
    java = fmt == "java" or (fmt == "auto" and any(
        os.path.isdir(p) or p.endswith(".java") for p in paths))
    if java:
        from storm_kafka_compat.java import convert_java
        paired = [p for p in paths if p.endswith(".properties") and not os.path.isdir(p)]
        paths = tuple(p for p in paths if p not in paired)
        properties: Optional[Dict[str, str]] = None
        for path in paired + ([filter_path] if filter_path is not None else []):
            properties = dict(properties or {})     # --filter last: its values win
            properties.update(load_properties(_read_text(path), source=path))
            if path in paired:
                click.echo(f"convert: {path}: read as the values the Java code reads "
                           f"(as --filter {path}).", err=True)
        results: List[Conversion] = list(convert_java(paths, properties=properties, env=env))
    else:
        if len(paths) != 1:
            raise click.UsageError("give one Flux, .properties, streamparse or Pyleus file "
                                   "(several paths are for Java sources)")
        results = [convert_file(paths[0], filter_path=filter_path, env=env,
                                fmt=next((f for f in FILE_FORMATS if f == fmt), None))]
    if output is not None and len(results) > 1:
        raise click.UsageError(f"{len(results)} KafkaSpouts were found: use --output-dir DIR "
                               f"for one CONFIG each")
    failed = 0
    for i, result in enumerate(results):
        failed += _emit(result, paths, output, output_dir, first=i == 0,
                        several=len(results) > 1)
    return 2 if failed else 0


def _skip_unread(paths: Tuple[str, ...]) -> Tuple[str, ...]:
    """The paths that are not Scala, Clojure, ... sources; each of those is reported in
    one line, and an error (exit 2) when nothing else is left to convert."""
    from storm_kafka_compat.java.source import not_read, source_language
    languages = {p: None if os.path.isdir(p) else source_language(p) for p in paths}
    unread = [not_read(p, lang) for p, lang in languages.items() if lang is not None]
    rest = tuple(p for p in paths if languages[p] is None)
    if unread and not rest:
        raise ConfigError(" ".join(unread), value=", ".join(paths))
    for line in unread:
        click.echo(f"convert: {line}", err=True)
    return rest


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read filter file {path}: "
                          f"{getattr(exc, 'strerror', None) or exc}; check the path.",
                          value=path) from None


def _emit(result: Conversion, paths: Tuple[str, ...], output: Optional[str],
          output_dir: Optional[str], *, first: bool, several: bool) -> int:
    """Write one converted CONFIG and report it on stderr; 1 if it could not be converted."""
    source = getattr(result, "source", "") or os.path.basename(paths[0])
    label = f"{source}: " if several else ""
    error = getattr(result, "error", None)
    if error is not None:
        click.echo(f"Error: {source}: {error}", err=True)
        return 1
    text = f"# converted from {source} by storm-kafka-compat config convert\n" + \
        result.to_yaml()
    target = output
    if output_dir is not None:
        os.makedirs(output_dir, exist_ok=True)
        target = os.path.join(output_dir, f"{getattr(result, 'file_stem', 'topology')}.yaml")
    if target is not None:
        try:
            with open(target, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise click.FileError(target, hint=exc.strerror or str(exc)) from None
        click.echo(f"wrote {target}", err=True)
    else:
        click.echo(("" if first else "---\n") + text, nl=False)
    for item in result.unmapped:
        click.echo(f"convert: {label}{item}", err=True)
    for trap in result.traps():
        click.echo(f"trap: {label}{trap.message()}", err=True)
    try:
        job_config_from_dict(result.config)
    except ConfigError as exc:
        click.echo(f"Warning: {label}the converted CONFIG does not validate yet ({exc}); edit "
                   f"it, then run 'storm-kafka-compat config check'.", err=True)
    return 0
