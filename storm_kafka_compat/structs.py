"""Value types shared across the package. Pure.

:class:`TopicPartition` is the one key of a partition everywhere: discovery,
the spout's managers, the stores of a consumer group, the Structured Streaming
source's positions, the operator tools. It is a named tuple, so it equals (and
hashes as) the plain ``(topic, partition)`` pair.
"""

from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    """A partition of a topic."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}/{self.partition}"
