"""The offset-store protocols: read many, write many, close.

Two stores keep a spout's positions:

* :class:`DocumentStore` -- storm-kafka's JSON documents in ZooKeeper, keyed by
  path (``bytes`` in, parsed :class:`~storm_kafka_compat.offsets.document.StoredDocument`
  out): :class:`~storm_kafka_compat.offsets.zkstore.ZkStateStore`, and
  :class:`~storm_kafka_compat.trident.store.TridentStateStore` for a topology moved
  from Trident;
* :class:`GroupStore` -- a Kafka consumer group's commits, keyed by
  :class:`~storm_kafka_compat.structs.TopicPartition`, valued ``(next offset,
  metadata)``: :class:`~storm_kafka_compat.kafka.groups.KafkaGroupOffsets`.

``write_many`` returns the round trips it took; both raise a
:class:`~storm_kafka_compat.errors.StormKafkaCompatError` on failure and then
have written nothing the caller may count on. The in-memory doubles in
:mod:`storm_kafka_compat.testing` implement the same protocols.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import (ContextManager, Dict, Iterable, List, Mapping, Optional, Protocol, Tuple,
                    TypeVar, runtime_checkable)

from storm_kafka_compat.offsets.document import StoredDocument
from storm_kafka_compat.structs import Committed, TopicPartition

K = TypeVar("K")
R = TypeVar("R")
W = TypeVar("W", contravariant=True)


@runtime_checkable
class OffsetStore(Protocol[K, R, W]):
    """Positions by key ``K``, read as ``R`` and written as ``W``, in batches."""

    def read_many(self, keys: Iterable[K], /) -> Dict[K, Optional[R]]:
        """What is stored for each key (None where nothing is)."""
        ...

    def write_many(self, items: Mapping[K, W], /) -> int:
        """Store every item; return the round trips taken."""
        ...

    def close(self) -> None:
        """Release the connection; idempotent."""
        ...


@runtime_checkable
class DocumentStore(OffsetStore[str, StoredDocument, bytes], Protocol):
    """storm-kafka's documents by ZooKeeper path."""

    def read(self, path: str, /) -> Optional[StoredDocument]:
        """The document at ``path``, parsed by Storm's rules; None when there is none."""
        ...

    def children(self, path: str, /) -> Optional[List[str]]:
        """The names under ``path``, sorted; None when ``path`` does not exist."""
        ...


@dataclass(frozen=True)
class NodeStat:
    """When a document was last written (epoch ms, ZooKeeper's clock) and how often
    (``version`` grows by one per write)."""

    mtime_ms: int
    version: int


@runtime_checkable
class SpoutListing(DocumentStore, Protocol):
    """A document store that lists the spouts under a zkRoot with their documents'
    write times (the operator tools, and the start-up check of a spout id that has no
    document while others do: :mod:`storm_kafka_compat.offsets.spout_ids`)."""

    def read_many_stat(self, paths: Iterable[str], /
                       ) -> Dict[str, Optional[Tuple[StoredDocument, NodeStat]]]:
        """:meth:`read_many`, with each node's last-modified time and version."""
        ...

    def spout_document_paths(self, zk_root: str, spout_id: str, wildcard: bool, /
                             ) -> List[str]:
        """The paths of one spout's documents
        (:func:`~storm_kafka_compat.offsets.paths.spout_document_paths`)."""
        ...


@runtime_checkable
class OwnerRecords(DocumentStore, Protocol):
    """A document store that keeps a job's ownership record
    (:mod:`storm_kafka_compat.offsets.ownership`): a node that lives as long as the
    job's session."""

    def create_ephemeral(self, path: str, data: bytes, /) -> bool:
        """Create ``path`` (parents as needed) holding ``data``, removed when this
        store's session ends; False when the node exists already."""
        ...

    def delete(self, path: str, /) -> bool:
        """Delete ``path``; False when it did not exist."""
        ...


@runtime_checkable
class BoundedStore(Protocol):
    """A store whose requests can be bounded for a while: the periodic commit must not
    stall the loop while the store is away (the final commit waits as long as the
    store's retry policy says)."""

    #: since when (epoch s) the store has not answered, None while it answers
    unreachable_since: Optional[float]

    def bounded(self, wait_s: float, /) -> ContextManager[None]:
        """Within the block: one attempt per request, at most ``wait_s`` each, and no
        wait at all for a store already known to be away."""
        ...




@runtime_checkable
class GroupStore(OffsetStore[TopicPartition, Committed, Committed], Protocol):
    """A Kafka consumer group's commits by partition."""

    def active_members(self) -> List[str]:
        """The member ids of the group's live consumers (their offsets are theirs)."""
        ...
