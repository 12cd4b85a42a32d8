"""References to Python objects in a CONFIG: ``package.module:name``.

:func:`load_object` is the one loader: schemes, bolts, retry managers, KafkaBolt
mappers and DataFrame functions are all named this way, and a bad reference
fails with the key it came from and the fix.
"""

from __future__ import annotations

import importlib
from typing import Any

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
