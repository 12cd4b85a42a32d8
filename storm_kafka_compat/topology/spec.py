"""The CONFIG form of a topology (``topology.bolts``, read into a
:class:`~storm_kafka_compat.config.topology_spec.TopologySpec`) built with
:class:`~storm_kafka_compat.topology.builder.TopologyBuilder`: each entry's bolt (a
``module:callable``, a multilang ``shell`` command or a Storm class the pipeline
provides) and its inputs, checked with the key that is wrong."""

from __future__ import annotations

import functools
from typing import Any, Mapping, Optional, Union

from storm_kafka_compat.config.objects import load_object
from storm_kafka_compat.config.topology_spec import (DEFAULT_SPOUT, BoltEntry, TopologySpec,
                                                     topology_spec_from_dict)
from storm_kafka_compat.topology.bolts import OutputFields
from storm_kafka_compat.topology.builder import Topology, TopologyBuilder

__all__ = ["from_spec"]


def from_spec(spec: Union[TopologySpec, Mapping[str, Any]], *, spout_name: str = DEFAULT_SPOUT,
              spout_fields: Optional[OutputFields] = None) -> Topology:
    """Build a topology from its CONFIG form (the form is in
    :mod:`storm_kafka_compat.config.topology_spec`).

    Parameters
    ----------
    spec : TopologySpec, or its mapping ``{"bolts": [...]}``
        The ``topology`` bolts of the CONFIG (a mapping is read first).
    spout_name : str
        Name the inputs use for the Kafka spout.
    spout_fields : sequence of str or mapping, optional
        The scheme's fields (mapping stream -> fields with ``outputStreamId``).
        None: bound later from the scheme by the pipeline (``process_batch``),
        which then checks the groupings on the spout.

    Raises
    ------
    TopologyError
        Unknown keys, kinds or groupings, and everything :meth:`TopologyBuilder.build` checks.
    """
    if not isinstance(spec, TopologySpec):
        spec = topology_spec_from_dict(spec)
    builder = TopologyBuilder().set_spout(spout_name, spout_fields)
    for entry in spec.bolts:
        _add_bolt(builder, entry, spout_name)
    return builder.build()


def _add_bolt(builder: TopologyBuilder, b: BoltEntry, spout_name: str) -> None:
    """One ``bolts`` entry: the bolt, then its inputs (a shuffle from the spout when
    none are given)."""
    key = f"bolts.{b.name}"
    factory = (_shell_bolt(b) if b.shell is not None else _storm_bolt(b)
               or load_object(str(b.bolt), key=f"{key}.bolt"))
    declarer = builder.set_bolt(b.name, factory, b.parallelism, kind=b.kind,
                                output_fields=b.output_fields)
    if b.tick_freq_secs is not None:
        declarer.tick_freq_secs(b.tick_freq_secs)
    for inp in b.subscriptions(spout_name):
        declarer.grouping(inp.grouping, inp.source, fields=inp.fields, stream=inp.stream,
                          custom=inp.custom)


def _shell_bolt(entry: BoltEntry) -> Any:
    """A factory for a multilang bolt (Storm's ``ShellBolt``): ``shell`` is its command,
    ``resources`` the directory it runs in, ``output_fields`` what its Java class declared."""
    from storm_kafka_compat.topology.compat.shell import shell_bolt_factory
    assert entry.shell is not None
    return shell_bolt_factory(list(entry.shell), entry.output_fields or (), entry.resources)


def _storm_bolt(entry: BoltEntry) -> Any:
    """A factory for a bolt named by its Storm class (``KafkaBolt``), else None."""
    from storm_kafka_compat.topology.kafka_bolt import kafka_bolt_from_properties
    if not entry.storm_class:
        return None
    props = dict(entry.properties or {})
    kafka_bolt_from_properties(props, name=entry.name)  # check now, fail at config time
    return functools.partial(kafka_bolt_from_properties, props, name=entry.name)
