"""What every converter shares: the Java packages understood, Flux groupings, the
:class:`Conversion` result, Flux's ``${...}`` substitution and ``.properties`` loading.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

import javaproperties
import yaml

from storm_kafka_compat.config import (AUTH_KEYS, PLACEHOLDER_RE, TOPOLOGY_FIELDS,
                                       find_placeholders, placeholder_fix)
from storm_kafka_compat.config.traps import Evidence, Trap, TrapFacts, find_traps, workers_note
from storm_kafka_compat.errors import ConfigError


KAFKA_PACKAGES: Tuple[str, ...] = ("org.apache.storm.kafka.", "storm.kafka.")
#: packages of GlobalPartitionInformation
TRIDENT_PACKAGES: Tuple[str, ...] = ("org.apache.storm.kafka.trident.", "storm.kafka.trident.")
#: storm-core packages of the generic schemes (RawMultiScheme, SchemeAsMultiScheme, RawScheme)
CORE_SPOUT_PACKAGES: Tuple[str, ...] = ("org.apache.storm.spout.", "backtype.storm.spout.")

#: Flux grouping types (``grouping.type``) and the pipeline's grouping names (every
#: Storm grouping has one; a CUSTOM grouping's class is to be ported to Python).
GROUPINGS: Dict[str, str] = {
    "SHUFFLE": "shuffle", "LOCAL_OR_SHUFFLE": "local_or_shuffle", "NONE": "none",
    "FIELDS": "fields", "ALL": "all", "GLOBAL": "global", "PARTIAL_KEY": "partial_key",
    "DIRECT": "direct", "CUSTOM": "custom",
}
#: the name inputs use for the Kafka spout in ``topology.bolts`` (pipeline default)
SPOUT_NAME = "spout"


@dataclass
class Conversion:
    """The result of a conversion.

    Attributes
    ----------
    config : dict
        The CONFIG mapping (sections ``kafkaSpout``, ``spout``, ``hosts``,
        ``topology``, ``spark``, ``bolt``, ``kafka`` as found).
    unmapped : list of str
        One sentence per item that could not be carried over, for stderr.
    ported_schemes : list of str
        Scheme or record-translator classes of the topology that must be ported.
    evidence : dict
        CONFIG key -> :class:`~storm_kafka_compat.config.traps.Evidence` (Java sources:
        a value built from a random or time-based expression).
    """

    config: Dict[str, Any]
    unmapped: List[str] = field(default_factory=list)
    #: Java Scheme/translator classes written as Python placeholders
    ported_schemes: List[str] = field(default_factory=list)
    #: CONFIG key -> what the source code said about its value (Java sources)
    evidence: Dict[str, Evidence] = field(default_factory=dict)

    def traps(self) -> List[Trap]:
        """The migration traps of the converted CONFIG (:mod:`storm_kafka_compat.config.traps`)."""
        return find_traps(TrapFacts.from_mapping(self.config, self.evidence,
                                                 self.ported_schemes))

    def to_yaml(self) -> str:
        """The CONFIG as YAML text, sections in CONFIG order."""
        order = ("kafkaSpout", "spout", "hosts", "topology", "spark", "bolt", "kafka")
        ordered = {k: self.config[k] for k in order if k in self.config}
        ordered.update({k: v for k, v in self.config.items() if k not in ordered})
        return yaml.safe_dump(ordered, sort_keys=False, default_flow_style=False,
                              allow_unicode=True)


# --- Flux's text substitution ------------------------------------------------------


def substitute(text: str, properties: Optional[Mapping[str, str]] = None,
               env: Optional[Mapping[str, str]] = None) -> str:
    """Apply Flux's ``--filter``/``--env-filter`` substitution to raw YAML text.

    As Flux does, this is plain text replacement before YAML parsing: first every
    ``${key}`` whose key is in ``properties``, then every ``${ENV-NAME}`` whose
    ``NAME`` is in ``env``. Unknown placeholders are left as they are.
    """
    def repl_prop(m: "re.Match[str]") -> str:
        key = m.group(1)
        if properties is not None and key in properties:
            return str(properties[key])
        return m.group(0)

    def repl_env(m: "re.Match[str]") -> str:
        key = m.group(1)
        if env is not None and key.startswith("ENV-") and key[4:] in env:
            return str(env[key[4:]])
        return m.group(0)

    return PLACEHOLDER_RE.sub(repl_env, PLACEHOLDER_RE.sub(repl_prop, text))


def load_properties(text: str, *, source: str = "<properties>") -> Dict[str, str]:
    """Parse Java ``.properties`` text (escapes, continuations, ``\\uXXXX``)."""
    try:
        return dict(javaproperties.loads(text))
    except Exception as exc:  # javaproperties raises ValueError and friends
        raise ConfigError(f"{source} is not a valid .properties file: {exc}.",
                          value=source) from None


# --- the CONFIG a converter writes ----------------------------------------------------

#: the topology keys of a Storm config the CONFIG's ``topology`` section takes
_TOPOLOGY_KEY_NAMES = {s.storm_name for s in TOPOLOGY_FIELDS}


def place_bolts(config: Dict[str, Any], bolts: List[Dict[str, Any]]) -> None:
    """One bolt reading the spout becomes ``bolt``; several, ``topology.bolts``."""
    if len(bolts) == 1 and set(bolts[0]) <= {"name", "bolt", "parallelism"}:
        config["bolt"] = bolts[0]["bolt"]  # one bolt reading the spout: the simple form
    elif bolts:
        config.setdefault("topology", {})["bolts"] = bolts


def placeholders_left(config: Mapping[str, Any]) -> List[str]:
    """One line per ``${...}`` left in the CONFIG, with the flag that fills it."""
    return [f"{where}: placeholder {placeholder} was not substituted; "
            f"{placeholder_fix(placeholder)}." for where, placeholder in find_placeholders(config)]


def storm_config_into(conf: Any, topology: Dict[str, Any], unmapped: List[str]) -> None:
    """A Storm topology config's keys into the CONFIG's ``topology`` section; what has
    no equivalent here is added to ``unmapped``."""
    if not isinstance(conf, Mapping):
        unmapped.append(f"config: {conf!r} is not a mapping; not mapped.")
        return
    for key, value in conf.items():
        if key in _TOPOLOGY_KEY_NAMES or key in AUTH_KEYS:
            if key == "topology.name" and "name" in topology:
                if topology["name"] != value:
                    unmapped.append(f"config.topology.name {value!r} ignored: Flux uses the "
                                    f"top-level name {topology['name']!r}.")
                continue
            topology["name" if key == "topology.name" else key] = value
        elif key == "topology.workers":
            unmapped.append(workers_note(value))
        else:
            unmapped.append(f"config.{key} not mapped (no equivalent here).")
