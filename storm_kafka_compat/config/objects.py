"""References to Python objects in a CONFIG: ``package.module:name``.

:func:`load_object` is the one loader: schemes, bolts, retry managers, KafkaBolt
mappers and DataFrame functions are all named this way, and a bad reference
fails with the key it came from and the fix.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, List, Sequence, Tuple

from storm_kafka_compat.config.model import JobConfig
from storm_kafka_compat.errors import ConfigError

__all__ = ["load_object"]


def load_object(path: str, *, key: str) -> Any:
    """Import ``module:attribute`` (``module:Class.attr`` allowed) and return the attribute.

    Parameters
    ----------
    path : str
        ``package.module:name``.
    key : str
        The configuration key the path came from, named in errors.

    Raises
    ------
    ConfigError
        When the path has no ``:``, the module cannot be imported or the name is missing.
    """
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(
            f"{key}={path!r} is not of the form 'package.module:callable'; "
            f"write the module path, a colon, then the name",
            key=key, value=path)
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"{key}={path!r}: module {module_name!r} cannot be imported ({exc}); "
            f"check the name and that it is installed on the driver and the executors",
            key=key, value=path) from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise ConfigError(
                f"{key}={path!r}: module {module_name!r} has no attribute {attr!r}; "
                f"check the name after the colon", key=key, value=path) from exc
    return obj


def referenced_objects(job: JobConfig) -> List[Tuple[str, str]]:
    """``(key, package.module:name)`` of every Python object ``job`` names: the bolt,
    the topology's bolts (Storm's KafkaBolt classes excepted: the pipeline provides
    them), the DataFrame function, a scheme and a retry manager of one's own."""
    out: List[Tuple[str, str]] = []
    if job.bolt:
        out.append(("bolt", job.bolt))
    bolts = job.topology_spec.bolts if job.topology_spec is not None else ()
    for i, bolt in enumerate(bolts):
        if bolt.bolt is not None and not bolt.storm_class:
            out.append((f"topology.bolts[{i}].bolt", bolt.bolt))
    if job.dataframe:
        out.append(("dataframe", job.dataframe))
    if ":" in job.spout.scheme:
        out.append(("spout.scheme", job.spout.scheme))
    if ":" in job.spout.failed_msg_retry_manager_class:
        out.append(("spout.failedMsgRetryManagerClass",
                    job.spout.failed_msg_retry_manager_class))
    return out


def check_references(job: JobConfig, search_path: Sequence[str] = ()) -> List[Tuple[str, str]]:
    """Import every object ``job`` names (with ``search_path`` first on the import
    path, as ``run`` puts the CONFIG's directory there) and return what was checked.

    Raises
    ------
    ConfigError
        The first reference that does not import, naming its key.
    """
    refs = referenced_objects(job)
    added = [p for p in search_path if p not in sys.path]
    sys.path[:0] = added
    try:
        for key, ref in refs:
            load_object(ref, key=key)
    finally:
        for p in added:
            sys.path.remove(p)
    return refs
