"""One bolt instance per task from what a topology was given: a bolt class or instance,
a streamparse (pystorm) bolt class (:mod:`storm_kafka_compat.topology.compat.streamparse`), a
zero-argument factory or a simple-bolt function. It stands above the bolt model
(:mod:`.bolts`) and the adapters to it, which know nothing of each other's factories."""

from __future__ import annotations

import copy
import inspect
import sys
from typing import Any, Optional

from storm_kafka_compat.topology.compat.streamparse import StreamparseBolt, is_pystorm_bolt
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.config.topology_spec import BOLT_KINDS
from storm_kafka_compat.topology.bolts import (BasicBolt, OutputFields, RichBolt,
                                               SimpleBolt, bolt_kind)

__all__ = ["instantiate_bolt"]


def instantiate_bolt(factory: Any, kind: Optional[str] = None, *, name: str = "bolt",
                     fields: Optional[OutputFields] = None) -> Any:
    """One bolt instance (a new one per task) from what the topology was given.

    ``factory`` may be a :class:`BasicBolt`/:class:`RichBolt` subclass, an
    instance of one (deep-copied per task), a streamparse/pystorm ``Bolt`` subclass
    (run as it is, :mod:`storm_kafka_compat.topology.compat.streamparse`), a zero-argument
    factory, or, for
    ``kind="simple"`` (the default for plain functions), the simple-bolt callable.
    """
    if kind is not None and kind not in BOLT_KINDS:
        raise ConfigError(f"bolt {name!r}: kind {kind!r} is not one of {', '.join(BOLT_KINDS)}",
                          key=f"bolts.{name}.kind", value=kind, allowed=BOLT_KINDS)
    if isinstance(factory, (BasicBolt, RichBolt)):
        return copy.deepcopy(factory)
    if _pystorm_loaded():
        if is_pystorm_bolt(factory):  # streamparse's Bolt, run as it is (a rich bolt)
            if kind not in (None, "rich"):
                raise ConfigError(f"bolt {name!r}: {factory.__name__} is a streamparse "
                                  f"(pystorm) bolt, run as a rich bolt; drop kind: {kind}",
                                  key=f"bolts.{name}.kind", value=kind, allowed=("rich",))
            return StreamparseBolt(factory)
    if kind == "simple" and inspect.isclass(factory) and issubclass(factory, (BasicBolt, RichBolt)):
        real = "rich" if issubclass(factory, RichBolt) else "basic"
        raise ConfigError(f"bolt {name!r}: {factory.__name__} is a {real} bolt class, not a "
                          f"simple-bolt function; set kind: {real}",
                          key=f"bolts.{name}.kind", value=kind, allowed=BOLT_KINDS)
    if kind == "simple" or (kind is None and not inspect.isclass(factory)
                            and not _is_zero_arg(factory)):
        if not callable(factory):
            raise ConfigError(f"bolt {name!r}: {factory!r} is not callable",
                              key=f"bolts.{name}.bolt", value=repr(factory))
        return SimpleBolt(factory, fields)
    bolt = factory()
    if bolt_kind(bolt) is None:
        raise ConfigError(
            f"bolt {name!r}: {factory!r} gave {bolt!r}, which is neither a basic bolt "
            f"(execute(tuple, collector)) nor a rich bolt (prepare(conf, context, collector), "
            f"execute(tuple)); subclass BasicBolt or RichBolt",
            key=f"bolts.{name}.bolt", value=repr(factory))
    return bolt


def _pystorm_loaded() -> bool:
    """A pystorm (streamparse) bolt can only be given once its module was imported."""
    return "pystorm.bolt" in sys.modules


def _is_zero_arg(obj: Any) -> bool:
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return False
    return not any(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                   for p in params)
