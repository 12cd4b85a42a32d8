"""Test doubles for the Kafka offset store.

:class:`MemoryGroupOffsets` is an in-memory consumer group with
:class:`~storm_kafka_compat.kafka.groups.KafkaGroupOffsets`' interface.

:class:`MetadataKeepingGroups` wraps a real group adapter for brokers that drop
the commit metadata string (tansu 0.6 answers OffsetFetch with ``null``
metadata): offsets go to and come from the broker; the metadata of the last
commit this wrapper made for a partition is given back as long as the broker
still holds that very offset. It works around a broker defect in tests; it is
not for production.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Mapping, Optional

from storm_kafka_compat.offsets.store import GroupStore
from storm_kafka_compat.structs import Committed
from storm_kafka_compat.structs import TopicPartition


class MemoryGroupOffsets:
    """An in-memory consumer group's committed offsets.

    ``fail_next`` makes the next ``n`` commits raise ``error`` (for failure tests);
    ``commits`` records every commit made.
    """

    def __init__(self, offsets: Optional[Mapping[TopicPartition, Committed]] = None) -> None:
        self.offsets: Dict[TopicPartition, Committed] = dict(offsets or {})
        self.commits: List[Dict[TopicPartition, Committed]] = []
        self.fail_next = 0
        self.error: Exception = RuntimeError("commit refused")
        self.closed = False

    def read_many(self, partitions: Iterable[TopicPartition]
                  ) -> Dict[TopicPartition, Optional[Committed]]:
        return {TopicPartition(*k): self.offsets.get(k) for k in partitions}

    def write_many(self, offsets: Mapping[TopicPartition, Committed]) -> int:
        if self.fail_next:
            self.fail_next -= 1
            raise self.error
        self.commits.append(dict(offsets))
        self.offsets.update(offsets)
        return 1

    def active_members(self) -> List[str]:
        return []

    def close(self) -> None:
        self.closed = True


class MetadataKeepingGroups:
    """A group adapter that restores commit metadata the broker dropped."""

    def __init__(self, inner: GroupStore) -> None:
        self.inner = inner
        self._metadata: Dict[TopicPartition, Committed] = {}

    def read_many(self, partitions: Iterable[TopicPartition]
                  ) -> Dict[TopicPartition, Optional[Committed]]:
        out = self.inner.read_many(partitions)
        for key, found in out.items():
            mine = self._metadata.get(key)
            if found is not None and not found[1] and mine is not None and mine[0] == found[0]:
                out[key] = (found[0], mine[1])
        return out

    def write_many(self, offsets: Mapping[TopicPartition, Committed]) -> int:
        trips = self.inner.write_many(offsets)
        self._metadata.update(offsets)
        return trips

    def active_members(self) -> List[str]:
        return self.inner.active_members()

    def close(self) -> None:
        self.inner.close()
