"""The spout ids under a zkRoot, and the one sentence for an id that finds no document
while other ids hold offsets of its topic.

A Storm topology's spout writes ``zkRoot/id/partition_N``; a CONFIG whose ``id`` differs
(a typo, or Storm's random id when ``id`` was left to ``UUID.randomUUID()``) finds
nothing there and starts every partition at ``startOffsetTime``: with EARLIEST a full
replay. :func:`ids_under_root` lists what is there; :func:`other_ids_problem` is the
sentence both ``migrate plan`` (its verdict) and ``run`` (its refusal to start, unless
``--new-id``) say, naming each id, its offsets and when it was last written.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from storm_kafka_compat.discovery.registry import java_full_match
from storm_kafka_compat.offsets.store import SpoutListing

#: ids described in the sentence (the rest are counted)
SHOWN_IDS = 3


@dataclass(frozen=True)
class SpoutIdDocuments:
    """The documents of one spout id under a zkRoot: offsets by path (next offsets to
    read), the topology ids and topics they name, and when the newest was written
    (epoch ms, ZooKeeper's clock)."""

    spout_id: str
    offsets: Dict[str, Optional[int]]
    topology_ids: Tuple[str, ...]
    modified_ms: int
    topics: Tuple[str, ...] = ()

    def as_dict(self) -> Dict[str, Any]:
        return {"id": self.spout_id, "offsets": self.offsets,
                "topology_ids": list(self.topology_ids), "topics": list(self.topics),
                "modified_ms": self.modified_ms}

    def describe(self) -> str:
        """``'spout1' (partition_0: 15, partition_1: 16; last written 2024-05-01 10:00:00Z)``."""
        marker = f"/{self.spout_id}/"
        offsets = ", ".join(f"{path.split(marker, 1)[-1]}: {offset}"
                            for path, offset in self.offsets.items())
        return f"{self.spout_id!r} ({offsets}; last written {written_at(self.modified_ms)})"


def written_at(modified_ms: int) -> str:
    """A ZooKeeper mtime (epoch ms) as ``2024-05-01 10:00:00Z``."""
    return datetime.datetime.fromtimestamp(
        modified_ms / 1000, tz=datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


def ids_under_root(store: SpoutListing, zk_root: str, *,
                   wildcard: bool = False) -> List[SpoutIdDocuments]:
    """Every spout id with documents under ``zk_root``, the most recently written first.

    Parameters
    ----------
    store : SpoutListing
    zk_root : str
    wildcard : bool
        The wildcard layout (``zkRoot/id/<topic>/partition_N``).
    """
    root = zk_root or "/"
    out = []
    for spout_id in store.children(root) or []:
        paths = store.spout_document_paths(zk_root, spout_id, wildcard)
        found = {p: v for p, v in store.read_many_stat(paths).items() if v is not None}
        if not found:
            continue
        ids = sorted({doc.topology_id for doc, _ in found.values() if doc.topology_id})
        topics = sorted({t for doc, _ in found.values() if (t := _topic(doc.parsed))})
        out.append(SpoutIdDocuments(spout_id, {p: doc.offset for p, (doc, _) in found.items()},
                                    tuple(ids), max(s.mtime_ms for _, s in found.values()),
                                    tuple(topics)))
    return sorted(out, key=lambda d: -d.modified_ms)


def _topic(parsed: Any) -> Optional[str]:
    topic = parsed.get("topic") if isinstance(parsed, dict) else None
    return topic if isinstance(topic, str) else None


def topic_matcher(topic: str, wildcard: bool) -> Callable[[str], bool]:
    """Whether a topic name is the spout's ``topic`` (a Java regex, fully matched, in
    wildcard mode)."""
    if wildcard:
        return lambda name: java_full_match(topic, name)
    return lambda name: name == topic


def holding(found: Sequence[SpoutIdDocuments],
            matches: Callable[[str], bool]) -> List[SpoutIdDocuments]:
    """The ids of ``found`` whose documents hold offsets of a topic ``matches`` accepts
    (an id whose documents name no topic is kept: it may be the one). Another spout of
    the same topology, on another topic, shares a zkRoot harmlessly."""
    return [d for d in found if not d.topics or any(matches(t) for t in d.topics)]


def other_ids_problem(location: str, topic: str, others: Sequence[SpoutIdDocuments]) -> str:
    """The sentence for a spout id with no document at ``location`` while ``others``
    (newest first, :func:`holding` the job's topic) hold offsets of ``topic``."""
    shown = "; ".join(d.describe() for d in others[:SHOWN_IDS])
    more = f"; and {len(others) - SHOWN_IDS} more" if len(others) > SHOWN_IDS else ""
    newest = others[0].spout_id
    return (f"no document under {location}, but {len(others)} other id(s) under the root "
            f"hold offsets of topic {topic!r}: {shown}{more}; if the Storm topology used "
            f"{newest!r}, set spout.id: {newest}")
