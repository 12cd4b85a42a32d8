"""One exception root, one branch per failure domain.

Every error carries the data it is about as attributes (topic, partition,
zk_path, key, value) and a message that names the value and the fix.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional


class StormKafkaCompatError(Exception):
    """Root of every error raised by storm_kafka_compat."""

    #: process exit code the CLI uses for this error (1 operational, 2 usage/config)
    exit_code = 1


# --- configuration ---------------------------------------------------------

class ConfigError(StormKafkaCompatError):
    """A configuration key, type or value is wrong.

    Parameters
    ----------
    message : str
        Full sentence naming the value and the fix.
    key : str, optional
        The offending key, dotted for nested keys (``spout.zkRoot``).
    value : Any, optional
        The offending value.
    allowed : iterable of str, optional
        What would have been accepted.
    """

    exit_code = 2

    def __init__(self, message: str, *, key: Optional[str] = None, value: Any = None,
                 allowed: Optional[Iterable[str]] = None) -> None:
        super().__init__(message)
        self.key = key
        self.value = value
        self.allowed = tuple(allowed) if allowed is not None else None


# --- ZooKeeper state ---------------------------------------------------------

class StateError(StormKafkaCompatError):
    """A problem with the offset documents stored in ZooKeeper."""

    def __init__(self, message: str, *, zk_path: Optional[str] = None) -> None:
        super().__init__(message)
        self.zk_path = zk_path


class CorruptStateError(StateError):
    """A stored document cannot be used under Storm's rules.

    ``data`` holds the raw bytes, ``reason`` the rule it broke.
    """

    def __init__(self, message: str, *, zk_path: Optional[str] = None, data: bytes = b"",
                 reason: str = "") -> None:
        super().__init__(message, zk_path=zk_path)
        self.data = data
        self.reason = reason


class ZooKeeperUnavailableError(StateError):
    """ZooKeeper could not be reached within the configured retries."""

    def __init__(self, message: str, *, zk_path: Optional[str] = None,
                 hosts: Optional[str] = None) -> None:
        super().__init__(message, zk_path=zk_path)
        self.hosts = hosts


class ConcurrentWriterError(StateError):
    """Another writer changed a document this process owns."""


# --- Kafka access -------------------------------------------------------------

class KafkaAccessError(StormKafkaCompatError):
    """A problem talking to Kafka about one partition."""

    def __init__(self, message: str, *, topic: Optional[str] = None,
                 partition: Optional[int] = None, offset: Optional[int] = None) -> None:
        super().__init__(message)
        self.topic = topic
        self.partition = partition
        self.offset = offset


class OffsetOutOfRangeError(KafkaAccessError):
    """The broker answered OFFSET_OUT_OF_RANGE for a fetch (storm-kafka's
    ``TopicOffsetOutOfRangeException``)."""


class FailedFetchError(KafkaAccessError):
    """A retriable fetch failure (socket error, not leader, timeout); the
    coordinator refreshes and the fetch is retried (storm-kafka's
    ``FailedFetchException``)."""


# --- coordinators -------------------------------------------------------------

class CoordinatorError(StormKafkaCompatError):
    """Partition discovery failed."""

    def __init__(self, message: str, *, topic: Optional[str] = None,
                 partition: Optional[int] = None, zk_path: Optional[str] = None) -> None:
        super().__init__(message)
        self.topic = topic
        self.partition = partition
        self.zk_path = zk_path


class NoLeaderError(CoordinatorError):
    """A partition's state znode says ``leader: -1``."""


class BrokerRegistryError(CoordinatorError):
    """Kafka's broker registry in ZooKeeper is missing or malformed."""


# --- partition processing ---------------------------------------------------------

class TooManyFailuresError(StormKafkaCompatError):
    """Storm's "Too many tuple failures" guard: nothing acked and more failures
    than ``maxOffsetBehind``."""

    def __init__(self, message: str, *, topic: Optional[str] = None,
                 partition: Optional[int] = None) -> None:
        super().__init__(message)
        self.topic = topic
        self.partition = partition


# --- raised by users' bolts (Storm's names; not failures of this project) ----------------

class FailedException(Exception):
    """Raise from a basic (or simple) bolt to fail the input tuple (Storm's
    ``FailedException``); the Kafka message is replayed per the retry settings."""


class ReportedFailedException(FailedException):
    """Like :class:`FailedException`, and also reported (logged at WARNING)."""


# --- config and topology -------------------------------------------------------------------


class BatchEndError(Exception):
    """Raised by a bolt's ``finish_batch`` once it has failed the tuples concerned (a
    multilang script that exited, a streamparse ``process_batch`` that raised): the bolt
    task goes on and the error is counted on the driver, its cause as the kind."""


class TopologyError(ConfigError):
    """The topology is invalid: unknown source, stream or field, a cycle, a bad grouping."""


# --- offset state --------------------------------------------------------------------------


class OwnershipConflictError(ConcurrentWriterError):
    """Another job wrote a document this job owns (same ``zkRoot``/``id``)."""


class OffsetManagerInvariantError(StormKafkaCompatError):
    """An ack below the committed offset reached the OffsetManager (Storm's
    ``IllegalStateException`` bug guard): the spout's bookkeeping is broken."""


# --- Kafka ---------------------------------------------------------------------------------


class NoOffsetResetError(KafkaAccessError):
    """The committed offset is outside the log and ``auto.offset.reset`` is
    ``none`` (Kafka's ``NoOffsetForPartitionException``)."""


class DataLossError(StormKafkaCompatError):
    """Offsets planned for a batch are no longer in Kafka and ``failOnDataLoss`` is true."""


class GroupAccessError(KafkaAccessError):
    """Reading or writing a Kafka consumer group's offsets failed.

    ``group_id`` names the group.
    """

    def __init__(self, message: str, *, group_id: Optional[str] = None,
                 topic: Optional[str] = None, partition: Optional[int] = None,
                 offset: Optional[int] = None) -> None:
        super().__init__(message, topic=topic, partition=partition, offset=offset)
        self.group_id = group_id


class ActiveGroupError(GroupAccessError):
    """The group has live members; its offsets are theirs to commit.

    ``members`` lists their member ids.
    """

    def __init__(self, message: str, *, group_id: Optional[str] = None,
                 members: Iterable[str] = ()) -> None:
        super().__init__(message, group_id=group_id)
        self.members = tuple(members)


# --- the job -------------------------------------------------------------------------------


class PipelineError(StormKafkaCompatError):
    """The pipeline cannot go on (e.g. the bolt fails to load on every try)."""


# --- operator tools ------------------------------------------------------------------------


class ResetRefusedError(StormKafkaCompatError):
    """``--execute`` on a plan that refuses some partitions: nothing was written."""


# --- embedded servers (demo, bench, tests) -------------------------------------------------


class EmbeddedServerError(StormKafkaCompatError):
    """An embedded test server (ZooKeeper) could not be started or stopped."""


class KafkaUnavailableError(EmbeddedServerError):
    """npm, Java or the Kafka package is missing, or a broker did not start."""


class BrokerUnavailableError(StormKafkaCompatError):
    """The embedded Kafka-protocol broker's binary is missing or it did not start."""
