"""Kafka consumer-group offsets, read and written without joining the group.

:class:`KafkaGroupOffsets` is the adapter the operator tools (``offsets
migrate``) and the storm-kafka-client engine use to read and write a group's
committed offsets. It speaks the admin protocol through kafka-python's
``KafkaAdminClient``:

=========================  ==========================================
operation                  Kafka request
=========================  ==========================================
:meth:`read_many`          OffsetFetch (``list_group_offsets``)
:meth:`commit`             OffsetCommit with generation -1 and no member id
                           (``alter_group_offsets``): no group join
:meth:`active_members`     DescribeGroups (``describe_groups``)
=========================  ==========================================

Every offset here is the next offset to read, as Kafka commits it.

Coordinator errors are retried: a group's first request on a cluster answers
``GROUP_COORDINATOR_NOT_AVAILABLE`` while Kafka creates ``__consumer_offsets``
(measured on Apache Kafka 0.9.0.1: the first ``offsets migrate --to-kafka-group``
failed, the next one worked), and ``NOT_COORDINATOR`` or
``COORDINATOR_LOAD_IN_PROGRESS`` while the coordinator moves or loads. Each
operation retries these (:func:`is_retriable_coordinator_error`) with a doubling
backoff until ``coordinator_timeout_ms`` has passed, forgetting the cached
coordinator before each new attempt; any other error fails at once.

Against Apache Kafka 0.9.0.1 (tests/integration/test_kafka09_groups.py), the
commit metadata string is kept and read back exactly.

Against Kafka-protocol brokers that are not Apache Kafka, measured (the test
broker of docs/testing.md):

* OffsetCommit and OffsetFetch work; **the commit metadata string is not
  kept** (OffsetFetch answers ``null``), so :meth:`read_many` reports ``""``;
* DescribeGroups answers authorized operations kafka-python 3.0 cannot
  decode (``ValueError: 15 is not a valid ACLOperation``); this adapter keeps
  the raw values instead of failing;
* an unknown group is described as ``Empty`` with no members, and an
  OffsetCommit to a group with a live member is refused per partition with
  ``UNKNOWN_MEMBER_ID``, as Apache Kafka does.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, TypeVar

from storm_kafka_compat.config.kafka_settings import BootstrapServers
from storm_kafka_compat.errors import ActiveGroupError, ConfigError, GroupAccessError
from storm_kafka_compat.structs import Committed, TopicPartition

log = logging.getLogger(__name__)

#: ``(offset, metadata)``: the committed next offset to read and its metadata string

#: how long the admin client may try to reach a bootstrap server (ms)
DEFAULT_BOOTSTRAP_TIMEOUT_MS = 10_000
#: per-request deadline when the kafka settings give none (ms)
DEFAULT_REQUEST_TIMEOUT_MS = 10_000
#: how long one operation keeps retrying coordinator errors (ms)
DEFAULT_COORDINATOR_TIMEOUT_MS = 30_000
#: first and largest pause between two attempts after a coordinator error (s)
COORDINATOR_BACKOFF_INITIAL_S = 0.2
COORDINATOR_BACKOFF_MAX_S = 2.0
#: Kafka error codes of a coordinator being elected, moved or loaded:
#: 14 COORDINATOR_LOAD_IN_PROGRESS (0.9: GROUP_LOAD_IN_PROGRESS),
#: 15 COORDINATOR_NOT_AVAILABLE (0.9: GROUP_COORDINATOR_NOT_AVAILABLE),
#: 16 NOT_COORDINATOR (0.9: NOT_COORDINATOR_FOR_GROUP)
RETRIABLE_COORDINATOR_ERRNOS = frozenset({14, 15, 16})
#: the same errors by the names kafka-python (3.x and 2.x) gives their classes
RETRIABLE_COORDINATOR_NAMES = ("CoordinatorLoadInProgress", "CoordinatorNotAvailable",
                               "NotCoordinator", "GroupLoadInProgress",
                               "GroupCoordinatorNotAvailable")
_T = TypeVar("_T")
#: consumer settings that make no sense for the admin client; silently dropped
#: when found in the job's ``kafka`` mapping (they tune fetching)
_IGNORED_CONSUMER_KEYS = ("group_id", "enable_auto_commit", "auto_offset_reset",
                          "key_deserializer", "value_deserializer")


def is_retriable_coordinator_error(error: Any) -> bool:
    """Whether ``error`` (a kafka-python error instance or class, or the text
    DescribeGroups reports) says the group's coordinator is not ready yet:
    retry after a pause, asking for the coordinator again."""
    if error is None:
        return False
    if isinstance(error, str):
        return any(name in error for name in RETRIABLE_COORDINATOR_NAMES)
    errno = getattr(error, "errno", None)
    if isinstance(errno, int) and errno in RETRIABLE_COORDINATOR_ERRNOS:
        return True
    name = error.__name__ if isinstance(error, type) else type(error).__name__
    return any(name.startswith(n) for n in RETRIABLE_COORDINATOR_NAMES)


class _CoordinatorNotReady(Exception):
    """A partition- or group-level coordinator error inside an answer (retried)."""


def admin_config(bootstrap_servers: BootstrapServers,
                 client_config: Mapping[str, Any] = {}) -> Dict[str, Any]:
    """``KafkaAdminClient`` settings from the job's ``kafka`` mapping.

    Keys the admin client knows (security: ``security_protocol``, ``ssl_*``,
    ``sasl_*``; ``client_id``, ``request_timeout_ms``, ...) are passed through;
    consumer-only fetch settings are dropped (logged at DEBUG).

    Raises
    ------
    ConfigError
        ``client_config`` sets ``bootstrap_servers`` (it comes from the hosts).
    """
    from kafka import KafkaAdminClient, KafkaConsumer
    cfg: Dict[str, Any] = {
        "bootstrap_servers": bootstrap_servers,
        "client_id": "storm-kafka-compat-admin",
        "bootstrap_timeout_ms": DEFAULT_BOOTSTRAP_TIMEOUT_MS,
        "request_timeout_ms": DEFAULT_REQUEST_TIMEOUT_MS,
    }
    for key, value in client_config.items():
        if key == "bootstrap_servers":
            raise ConfigError("kafka setting 'bootstrap_servers' comes from the hosts section; "
                              "remove it from the kafka mapping", key=f"kafka.{key}", value=value)
        if key in KafkaAdminClient.DEFAULT_CONFIG:
            cfg[key] = value
        elif key in _IGNORED_CONSUMER_KEYS or key in KafkaConsumer.DEFAULT_CONFIG:
            log.debug("kafka setting %r does not apply to the admin client; ignored", key)
        else:
            raise ConfigError(f"kafka setting {key!r} is neither a kafka-python KafkaConsumer "
                              "nor a KafkaAdminClient setting; see kafka-python's documentation",
                              key=f"kafka.{key}", value=value)
    return cfg


def _admin_class() -> Any:
    from kafka import KafkaAdminClient

    class _Admin(KafkaAdminClient):  # type: ignore[misc]
        """KafkaAdminClient that keeps authorized-operation codes it cannot
        decode (some brokers answer codes kafka-python 3.0 rejects)."""

        def _process_acl_operations(self, obj: Dict[str, Any]) -> Dict[str, Any]:
            try:
                processed: Dict[str, Any] = super()._process_acl_operations(obj)
                return processed
            except ValueError:
                return obj

    return _Admin


class KafkaGroupOffsets:
    """Committed offsets of one Kafka consumer group, without joining it.

    Parameters
    ----------
    bootstrap_servers : str or list of str
        ``host:port`` of one or more brokers.
    group_id : str
        The consumer group.
    client_config : mapping
        The job's ``kafka`` settings (security etc.; see :func:`admin_config`).
    coordinator_timeout_ms : int
        How long one operation retries coordinator errors before failing.
    sleep, clock : callable
        ``sleep(seconds)`` and a monotonic ``clock()`` in seconds (injected by tests).
    admin : object, optional
        A ``KafkaAdminClient``-like to use instead of building one (tests).

    Raises
    ------
    ConfigError
        ``group_id`` is empty or a setting is unknown.
    GroupAccessError
        No broker answered within the bootstrap timeout.

    Notes
    -----
    Offsets are the next offset to read. Secrets in ``client_config`` never
    appear in messages.
    """

    def __init__(self, bootstrap_servers: BootstrapServers, group_id: str,
                 client_config: Mapping[str, Any] = {}, *,
                 coordinator_timeout_ms: int = DEFAULT_COORDINATOR_TIMEOUT_MS,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic, admin: Any = None) -> None:
        if not isinstance(group_id, str) or not group_id:
            raise ConfigError(f"Kafka consumer group id {group_id!r} must be a non-empty "
                              "string; pass the group's name", key="group_id", value=group_id)
        self.group_id = group_id
        self.bootstrap_servers = bootstrap_servers
        self.config = admin_config(bootstrap_servers, client_config)
        self.coordinator_timeout_ms = coordinator_timeout_ms
        self._sleep = sleep
        self._clock = clock
        self._admin: Any = admin
        if admin is not None:
            return
        try:
            self._admin = _admin_class()(**self.config)
        except Exception as exc:  # noqa: BLE001 - mapped below
            raise self._error(exc, "connecting to the brokers") from exc

    # --- public API ---------------------------------------------------------------

    def read_many(self, partitions: Iterable[TopicPartition]
                  ) -> Dict[TopicPartition, Optional[Committed]]:
        """The group's committed offset of every partition.

        Parameters
        ----------
        partitions : iterable of (topic, partition)

        Returns
        -------
        dict
            ``(topic, partition) -> (offset, metadata)`` with ``offset`` the
            next offset to read, or ``None`` when the group has no commit for it.
        """
        from kafka import TopicPartition as KafkaTopicPartition
        keys = [TopicPartition(str(t), int(p)) for t, p in partitions]
        if not keys:
            return {}
        tps = [KafkaTopicPartition(t, p) for t, p in keys]
        answer = self._retrying("reading committed offsets", lambda: self._admin.list_group_offsets(
            {self.group_id: tps}).get(self.group_id, {}))
        out: Dict[TopicPartition, Optional[Committed]] = {}
        for key, tp in zip(keys, tps, strict=True):
            found = answer.get(tp)
            if found is None or found.offset is None or found.offset < 0:
                out[key] = None
            else:
                out[key] = (int(found.offset), found.metadata or "")
        return out

    def write_many(self, offsets: Mapping[TopicPartition, Committed]) -> int:
        """Commit explicit offsets with their metadata strings (one OffsetCommit;
        returns the round trips, 1, or 0 when there is nothing to commit).

        Parameters
        ----------
        offsets : mapping
            ``(topic, partition) -> (offset, metadata)``; ``offset`` is the
            next offset to read (>= 0).

        Raises
        ------
        ActiveGroupError
            The group has live members (their commits would fight ours).
        GroupAccessError
            An offset is negative, or the broker refused a partition (the
            message lists each partition and Kafka's error).
        """
        from kafka import TopicPartition as KafkaTopicPartition
        from kafka.structs import OffsetAndMetadata
        if not offsets:
            return 0
        for (t, p), (offset, _) in offsets.items():
            if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
                raise GroupAccessError(
                    f"offset {offset!r} for {t}/{p} cannot be committed to group "
                    f"{self.group_id!r}; give a next offset to read >= 0",
                    group_id=self.group_id, topic=t, partition=p)
        members = self.active_members()
        if members:
            raise ActiveGroupError(
                f"Kafka consumer group {self.group_id!r} has {len(members)} active member(s) "
                f"({', '.join(members[:3])}{', ...' if len(members) > 3 else ''}); stop its "
                "consumers before writing its offsets", group_id=self.group_id, members=members)
        request = {KafkaTopicPartition(t, int(p)): OffsetAndMetadata(int(o), str(m or ""), -1)
                   for (t, p), (o, m) in offsets.items()}

        def alter() -> Dict[Any, Any]:
            result: Dict[Any, Any] = self._admin.alter_group_offsets(self.group_id, request)
            # an OffsetCommit answers coordinator errors per partition
            retry = [(tp, err) for tp, err in result.items() if is_retriable_coordinator_error(err)]
            if retry:
                raise _CoordinatorNotReady(", ".join(
                    f"{tp.topic}/{tp.partition}: {err.__name__}" for tp, err in retry))
            return result

        result = self._retrying("committing offsets", alter)
        failed = [(tp, err) for tp, err in sorted(result.items(), key=lambda kv: tuple(kv[0]))
                  if err is not None and getattr(err, "errno", 0) != 0]
        if failed:
            detail = ", ".join(f"{tp.topic}/{tp.partition}: {err.__name__}" for tp, err in failed)
            hint = ("the group gained members; stop them and retry"
                    if any(err.__name__ in ("UnknownMemberIdError", "RebalanceInProgressError",
                                            "IllegalGenerationError") for _, err in failed)
                    else "check the topic, the partitions and the group ACLs")
            tp0 = failed[0][0]
            raise GroupAccessError(
                f"Kafka refused the offset commit of group {self.group_id!r} for {detail}; {hint}",
                group_id=self.group_id, topic=tp0.topic, partition=tp0.partition)
        log.info("committed %d offset(s) to Kafka group %r", len(request), self.group_id)
        return 1

    def active_members(self) -> List[str]:
        """Member ids of the group's live members (``[]`` when the group is
        empty, dead or unknown)."""

        def describe() -> Dict[str, Any]:
            found: Dict[str, Any] = self._admin.describe_groups([self.group_id]).get(
                self.group_id, {})
            if is_retriable_coordinator_error(found.get("error")):
                raise _CoordinatorNotReady(str(found["error"]))
            return found

        described = self._retrying("describing the group", describe)
        if described.get("error"):
            if "GroupIdNotFound" in str(described["error"]):
                return []
            raise GroupAccessError(
                f"describing Kafka consumer group {self.group_id!r} failed: "
                f"{described['error']}; check the group ACLs", group_id=self.group_id)
        if described.get("group_state") in ("Dead", "Empty") and not described.get("members"):
            return []
        return [str(m.get("member_id", "?")) for m in described.get("members") or ()]

    def close(self) -> None:
        """Close the admin client."""
        if self._admin is not None:
            try:
                self._admin.close()
            finally:
                self._admin = None

    def __enter__(self) -> "KafkaGroupOffsets":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- internals ------------------------------------------------------------

    def _retrying(self, what: str, call: Callable[[], _T]) -> _T:
        """``call()``, retried on coordinator errors until the deadline; any other
        error (or the last coordinator error) becomes a :class:`GroupAccessError`."""
        deadline = self._clock() + self.coordinator_timeout_ms / 1000.0
        delay = COORDINATOR_BACKOFF_INITIAL_S
        attempts = 0
        while True:
            attempts += 1
            try:
                return call()
            except Exception as exc:  # noqa: BLE001 - mapped below
                if not (isinstance(exc, _CoordinatorNotReady)
                        or is_retriable_coordinator_error(exc)):
                    raise self._error(exc, what) from exc
                if self._clock() + delay > deadline:
                    raise self._error(exc, what, attempts=attempts) from exc
                log.info("%s for Kafka consumer group %r: the coordinator is not ready (%s); "
                         "retrying in %.1f s", what, self.group_id, exc, delay)
                self._forget_coordinator()
                self._sleep(delay)
                delay = min(delay * 2, COORDINATOR_BACKOFF_MAX_S)

    def _forget_coordinator(self) -> None:
        """Drop kafka-python's cached coordinator of the group, so the next attempt
        asks FindCoordinator again (after NOT_COORDINATOR the cache is stale)."""
        cluster = getattr(getattr(self._admin, "_manager", None), "cluster", None)
        coordinators = getattr(cluster, "_coordinators", None)
        if isinstance(coordinators, dict):
            for key in [k for k in coordinators if isinstance(k, tuple) and len(k) == 2
                        and k[1] == self.group_id]:
                coordinators.pop(key, None)

    def _error(self, exc: BaseException, what: str, *,
               attempts: int = 0) -> GroupAccessError:
        if isinstance(exc, GroupAccessError):
            return exc
        servers = self.bootstrap_servers
        if not isinstance(servers, str):
            servers = ",".join(servers)
        # an answer's own coordinator error names itself (partition: error class)
        text = str(exc) if isinstance(exc, _CoordinatorNotReady) else f"{type(exc).__name__}: {exc}"
        name = type(exc).__name__
        if attempts:
            text = (f"{text}; the group coordinator was still not available after "
                    f"{attempts} attempt(s) in {self.coordinator_timeout_ms} ms")
            hint = ("check that the brokers' __consumer_offsets topic has a leader "
                    "(offsets.topic.replication.factor live brokers) and retry")
        elif "Authorization" in name or "Authentication" in name or "Sasl" in name:
            hint = "check the kafka security settings and the group ACLs"
        elif "Timeout" in name or "NoBrokersAvailable" in name or isinstance(exc, OSError):
            from storm_kafka_compat.kafka.probe import version_hint
            hint = f"check that a broker answers at {servers}" + version_hint(servers,
                                                                            self.config)
        else:
            hint = "check the brokers, the topic and the group"
        return GroupAccessError(
            f"{what} for Kafka consumer group {self.group_id!r} at {servers} failed ({text}); "
            f"{hint}", group_id=self.group_id)
