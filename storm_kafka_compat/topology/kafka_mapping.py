"""What a KafkaBolt writes: Storm's tuple-to-record mappers, topic selectors and
the Java serializers a topology names (pure logic, no Kafka client).

Storm's classes and their Python counterparts, same names and defaults:

* ``FieldNameBasedTupleToKafkaMapper`` (storm-kafka ``org.apache.storm.kafka.bolt.mapper``
  and storm-kafka-client ``org.apache.storm.kafka.bolt.mapper``): key from the field
  ``key`` (None when the tuple has no such field), message from the field ``message``
  (an error when missing).
* ``DefaultTopicSelector(topic)``: always ``topic``.
* ``FieldIndexTopicSelector(index, defaultTopicName)``: the value at ``index`` when the
  tuple is long enough, else the default (Storm logs a warning).
* ``FieldNameTopicSelector(fieldName, defaultTopicName)``: the value of the field when
  present, else the default.

A selector returning None makes the bolt skip the tuple and ack it (Storm's
"skipping key = ..., topic selector returned null").
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Optional, Protocol

from storm_kafka_compat.topology.tuples import StormTuple

logger = logging.getLogger(__name__)

__all__ = ["TupleToKafkaMapper", "KafkaTopicSelector", "FieldNameBasedTupleToKafkaMapper",
           "DefaultTopicSelector", "FieldIndexTopicSelector", "FieldNameTopicSelector"]


class TupleToKafkaMapper(Protocol):
    """Storm's ``TupleToKafkaMapper``: the record's key and message from a tuple."""

    def get_key_from_tuple(self, tup: StormTuple) -> Any: ...

    def get_message_from_tuple(self, tup: StormTuple) -> Any: ...


class KafkaTopicSelector(Protocol):
    """Storm's ``KafkaTopicSelector``: the topic a tuple goes to (None: skip it)."""

    def get_topic(self, tup: StormTuple) -> Optional[str]: ...


@dataclass(frozen=True)
class FieldNameBasedTupleToKafkaMapper:
    """Key and message from two named fields (Storm's defaults ``key``/``message``)."""

    bolt_key_field: str = "key"
    bolt_message_field: str = "message"

    def get_key_from_tuple(self, tup: StormTuple) -> Any:
        # Storm: tuple.contains(keyField) ? tuple.getValueByField(keyField) : null
        return tup[self.bolt_key_field] if self.bolt_key_field in tup.fields else None

    def get_message_from_tuple(self, tup: StormTuple) -> Any:
        if self.bolt_message_field not in tup.fields:
            raise KeyError(f"the tuple has no field {self.bolt_message_field!r} (fields "
                           f"{list(tup.fields)}); emit it or set the mapper's message field")
        return tup[self.bolt_message_field]


@dataclass(frozen=True)
class DefaultTopicSelector:
    """Every tuple goes to ``topic_name``."""

    topic_name: str

    def get_topic(self, tup: StormTuple) -> Optional[str]:
        return self.topic_name


@dataclass(frozen=True)
class FieldIndexTopicSelector:
    """The topic is the tuple's value at ``field_index``, else ``default_topic_name``."""

    field_index: int
    default_topic_name: Optional[str] = None

    def get_topic(self, tup: StormTuple) -> Optional[str]:
        if 0 <= self.field_index < len(tup.values):
            return str(tup.values[self.field_index])
        logger.warning("field index %d out of range for a tuple of %d values; using the "
                       "default topic %r", self.field_index, len(tup.values),
                       self.default_topic_name)
        return self.default_topic_name


@dataclass(frozen=True)
class FieldNameTopicSelector:
    """The topic is the value of ``field_name``, else ``default_topic_name``."""

    field_name: str
    default_topic_name: Optional[str] = None

    def get_topic(self, tup: StormTuple) -> Optional[str]:
        if self.field_name in tup.fields:
            return str(tup[self.field_name])
        logger.warning("field %r not in the tuple's fields %s; using the default topic %r",
                       self.field_name, list(tup.fields), self.default_topic_name)
        return self.default_topic_name
