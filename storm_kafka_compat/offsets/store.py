"""The offset-store protocol: read many, write many, close.

Two stores keep a spout's positions and implement it:

* :class:`~storm_kafka_compat.offsets.zkstore.ZkStateStore` -- storm-kafka's JSON
  documents in ZooKeeper, keyed by path (``bytes`` in, parsed
  :class:`~storm_kafka_compat.offsets.document.StoredDocument` out);
* :class:`~storm_kafka_compat.kafka.groups.KafkaGroupOffsets` -- a Kafka
  consumer group's commits, keyed by ``(topic, partition)``, valued
  ``(next offset, metadata)``.

``write_many`` returns the round trips it took; both raise a
:class:`~storm_kafka_compat.errors.StormKafkaCompatError` on failure and then
have written nothing the caller may count on. The in-memory doubles in
:mod:`storm_kafka_compat.testing` implement the same protocol.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, Mapping, Optional, Protocol, runtime_checkable


@runtime_checkable
class OffsetStore(Protocol):
    """Positions by key, read and written in batches."""

    def read_many(self, keys: Iterable[Any]) -> Dict[Any, Optional[Any]]:
        """What is stored for each key (None where nothing is)."""

    def write_many(self, items: Mapping[Any, Any]) -> int:
        """Store every item; return the round trips taken."""

    def close(self) -> None:
        """Release the connection; idempotent."""
