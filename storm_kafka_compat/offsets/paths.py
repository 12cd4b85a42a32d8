"""The znode layout of storm-kafka's offset state (pure).

storm-kafka stores one document per partition at
``zkRoot + "/" + id + "/" + partition_id`` where ``partition_id`` is
``partition_<N>``, or ``<topic>/partition_<N>`` in wildcard mode
(``kafka.topic.wildcard.match=true``). The path is built by plain string
concatenation, so ``zkRoot = ""`` gives ``/id/partition_N`` and a ``zkRoot``
without a leading ``/`` gives a path ZooKeeper rejects; :func:`validate_zk_path`
reports such paths before any server is contacted.
"""

from __future__ import annotations

from typing import Callable, List, Optional, Tuple

from storm_kafka_compat.errors import ConfigError

#: prefix of a partition node name (``partition_<N>``)
PARTITION_PREFIX = "partition_"


def spout_root(zk_root: str, spout_id: str) -> str:
    """Return ``zkRoot/id``, the parent of every document of one spout.

    Parameters
    ----------
    zk_root : str
        The ``zkRoot`` field, used verbatim (``""`` is allowed).
    spout_id : str
        The ``id`` field.
    """
    return f"{zk_root}/{spout_id}"


def partition_node(partition: int) -> str:
    """Return the node name of a partition: ``partition_<N>`` (decimal, no padding)."""
    if isinstance(partition, bool) or not isinstance(partition, int):
        raise TypeError(f"partition must be an int, got {partition!r}")
    if partition < 0:
        raise ValueError(f"partition must be >= 0, got {partition}")
    return f"{PARTITION_PREFIX}{partition}"


def partition_path(zk_root: str, spout_id: str, partition: int,
                   topic: Optional[str] = None) -> str:
    """Return the znode path of one partition's offset document.

    Parameters
    ----------
    zk_root : str
        The ``zkRoot`` field, used verbatim like storm-kafka does.
    spout_id : str
        The ``id`` field.
    partition : int
        The partition number.
    topic : str, optional
        Given only in wildcard mode: the path then gains a topic segment,
        ``zkRoot/id/<topic>/partition_<N>``.

    Returns
    -------
    str
        The path; not validated (see :func:`validate_zk_path`).
    """
    node = partition_node(partition)
    root = spout_root(zk_root, spout_id)
    if topic is None:
        return f"{root}/{node}"
    return f"{root}/{topic}/{node}"


def document_path(zk_root: Optional[str], spout_id: Optional[str], partition: int,
                  topic: Optional[str] = None) -> str:
    """:func:`partition_path` of a CONFIG's ``spout.zkRoot`` and ``spout.id``.

    Raises
    ------
    ConfigError
        The CONFIG names no documents (a Kafka-store job without zkRoot/id).
    """
    if zk_root is None or spout_id is None:
        raise ConfigError("this CONFIG names no ZooKeeper documents: it keeps its offsets in "
                          "a Kafka consumer group; add spout.zkRoot and spout.id to read or "
                          "write documents (offsets migrate)", key="spout.zkRoot", value=None)
    return partition_path(zk_root, spout_id, partition, topic=topic)


def parse_partition_node(name: str) -> Optional[int]:
    """Return N for a node named ``partition_<N>``, else None.

    Only the canonical form storm-kafka writes is accepted: decimal digits with
    no sign and no leading zero (``partition_0``, ``partition_12``).
    """
    if not name.startswith(PARTITION_PREFIX):
        return None
    digits = name[len(PARTITION_PREFIX):]
    if not digits.isascii() or not digits.isdigit():
        return None
    if len(digits) > 1 and digits[0] == "0":
        return None
    return int(digits)


def _bad_char(ch: str) -> bool:
    # ZooKeeper's PathUtils.validatePath rejects these code points
    code = ord(ch)
    return (code == 0 or 0x01 <= code <= 0x1F or 0x7F <= code <= 0x9F
            or 0xD800 <= code <= 0xF8FF or 0xFFF0 <= code <= 0xFFFF)


def validate_zk_path(path: str) -> str:
    """Check a znode path against ZooKeeper's rules and return it unchanged.

    The rules: it starts with ``/``; it does not end with ``/`` (except the
    root ``/`` itself); no empty segment (``//``); no ``.`` or ``..`` segment;
    no NUL or other character ZooKeeper refuses (control characters,
    U+007F-U+009F, U+D800-U+F8FF, U+FFF0-U+FFFF).

    Raises
    ------
    ConfigError
        Naming the path, what is wrong and how to fix ``zkRoot``/``id``.
    """
    def fail(what: str) -> ConfigError:
        return ConfigError(
            f"ZooKeeper path {path!r} is invalid: {what}. Fix spout.zkRoot (it must be "
            f"empty or start with '/' and not end with '/') and spout.id (a non-empty "
            f"name without '.'/'..' segments or empty segments)",
            value=path)

    if not isinstance(path, str):
        raise ConfigError(f"ZooKeeper path must be a string, got {path!r}; "
                          f"set spout.zkRoot and spout.id to strings", value=path)
    if not path:
        raise fail("it is empty")
    if not path.startswith("/"):
        raise fail("it does not start with '/'")
    if path == "/":
        return path
    if path.endswith("/"):
        raise fail("it ends with '/'")
    for ch in path:
        if ch == "\x00":
            raise fail("it contains a NUL character")
        if _bad_char(ch):
            raise fail(f"it contains the character U+{ord(ch):04X}")
    for segment in path[1:].split("/"):
        if segment == "":
            raise fail("it has an empty segment ('//')")
        if segment in (".", ".."):
            raise fail(f"it has a {segment!r} segment")
    return path


def validate_zk_root(zk_root: str) -> str:
    """Check a ``zkRoot`` value: ``""`` or a valid absolute path other than ``/``.

    ``"/"`` itself is refused because storm-kafka would build ``//id/...``.

    Raises
    ------
    ConfigError
        Naming the value and the fix.
    """
    if zk_root == "":
        return zk_root
    if zk_root == "/":
        raise ConfigError("spout.zkRoot '/' would give paths starting with '//'; "
                          "use '' for the ZooKeeper root or a path such as '/kafka-offsets'",
                          key="spout.zkRoot", value=zk_root)
    try:
        validate_zk_path(zk_root)
    except ConfigError as exc:
        raise ConfigError(str(exc), key="spout.zkRoot", value=zk_root) from None
    return zk_root


def spout_document_paths(children: Callable[[str], Optional[List[str]]], zk_root: str,
                         spout_id: str, wildcard: bool) -> List[str]:
    """The paths of one spout's offset documents, ordered by topic then partition number.

    Parameters
    ----------
    children : callable(path) -> list of names, or None when ``path`` does not exist
        The store's listing.
    zk_root, spout_id : str
        ``zkRoot`` and ``id``.
    wildcard : bool
        True for the wildcard layout ``zkRoot/id/<topic>/partition_N``.

    Children that are not ``partition_<N>`` nodes of the chosen layout are skipped.
    """
    root = spout_root(zk_root, spout_id)
    validate_zk_path(root)
    found: List[Tuple[str, int, str]] = []
    names = children(root) or []
    if wildcard:
        for topic in names:
            if parse_partition_node(topic) is not None:
                continue
            for name in children(f"{root}/{topic}") or []:
                number = parse_partition_node(name)
                if number is not None:
                    found.append((topic, number, f"{root}/{topic}/{name}"))
    else:
        for name in names:
            number = parse_partition_node(name)
            if number is not None:
                found.append(("", number, f"{root}/{name}"))
    found.sort()
    return [path for _t, _n, path in found]
