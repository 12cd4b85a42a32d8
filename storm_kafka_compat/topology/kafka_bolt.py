"""Storm's ``KafkaBolt`` (storm-kafka and storm-kafka-client): writes tuples to Kafka
and acks each input only once the broker acknowledged its record.

Behaviour of ``org.apache.storm.kafka.bolt.KafkaBolt`` (storm-kafka 1.x and
storm-kafka-client 1.x/2.x share it), with Storm's names and defaults:

* ``mapper`` (``withTupleToKafkaMapper``): default
  :class:`~storm_kafka_compat.topology.kafka_mapping.FieldNameBasedTupleToKafkaMapper`
  (fields ``key`` and ``message``);
* ``topic_selector`` (``withTopicSelector``): without one, ``prepare`` takes the
  topology config's ``topic`` (storm-kafka 1.x) and fails without it;
* ``fire_and_forget`` (``setFireAndForget``, default False): ack at once, never fail;
* ``async_`` (``setAsync``, default True): ack/fail from the delivery result;
  False waits for each record (``future.get()``);
* ``producer_properties`` (``withProducerProperties``): Java producer properties.

A selector returning None: the tuple is acked without a write (Storm logs and acks).
A mapper or send error: ``reportError`` and fail (the source offset is replayed).

Deviation: Storm acks from the producer's callback thread whenever the broker
answers. Here the task flushes its producer at the end of its share of the batch
(:meth:`KafkaBolt.finish_batch`, called by the bolt runner) and acks or fails every
pending input from its record's delivery result, so the acks the driver commits
are broker acknowledgements, and nothing is left in flight when the task returns.
A record still undelivered after ``flush_timeout_s`` fails its input.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Mapping, Optional, Tuple

from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.config.kafka_settings import kafka_settings_from_dict
from storm_kafka_compat.topology.bolts import OutputCollector, RichBolt, TopologyContext
from storm_kafka_compat.topology.kafka_mapping import (DefaultTopicSelector,
                                                       FieldIndexTopicSelector,
                                                       FieldNameBasedTupleToKafkaMapper,
                                                       FieldNameTopicSelector, KafkaTopicSelector,
                                                       TupleToKafkaMapper)
from storm_kafka_compat.topology.tuples import StormTuple

logger = logging.getLogger(__name__)

__all__ = ["KafkaBolt", "kafka_bolt_from_properties", "TOPIC_CONF_KEY"]

#: storm-kafka 1.x's topology config key for the topic when no selector is set
TOPIC_CONF_KEY = "topic"


class KafkaBolt(RichBolt):
    """Write each input tuple to Kafka; ack it when the broker acknowledged it.

    Parameters
    ----------
    producer_properties : mapping
        Java producer properties (``bootstrap.servers`` required; ``acks``,
        ``key.serializer``, ``value.serializer``, ``enable.idempotence`` ...).
    topic_selector : KafkaTopicSelector, optional
        Default: ``DefaultTopicSelector(conf["topic"])`` at ``prepare``.
    mapper : TupleToKafkaMapper, optional
        Default ``FieldNameBasedTupleToKafkaMapper()`` (``key``, ``message``).
    fire_and_forget : bool
        Ack at once without waiting for the broker (Storm default False).
    async_ : bool
        True (Storm default): wait for the deliveries at the end of the task's
        batch; False: wait for each record before the next.
    kafka : mapping, optional
        The ``kafka`` client settings (``api_version: "0.9"`` for Kafka 0.9); from
        CONFIG, the job's ``kafka`` section unless the bolt's properties give one.
    flush_timeout_s : float
        How long the end-of-batch flush waits before failing what is undelivered.
    """

    def __init__(self, producer_properties: Mapping[str, Any],
                 topic_selector: Optional[KafkaTopicSelector] = None,
                 mapper: Optional[TupleToKafkaMapper] = None, *, fire_and_forget: bool = False,
                 async_: bool = True, kafka: Optional[Mapping[str, Any]] = None,
                 flush_timeout_s: float = 30.0) -> None:
        self.producer_properties = dict(producer_properties)
        self.topic_selector = topic_selector
        self.mapper = mapper if mapper is not None else FieldNameBasedTupleToKafkaMapper()
        self.fire_and_forget = fire_and_forget
        self.async_ = async_
        self.kafka = dict(kafka or {})
        self.flush_timeout_s = flush_timeout_s
        self._producer: Any = None
        self._pending: List[Tuple[StormTuple, Any]] = []
        self.written = 0

    # Storm's fluent setters, for code ported line by line
    def with_topic_selector(self, selector: Any) -> "KafkaBolt":
        self.topic_selector = (DefaultTopicSelector(selector) if isinstance(selector, str)
                               else selector)
        return self

    def with_tuple_to_kafka_mapper(self, mapper: TupleToKafkaMapper) -> "KafkaBolt":
        self.mapper = mapper
        return self

    def with_producer_properties(self, properties: Mapping[str, Any]) -> "KafkaBolt":
        self.producer_properties = dict(properties)
        return self

    def set_fire_and_forget(self, value: bool) -> None:
        self.fire_and_forget = bool(value)

    def set_async(self, value: bool) -> None:
        self.async_ = bool(value)

    def producer_config(self) -> Dict[str, Any]:
        """The kafka-python producer settings this bolt uses."""
        from storm_kafka_compat.kafka.producer import producer_config
        client = kafka_settings_from_dict(self.kafka).for_kafka_python() if self.kafka else {}
        return producer_config(self.producer_properties, client)

    def _make_producer(self) -> Any:
        from storm_kafka_compat.kafka.producer import shared_producer
        return shared_producer(self.producer_config())

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext,
                collector: OutputCollector) -> None:
        super().prepare(conf, context, collector)
        if self.topic_selector is None:
            topic = conf.get(TOPIC_CONF_KEY)
            if not topic:
                raise ConfigError(
                    f"KafkaBolt {context.component_id!r}: no topic selector and no "
                    f"{TOPIC_CONF_KEY!r} in the topology config; set topic (or "
                    f"topicSelector) in the bolt's properties",
                    key=f"bolts.{context.component_id}.properties.topic")
            self.topic_selector = DefaultTopicSelector(str(topic))
        if self._producer is None:
            self._producer = self._make_producer()

    def execute(self, tup: StormTuple) -> None:
        collector = self.collector
        try:
            key = self.mapper.get_key_from_tuple(tup)
            message = self.mapper.get_message_from_tuple(tup)
            assert self.topic_selector is not None
            topic = self.topic_selector.get_topic(tup)
            if topic is None:
                logger.warning("skipping key = %r, topic selector returned None", key)
                collector.ack(tup)
                return
            future = self._producer.send(topic, key=key, value=message)
        except Exception as exc:
            collector.report_error(exc)
            collector.fail(tup)
            return
        self.written += 1
        if self.fire_and_forget:
            collector.ack(tup)
        elif not self.async_:
            self._settle(tup, future, wait=True)
        else:
            self._pending.append((tup, future))

    def _settle(self, tup: StormTuple, future: Any, wait: bool) -> None:
        try:
            if wait:
                future.get(timeout=self.flush_timeout_s)
            elif not future.is_done:
                raise TimeoutError(f"record not acknowledged within {self.flush_timeout_s} s")
            elif future.failed():
                raise future.exception
        except Exception as exc:
            self.collector.report_error(exc)
            self.collector.fail(tup)
        else:
            self.collector.ack(tup)

    def finish_batch(self) -> None:
        """Flush the producer, then ack each pending input whose record the broker
        acknowledged and fail the others (called at the end of the task's batch)."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        try:
            self._producer.flush(timeout=self.flush_timeout_s)
        except Exception as exc:  # a flush timeout: settle what is done, fail the rest
            logger.warning("KafkaBolt flush did not finish in %s s: %r", self.flush_timeout_s,
                           exc)
        for tup, future in pending:
            self._settle(tup, future, wait=False)

    def cleanup(self) -> None:
        self.finish_batch()

    def declare_output_fields(self) -> Tuple[str, ...]:
        return ()


_SELECTORS = {"DefaultTopicSelector": DefaultTopicSelector,
              "FieldIndexTopicSelector": FieldIndexTopicSelector,
              "FieldNameTopicSelector": FieldNameTopicSelector}

#: the properties a CONFIG ``KafkaBolt`` entry takes (Storm's names)
PROPERTIES = ("producerProperties", "topic", "topicSelector", "fieldIndex", "fieldName",
              "defaultTopicName", "boltKeyField", "boltMessageField", "fireAndForget", "async",
              "kafka", "flushTimeoutSecs")


def kafka_bolt_from_properties(props: Mapping[str, Any], *, name: str = "kafka-bolt"
                               ) -> KafkaBolt:
    """A :class:`KafkaBolt` from a CONFIG entry's ``properties`` (Storm's names).

    ``topicSelector`` is ``DefaultTopicSelector`` (with ``topic``),
    ``FieldIndexTopicSelector`` (``fieldIndex``, ``defaultTopicName``) or
    ``FieldNameTopicSelector`` (``fieldName``, ``defaultTopicName``); without it,
    ``topic`` gives a ``DefaultTopicSelector`` and no ``topic`` leaves it to the
    topology config at ``prepare``.

    Raises
    ------
    ConfigError
        Unknown property, unknown selector, or a selector's argument missing.
    """
    key = f"bolts.{name}.properties"
    unknown = [k for k in props if k not in PROPERTIES]
    if unknown:
        raise ConfigError(f"{key}: unknown KafkaBolt propert(ies) {unknown}; valid: "
                          f"{', '.join(PROPERTIES)}", key=f"{key}.{unknown[0]}",
                          allowed=PROPERTIES)
    sel_name = str(props.get("topicSelector", "")).rsplit(".", 1)[-1]
    selector: Optional[KafkaTopicSelector] = None
    default = props.get("defaultTopicName")
    if sel_name == "DefaultTopicSelector" or (not sel_name and props.get("topic")):
        if not props.get("topic"):
            raise ConfigError(f"{key}: DefaultTopicSelector needs topic", key=f"{key}.topic")
        selector = DefaultTopicSelector(str(props["topic"]))
    elif sel_name == "FieldIndexTopicSelector":
        if "fieldIndex" not in props:
            raise ConfigError(f"{key}: FieldIndexTopicSelector needs fieldIndex",
                              key=f"{key}.fieldIndex")
        selector = FieldIndexTopicSelector(int(props["fieldIndex"]), default)
    elif sel_name == "FieldNameTopicSelector":
        if "fieldName" not in props:
            raise ConfigError(f"{key}: FieldNameTopicSelector needs fieldName",
                              key=f"{key}.fieldName")
        selector = FieldNameTopicSelector(str(props["fieldName"]), default)
    elif sel_name:
        raise ConfigError(f"{key}.topicSelector={props['topicSelector']!r} is not one of "
                          f"{', '.join(_SELECTORS)}", key=f"{key}.topicSelector",
                          value=props["topicSelector"], allowed=tuple(_SELECTORS))
    mapper = FieldNameBasedTupleToKafkaMapper(str(props.get("boltKeyField", "key")),
                                              str(props.get("boltMessageField", "message")))
    producer = props.get("producerProperties") or {}
    if not isinstance(producer, Mapping):
        raise ConfigError(f"{key}.producerProperties must be a mapping of Java producer "
                          f"properties", key=f"{key}.producerProperties", value=producer)
    return KafkaBolt(producer, selector, mapper,
                     fire_and_forget=_flag(props.get("fireAndForget", False)),
                     async_=_flag(props.get("async", True)), kafka=props.get("kafka"),
                     flush_timeout_s=float(props.get("flushTimeoutSecs", 30.0)))


def _flag(value: Any) -> bool:
    return value if isinstance(value, bool) else str(value).strip().lower() == "true"
