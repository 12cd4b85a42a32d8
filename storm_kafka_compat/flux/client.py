"""Flux components of storm-kafka-client (``org.apache.storm.kafka.spout``).

A Flux topology builds storm-kafka-client's spout as
``KafkaSpout(KafkaSpoutConfig(KafkaSpoutConfig$Builder(servers, topics)))`` (or
through the factory ``KafkaSpoutConfig.builder``), tuned by the builder's setters
as ``configMethods`` or ``properties``. :class:`ClientComponents` turns those
components into the CONFIG's ``kafkaSpout`` section (docs/configuration.md) and
reports what has no equivalent. It is a mixin of
:class:`storm_kafka_compat.flux.components.ComponentResolver` and, like it, pure.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple

from storm_kafka_compat.errors import ConfigError

#: what a resolved Flux component stands for in our CONFIG: storm-kafka's (hosts,
#: GlobalPartitionInformation, a broker, a scheme, a SpoutConfig, its KafkaSpout, any other
#: Java class) and storm-kafka-client's (a builder, its config, its KafkaSpout and the
#: values its methods take)
ComponentKind = Literal["hosts", "gpi", "broker", "scheme", "scheme_single", "spout_config",
                        "kafka_spout", "java", "client_builder", "client_config",
                        "client_spout", "interval", "pattern", "properties", "retry",
                        "translator"]

#: package of storm-kafka-client's classes
CLIENT_PACKAGE = "org.apache.storm.kafka.spout."
#: JDK classes Flux files build as values: class -> builder suffix
JAVA_CLASSES: Dict[str, str] = {
    "java.util.Properties": "java_Properties",
    "java.util.HashMap": "java_Properties",
    "java.util.regex.Pattern": "java_Pattern",
}
#: KafkaSpoutConfig.Builder setters and the ``kafkaSpout`` key each one sets
BUILDER_SETTERS: Dict[str, str] = {
    "setGroupId": "groupId",
    "setFirstPollOffsetStrategy": "firstPollOffsetStrategy",
    "setProcessingGuarantee": "processingGuarantee",
    "setOffsetCommitPeriodMs": "offsetCommitPeriodMs",
    "setMaxUncommittedOffsets": "maxUncommittedOffsets",
    "setPollTimeoutMs": "pollTimeoutMs",
    "setPartitionRefreshPeriodMs": "partitionRefreshPeriodMs",
    "setEmitNullTuples": "emitNullTuples",
    "setTupleTrackingEnforced": "tupleTrackingEnforced",
}
#: the deserializer Storm's DefaultRecordTranslator output assumes (``record_translator``)
STRING_DESERIALIZER = "org.apache.kafka.common.serialization.StringDeserializer"
DESERIALIZER_KEYS: Tuple[str, ...] = ("key.deserializer", "value.deserializer")


def client_builder_name(class_name: str) -> Optional[str]:
    """Builder-method suffix for a storm-kafka-client or JDK class, else None:
    ``org.apache.storm.kafka.spout.KafkaSpoutConfig$Builder`` ->
    ``client_KafkaSpoutConfig_Builder``."""
    if class_name in JAVA_CLASSES:
        return JAVA_CLASSES[class_name]
    if class_name.startswith(CLIENT_PACKAGE) and "." not in class_name[len(CLIENT_PACKAGE):]:
        return "client_" + class_name[len(CLIENT_PACKAGE):].replace("$", "_")
    return None


def _enum(value: Any) -> Any:
    """``FirstPollOffsetStrategy.EARLIEST`` or a qualified enum constant -> ``EARLIEST``."""
    return value.rsplit(".", 1)[-1] if isinstance(value, str) else value


class ClientComponents:
    """``_build_*`` methods for storm-kafka-client components (mixed into the resolver,
    which supplies ``unmapped``, ``Resolved`` and ``python_placeholder``)."""

    unmapped: List[str]
    ported_schemes: List[str]

    # JDK values ---------------------------------------------------------------------
    def _build_java_Properties(self, args: List[Any], props: Dict[str, Any],
                               methods: List[Any], factory: Any, where: str) -> Any:
        out: Dict[str, Any] = {}
        for name, margs in methods:
            if name in ("put", "setProperty") and len(margs) == 2:
                out[str(margs[0])] = margs[1]
            elif name == "putAll" and len(margs) == 1 and isinstance(margs[0], Mapping):
                out.update(margs[0])
            else:
                self.unmapped.append(f"{where}: configMethod {name!r} of a Properties map not "
                                     f"mapped; use put(key, value).")
        return self._new_value("properties", out)

    def _build_java_Pattern(self, args: List[Any], props: Dict[str, Any], methods: List[Any],
                            factory: Any, where: str) -> Any:
        if factory != "compile" or len(args) != 1 or not isinstance(args[0], str):
            raise ConfigError(f"{where}: a java.util.regex.Pattern is built with factory "
                              f"'compile' and one string argument, got factory {factory!r} "
                              f"and {len(args)} argument(s).", key=where, value=factory)
        return self._new_value("pattern", args[0])

    # retry ------------------------------------------------------------------------------
    def _build_client_KafkaSpoutRetryExponentialBackoff_TimeInterval(
            self, args: List[Any], props: Dict[str, Any], methods: List[Any], factory: Any,
            where: str) -> Any:
        if factory in ("seconds", "milliSeconds", "microSeconds") and len(args) == 1:
            unit = {"seconds": "SECONDS", "milliSeconds": "MILLISECONDS",
                    "microSeconds": "MICROSECONDS"}[factory]
            return self._new_value("interval", {"length": args[0], "timeUnit": unit})
        if factory is None and len(args) == 2:
            return self._new_value("interval", {"length": args[0], "timeUnit": _enum(args[1])})
        raise ConfigError(f"{where}: TimeInterval takes (length, TimeUnit) or a factory "
                          f"seconds/milliSeconds/microSeconds with one length; got factory "
                          f"{factory!r} and {len(args)} argument(s).", key=where, value=factory)

    def _build_client_KafkaSpoutRetryExponentialBackoff(
            self, args: List[Any], props: Dict[str, Any], methods: List[Any], factory: Any,
            where: str) -> Any:
        if len(args) != 4:
            raise ConfigError(f"{where}: KafkaSpoutRetryExponentialBackoff takes (initialDelay, "
                              f"delayPeriod, maxRetries, maxDelay), got {len(args)} "
                              f"constructorArgs.", key=where, value=len(args))
        names = ("initialDelay", "delayPeriod", "maxRetries", "maxDelay")
        retry: Dict[str, Any] = {}
        for name, value in zip(names, args):
            if name == "maxRetries":
                retry[name] = value
            elif getattr(value, "kind", None) == "interval":
                retry[name] = value.data
            else:
                raise ConfigError(f"{where}: {name} must be a ref to a "
                                  f"KafkaSpoutRetryExponentialBackoff$TimeInterval component, "
                                  f"got {self._describe([value])}.", key=where,
                                  value=name)
        self._extra(where, props, methods)
        return self._new_value("retry", retry)

    # translators ------------------------------------------------------------------------
    def _build_client_DefaultRecordTranslator(self, args: List[Any], props: Dict[str, Any],
                                              methods: List[Any], factory: Any,
                                              where: str) -> Any:
        return self._new_value("translator", "record_translator")

    # the builder ------------------------------------------------------------------------
    def _build_client_KafkaSpoutConfig_Builder(self, args: List[Any], props: Dict[str, Any],
                                               methods: List[Any], factory: Any,
                                               where: str) -> Any:
        if len(args) == 2:
            servers, topics = args
        elif len(args) == 4:   # 1.1.x: (servers, keyDeserializer, valueDeserializer, topics)
            servers, key_des, value_des, topics = args
            methods = [("setProp", ["key.deserializer", key_des]),
                       ("setProp", ["value.deserializer", value_des])] + list(methods)
        else:
            raise ConfigError(f"{where}: KafkaSpoutConfig$Builder takes (bootstrapServers, "
                              f"topics) (or 1.1.x's (bootstrapServers, keyDeserializer, "
                              f"valueDeserializer, topics)), got {len(args)} constructorArgs; "
                              f"a Subscription or KafkaSpoutStreams argument is not supported: "
                              f"write the kafkaSpout section by hand (docs/configuration.md).",
                              key=where, value=len(args))
        section: Dict[str, Any] = {"bootstrapServers": servers}
        if getattr(topics, "kind", None) == "pattern":
            section["topicPattern"] = topics.data
        elif isinstance(topics, str):
            section["topics"] = [topics]
        elif isinstance(topics, list) and all(isinstance(t, str) for t in topics):
            section["topics"] = list(topics)
        else:
            raise ConfigError(f"{where}: topics must be a name, a list of names or a ref to a "
                              f"java.util.regex.Pattern (factory compile), got "
                              f"{self.show(topics)}.",
                              key=where, value=repr(topics))
        calls = [("set" + name[:1].upper() + name[1:], [value]) for name, value in props.items()]
        state: Dict[str, Any] = {"section": section, "consumer": {}, "spout": {},
                                 "scheme": None}
        for name, margs in calls + list(methods):
            self._builder_call(state, name, margs, where)
        consumer: Dict[str, Any] = state["consumer"]
        scheme = state["scheme"]
        deserializers = {k: consumer.pop(k) for k in DESERIALIZER_KEYS if k in consumer}
        if scheme is None:
            odd = {k: v for k, v in deserializers.items() if v != STRING_DESERIALIZER}
            if odd:
                listed = ", ".join(f"{k}={v}" for k, v in odd.items())
                placeholder = self._placeholder("DeserializingScheme")
                self.unmapped.append(f"{where}: {listed} not mapped: the scheme turns bytes into "
                                     f"values here; port the deserializers as a scheme and set "
                                     f"spout.scheme (placeholder {placeholder!r}).")
                scheme = placeholder
            else:
                scheme = "record_translator"   # Storm's DefaultRecordTranslator, String key/value
        elif deserializers:
            self.unmapped.append(f"{where}: {', '.join(sorted(deserializers))} not mapped: the "
                                 f"scheme ({scheme}) decodes the bytes.")
        if consumer:
            section["consumer"] = consumer
        spout = dict(state["spout"])
        spout["scheme"] = scheme
        return self._new_value("client_builder", {"kafkaSpout": section, "spout": spout})

    def _builder_call(self, state: Dict[str, Any], name: str, margs: List[Any],
                      where: str) -> None:
        section: Dict[str, Any] = state["section"]
        consumer: Dict[str, Any] = state["consumer"]
        if name in BUILDER_SETTERS and len(margs) == 1:
            section[BUILDER_SETTERS[name]] = _enum(margs[0]) if isinstance(margs[0], str) \
                else margs[0]
        elif name == "setProp" and len(margs) == 2:
            consumer[str(margs[0])] = margs[1]
        elif name == "setProp" and len(margs) == 1 and (
                isinstance(margs[0], Mapping) or getattr(margs[0], "kind", None) == "properties"):
            consumer.update(margs[0] if isinstance(margs[0], Mapping) else margs[0].data)
        elif name == "setRetry" and len(margs) == 1 and getattr(margs[0], "kind", None) == "retry":
            section["retry"] = margs[0].data
        elif name == "setRecordTranslator" and len(margs) >= 1:
            translator = margs[0]
            if getattr(translator, "kind", None) == "translator":
                state["scheme"] = translator.data
            else:
                cls = getattr(translator, "class_name", "") or self.show(translator)
                self.ported_schemes.append(cls)
                placeholder = self._placeholder(cls)
                self.unmapped.append(f"{where}: record translator {cls} not mapped: port it as "
                                     f"a scheme and set spout.scheme (placeholder "
                                     f"{placeholder!r}).")
                state["scheme"] = placeholder
        elif name == "setMetricsTimeBucketSizeInSecs" and len(margs) == 1:
            state["spout"]["metricsTimeBucketSizeInSecs"] = margs[0]
        else:
            self.unmapped.append(f"{where}: {name}({', '.join(map(self.show, margs))}) not mapped "
                                 f"(no equivalent; the kafkaSpout keys are listed in "
                                 f"docs/configuration.md).")
        if "group.id" in consumer:
            section["groupId"] = consumer.pop("group.id")

    def _build_client_KafkaSpoutConfig(self, args: List[Any], props: Dict[str, Any],
                                       methods: List[Any], factory: Any, where: str) -> Any:
        if factory == "builder":
            return self._build_client_KafkaSpoutConfig_Builder(args, props, methods, None, where)
        if len(args) == 1 and getattr(args[0], "kind", None) == "client_builder":
            self._extra(where, props, methods)
            return self._new_value("client_config", args[0].data)
        raise ConfigError(f"{where}: KafkaSpoutConfig takes one ref to a "
                          f"KafkaSpoutConfig$Builder component (or factory 'builder' with "
                          f"bootstrapServers and topics); got {self._describe(args)}.",
                          key=where, value=len(args))

    def _build_client_KafkaSpout(self, args: List[Any], props: Dict[str, Any],
                                 methods: List[Any], factory: Any, where: str) -> Any:
        if len(args) == 1 and getattr(args[0], "kind", None) in ("client_config",
                                                                  "client_builder"):
            self._extra(where, props, methods)
            return self._new_value("client_spout", args[0].data)
        raise ConfigError(f"{where}: storm-kafka-client's KafkaSpout takes one ref to a "
                          f"KafkaSpoutConfig component; got {self._describe(args)}.",
                          key=where, value=len(args))

    # supplied by the resolver -----------------------------------------------------------
    def _new_value(self, kind: ComponentKind, data: Any) -> Any:          # pragma: no cover
        raise NotImplementedError

    def _extra(self, where: str, props: Mapping[str, Any], methods: Sequence[Any],
               known_props: Sequence[str] = ()) -> None:          # pragma: no cover
        raise NotImplementedError

    def _placeholder(self, class_name: str) -> str:              # pragma: no cover
        raise NotImplementedError

    def _describe(self, args: Sequence[Any]) -> str:              # pragma: no cover
        raise NotImplementedError

    def show(self, value: Any) -> str:                            # pragma: no cover
        raise NotImplementedError
