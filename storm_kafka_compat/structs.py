"""Value types shared across the package. Pure.

:class:`TopicPartition` is the one key of a partition everywhere: discovery,
the spout's managers, the stores of a consumer group, the Structured Streaming
source's positions, the operator tools. It is a named tuple, so it equals (and
hashes as) the plain ``(topic, partition)`` pair.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, replace
from typing import Dict, Iterable, List, NamedTuple, Optional, Tuple


class TopicPartition(NamedTuple):
    """A partition of a topic."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}/{self.partition}"


#: what a consumer group holds for a partition: the next offset and the commit metadata
Committed = Tuple[int, str]


def lag(log_end: Optional[int], offset: Optional[int]) -> Optional[int]:
    """The one definition of lag: the offsets from ``offset`` (a next offset to read) up
    to ``log_end`` (Kafka's next offset to write), None when either is unknown; negative
    when ``offset`` is beyond the log end (a re-created or truncated topic).

    Two lags are reported, each by this function, under its own name:

    * **lag** (``LAG``): from the *committed* offset, what a start now would read. It is
      what ``offsets show``, storm-kafka-monitor and kafka-consumer-groups call lag, and
      ``LAG`` in ``status`` and the progress line;
    * **spoutLag** (``SPOUT-LAG``): from the latest *completed* offset (every offset
      below it acked or given up), Storm's ``kafkaOffset`` metric. It is smaller by what
      is completed and not committed yet (at most one ``stateUpdateIntervalMs`` of work).
    """
    if log_end is None or offset is None:
        return None
    return log_end - offset


@dataclass
class BoltError:
    """A bolt's (or scheme's) exceptions of one kind in one task, as a value that
    crosses from a worker to the driver: how many, the first one's message and
    traceback, and the input it failed on (``topic``/``partition``/``offset`` of the
    tuple's Kafka message when known).
    """

    component: str
    kind: str
    message: str
    traceback: str = ""
    count: int = 1
    topic: Optional[str] = None
    partition: Optional[int] = None
    offset: Optional[int] = None

    @property
    def key(self) -> Tuple[str, str]:
        """What errors are grouped by: the bolt and the exception's type."""
        return (self.component, self.kind)

    def where(self) -> str:
        if self.topic is None:
            return "an input"
        return f"{self.topic}/{self.partition}@{self.offset}"

    def merged(self, other: "BoltError") -> "BoltError":
        """Both counts, this one's first example."""
        return replace(self, count=self.count + other.count)


def merge_errors(errors: Iterable[BoltError]) -> List[BoltError]:
    """Errors of one key folded into one (counts added, the first example kept)."""
    out: Dict[Tuple[str, str], BoltError] = {}
    for e in errors:
        held = out.get(e.key)
        out[e.key] = e if held is None else held.merged(e)
    return list(out.values())


class ErrorTally:
    """Exceptions counted by (component, type) where they happen (a bolt task, a
    scheme), the first of each kept whole; :meth:`take` hands them over."""

    __slots__ = ("errors",)

    def __init__(self) -> None:
        self.errors: Dict[Tuple[str, str], BoltError] = {}

    def record(self, component: str, exc: BaseException, topic: Optional[str] = None,
               partition: Optional[int] = None, offset: Optional[int] = None) -> None:
        key = (component, type(exc).__name__)
        held = self.errors.get(key)
        if held is not None:
            held.count += 1
            return
        self.errors[key] = BoltError(component, key[1], str(exc) or repr(exc),
                                     "".join(traceback.format_exception(exc)), 1,
                                     topic, partition, offset)

    def take(self) -> List[BoltError]:
        if not self.errors:
            return []
        out, self.errors = list(self.errors.values()), {}
        return out
