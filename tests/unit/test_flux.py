"""Flux YAML and .properties conversion into CONFIG."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Sequence

import pytest
import yaml

from storm_kafka_compat.config import job_config_from_dict, parse_yaml
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.flux import (
    convert_file,
    convert_flux,
    convert_properties,
    detect_format,
    load_properties,
    python_placeholder,
    substitute,
)

DATA = Path(__file__).resolve().parent.parent / "data" / "flux"


# --- substitution ------------------------------------------------------------------------

def test_substitute_properties_then_env_unknown_left_alone() -> None:
    text = "a: ${x}\nb: ${ENV-HOME_DIR}\nc: ${missing}\nd: ${ENV-MISSING}\ne: ${y}\n"
    out = substitute(text, {"x": "1", "y": "${ENV-HOME_DIR}"}, {"HOME_DIR": "/home/s"})
    assert out == "a: 1\nb: /home/s\nc: ${missing}\nd: ${ENV-MISSING}\ne: /home/s\n"


def test_substitute_env_only_when_enabled() -> None:
    assert substitute("${ENV-A}", None, None) == "${ENV-A}"
    assert substitute("${ENV-A}", None, {"A": "v"}) == "v"
    assert substitute("${A}", None, {"A": "v"}) == "${A}"  # env needs the ENV- prefix


def test_load_properties_java_syntax() -> None:
    props = load_properties("# c\na=1\nb : two\\\n   words\nc\\u0041=\\u00e9\n")
    assert props == {"a": "1", "b": "twowords", "cA": "é"}


# --- the realistic Flux file ---------------------------------------------------------------

def test_convert_realistic_flux() -> None:
    result = convert_file(str(DATA / "kafka_spout_topology.yaml"),
                          filter_path=str(DATA / "dev.properties"),
                          env={"KAFKA_CLIENT_ID": "clicks-client"})
    assert result.config == {
        "spout": {"topic": "clicks", "zkRoot": "/kafka-offsets", "id": "clicks-spout",
                  "ignoreZkOffsets": False, "startOffsetTime": -1, "fetchSizeBytes": 2097152,
                  "retryLimit": 5, "retryDelayMultiplier": 2.0,
                  "zkServers": ["zk-offsets.example.com"], "zkPort": 2181,
                  "clientId": "clicks-client", "scheme": "string"},
        "hosts": {"zk": "zk1.example.com:2181,zk2.example.com:2181/kafka",
                  "refreshFreqSecs": 30},
        "spark": {"tasks": 4},
        "topology": {
            "name": "clicks", "topology.max.spout.pending": 1000,
            "topology.message.timeout.secs": 60, "kafka.topic.wildcard.match": False,
            "storm.zookeeper.servers": ["zk1.example.com", "zk2.example.com"],
            "storm.zookeeper.port": 2181,
            "bolts": [
                {"name": "parse", "bolt": "com.example.clicks:ParseClickBolt", "parallelism": 4},
                {"name": "count", "bolt": "com.example.clicks:CountBolt", "parallelism": 2,
                 "inputs": [{"from": "parse", "grouping": "fields", "fields": ["user"]}]},
            ]},
    }
    joined = "\n".join(result.unmapped)
    assert "config.topology.workers 2 not mapped: Storm's worker processes" in joined
    assert "config.topology.debug not mapped" in joined
    assert "bolts[parse] com.example.clicks.ParseClickBolt not mapped: port the bolt to " \
        "Python" in joined
    assert "bolts[count]" in joined
    assert len(result.unmapped) == 4
    # the result is a valid CONFIG, and the YAML text round-trips
    job = job_config_from_dict(parse_yaml(result.to_yaml()))
    assert job.spout.scheme == "string" and job.spout.start_offset_time == -1
    assert job.topology_spec is not None and len(job.topology_spec.bolts) == 2
    assert list(yaml.safe_load(result.to_yaml())) == ["spout", "hosts", "topology", "spark"]


def test_realistic_flux_without_env_reports_the_placeholder() -> None:
    result = convert_file(str(DATA / "kafka_spout_topology.yaml"),
                          filter_path=str(DATA / "dev.properties"))
    assert result.config["spout"]["clientId"] == "${ENV-KAFKA_CLIENT_ID}"
    assert any("spout.clientId: placeholder ${ENV-KAFKA_CLIENT_ID} was not substituted; "
               "environment variable KAFKA_CLIENT_ID: set it and run 'config convert "
               "--env-filter'" in u
               for u in result.unmapped)


def test_realistic_flux_without_filter_reports_placeholders() -> None:
    result = convert_file(str(DATA / "kafka_spout_topology.yaml"))
    wheres = [u.split(":")[0] for u in result.unmapped if "not substituted" in u]
    assert set(wheres) >= {"spout.topic", "hosts.zk", "topology.name"}


def test_convert_0_10_static_hosts_flux() -> None:
    result = convert_file(str(DATA / "static_hosts_0_10.yaml"))
    assert result.config == {
        "spout": {"topic": "orders", "zkRoot": "/storm-offsets", "id": "orders-spout",
                  "ignoreZkOffsets": True, "scheme": "string_key_value"},
        "hosts": {"static": {0: "kafka1.example.com:9092", 1: "kafka2.example.com:9093"}},
        "topology": {"name": "orders"},
        "bolt": "com.example.orders:StoreBolt",
    }
    assert any("forceFromStart (0.9.x) written as ignoreZkOffsets" in u for u in result.unmapped)
    assert any("bolts[store]" in u and "port the bolt to Python" in u for u in result.unmapped)
    job = job_config_from_dict(result.config)
    assert job.bolt == "com.example.orders:StoreBolt"
    assert job.spout.ignore_zk_offsets is True


# --- small Flux documents -------------------------------------------------------------------

def flux(components: List[Dict[str, Any]], spout_props: Sequence[Dict[str, Any]] = (),
         pkg: str = "org.apache.storm.kafka", **top: Any) -> Dict[str, Any]:
    doc: Dict[str, Any] = {
        "name": "t",
        "components": [
            {"id": "hosts", "className": f"{pkg}.ZkHosts", "constructorArgs": ["zk:2181"]},
            *components,
            {"id": "sc", "className": f"{pkg}.SpoutConfig",
             "constructorArgs": [{"ref": "hosts"}, "topic", "/root", "sid"],
             "properties": list(spout_props)},
        ],
        "spouts": [{"id": "ks", "className": f"{pkg}.KafkaSpout",
                    "constructorArgs": [{"ref": "sc"}]}],
    }
    doc.update(top)
    return doc


def run(doc: Dict[str, Any]) -> Any:
    return convert_flux(yaml.safe_dump(doc))


SCHEMES = [
    # (components, scheme ref id, expected scheme)
    ([{"id": "s", "className": "org.apache.storm.spout.RawMultiScheme"}], "raw"),
    ([{"id": "i", "className": "org.apache.storm.spout.RawScheme"},
      {"id": "s", "className": "org.apache.storm.spout.SchemeAsMultiScheme",
       "constructorArgs": [{"ref": "i"}]}], "raw"),
    ([{"id": "i", "className": "org.apache.storm.kafka.StringScheme"},
      {"id": "s", "className": "org.apache.storm.spout.SchemeAsMultiScheme",
       "constructorArgs": [{"ref": "i"}]}], "string"),
    ([{"id": "i", "className": "storm.kafka.StringScheme"},
      {"id": "s", "className": "backtype.storm.spout.SchemeAsMultiScheme",
       "constructorArgs": [{"ref": "i"}]}], "string"),
    ([{"id": "i", "className": "org.apache.storm.kafka.StringKeyValueScheme"},
      {"id": "s", "className": "org.apache.storm.kafka.KeyValueSchemeAsMultiScheme",
       "constructorArgs": [{"ref": "i"}]}], "string_key_value"),
    # StringKeyValueScheme wrapped as a plain Scheme ignores the key: one "str" field
    ([{"id": "i", "className": "org.apache.storm.kafka.StringKeyValueScheme"},
      {"id": "s", "className": "org.apache.storm.spout.SchemeAsMultiScheme",
       "constructorArgs": [{"ref": "i"}]}], "string"),
    ([{"id": "i", "className": "org.apache.storm.kafka.StringMessageAndMetadataScheme"},
      {"id": "s", "className": "org.apache.storm.kafka.MessageMetadataSchemeAsMultiScheme",
       "constructorArgs": [{"ref": "i"}]}], "message_metadata"),
    ([{"id": "s", "className": "org.apache.storm.kafka.StringMultiSchemeWithTopic"}],
     "string_with_topic"),
]


@pytest.mark.parametrize("components,expected", SCHEMES)
def test_scheme_classes(components: List[Dict[str, Any]], expected: str) -> None:
    result = run(flux(components, [{"name": "scheme", "ref": "s"}]))
    assert result.config["spout"]["scheme"] == expected
    assert not [u for u in result.unmapped if "scheme" in u]


def test_default_scheme_is_left_to_the_default() -> None:
    result = run(flux([]))
    assert "scheme" not in result.config["spout"]
    assert job_config_from_dict({**result.config}).spout.scheme == "raw"


def test_user_scheme_gets_a_placeholder_and_is_reported() -> None:
    comps = [{"id": "i", "className": "com.acme.kafka.AvroScheme"},
             {"id": "s", "className": "org.apache.storm.spout.SchemeAsMultiScheme",
              "constructorArgs": [{"ref": "i"}]}]
    result = run(flux(comps, [{"name": "scheme", "ref": "s"}]))
    assert result.config["spout"]["scheme"] == "com.acme.kafka:AvroScheme"
    assert any("scheme com.acme.kafka.AvroScheme not mapped" in u for u in result.unmapped)
    job_config_from_dict(result.config)  # the placeholder is a valid module:callable


def test_spout_config_with_client_id_and_refresh_and_broker_path() -> None:
    doc = flux([])
    doc["components"][0] = {"id": "hosts", "className": "org.apache.storm.kafka.ZkHosts",
                            "constructorArgs": ["zk:2181", "/kafka/brokers"],
                            "properties": [{"name": "refreshFreqSecs", "value": 15}]}
    doc["components"][-1]["constructorArgs"] = [{"ref": "hosts"}, "topic", "cid", "/root", "sid"]
    result = run(doc)
    assert result.config["spout"] == {"topic": "topic", "zkRoot": "/root", "id": "sid",
                                      "clientId": "cid"}
    assert result.config["hosts"] == {"zk": "zk:2181", "brokerZkPath": "/kafka/brokers",
                                      "refreshFreqSecs": 15}


def test_unknown_spout_property_and_unused_component_are_reported() -> None:
    comps = [{"id": "unused", "className": "com.acme.Thing"}]
    result = run(flux(comps, [{"name": "stateStore", "value": "kafka"}],
                      includes=[{"resource": True, "file": "/base.yaml"}]))
    joined = "\n".join(result.unmapped)
    assert "property 'stateStore' not mapped" in joined
    assert "components[unused] (com.acme.Thing) not mapped" in joined
    assert "includes are not followed" in joined
    assert "stateStore" not in result.config["spout"]


def test_config_topology_name_conflicting_with_flux_name_is_reported() -> None:
    result = run(flux([], config={"topology.name": "other", "storm.zookeeper.retry.times": 3}))
    assert result.config["topology"] == {"name": "t", "storm.zookeeper.retry.times": 3}
    assert any("config.topology.name 'other' ignored" in u for u in result.unmapped)


def test_other_spouts_and_second_kafka_spout_are_reported() -> None:
    doc = flux([])
    doc["spouts"] += [{"id": "ks2", "className": "org.apache.storm.kafka.KafkaSpout",
                       "constructorArgs": [{"ref": "sc"}]},
                      {"id": "rand", "className": "com.acme.RandomSpout"}]
    result = run(doc)
    joined = "\n".join(result.unmapped)
    assert "spouts[ks2]: a second KafkaSpout is not mapped" in joined
    assert "spouts[rand]: spout com.acme.RandomSpout not mapped" in joined


def test_bolts_streams_and_groupings() -> None:
    doc = flux([], bolts=[{"id": "a", "className": "x.A"}, {"id": "b", "className": "x.y.B",
                                                          "parallelism": 3},
                          {"id": "c", "className": "C"}],
               streams=[{"from": "ks", "to": "a", "grouping": {"type": "FIELDS", "args": ["k"]}},
                        {"from": "a", "to": "b",
                         "grouping": {"type": "ALL", "streamId": "side"}},
                        {"from": "b", "to": "c",
                         "grouping": {"type": "CUSTOM",
                                      "customClass": {"className": "x.MyGrouping"}}},
                        {"from": "nowhere", "to": "c", "grouping": {"type": "SHUFFLE"}}])
    result = run(doc)
    assert result.config["topology"]["bolts"] == [
        {"name": "a", "bolt": "x:A", "inputs": [{"from": "spout", "grouping": "fields",
                                                 "fields": ["k"]}]},
        {"name": "b", "bolt": "x.y:B", "parallelism": 3,
         "inputs": [{"from": "a", "grouping": "all", "stream": "side"}]},
        {"name": "c", "bolt": "ported:C", "inputs": [{"from": "b", "grouping": "custom",
                                                      "custom": "x:MyGrouping"}]},
    ]
    joined = "\n".join(result.unmapped)
    assert ("grouping CUSTOM x.MyGrouping not mapped: port it to Python as a "
            "CustomStreamGrouping (placeholder 'x:MyGrouping')") in joined
    assert "source 'nowhere' (unknown) not mapped" in joined
    assert "bolt" not in result.config
    for bolt in result.config["topology"]["bolts"]:
        assert set(bolt) <= {"name", "bolt", "parallelism", "inputs"}
        for inp in bolt.get("inputs", []):
            assert set(inp) <= {"from", "grouping", "fields", "stream", "custom"}


def test_every_storm_grouping_and_the_tick_period_are_converted() -> None:
    doc = flux([], bolts=[{"id": "a", "className": "x.A"}, {"id": "b", "className": "x.B"},
                          {"id": "c", "className": "x.C"}, {"id": "d", "className": "x.D"}],
               streams=[{"from": "ks", "to": "a", "grouping": {"type": "NONE"}},
                        {"from": "a", "to": "b",
                         "grouping": {"type": "PARTIAL_KEY", "args": ["user"]}},
                        {"from": "b", "to": "c", "grouping": {"type": "DIRECT"}},
                        {"from": "c", "to": "d", "grouping": {"type": "LOCAL_OR_SHUFFLE"}}],
               config={"topology.tick.tuple.freq.secs": 10, "topology.workers": 2})
    result = run(doc)
    bolts = {b["name"]: b.get("inputs") for b in result.config["topology"]["bolts"]}
    assert bolts == {"a": None,                    # NONE on the spout: the default input
                     "b": [{"from": "a", "grouping": "partial_key", "fields": ["user"]}],
                     "c": [{"from": "b", "grouping": "direct"}],
                     "d": [{"from": "c", "grouping": "local_or_shuffle"}]}
    assert result.config["topology"]["topology.tick.tuple.freq.secs"] == 10
    assert any(u.startswith("config.topology.workers 2 not mapped: Storm's worker processes")
               for u in result.unmapped)
    assert not [u for u in result.unmapped
                if "grouping" in u and not u.startswith("config.topology.workers")]


def test_single_bolt_on_the_spout_becomes_the_simple_form() -> None:
    doc = flux([], bolts=[{"id": "a", "className": "x.A"}],
               streams=[{"from": "ks", "to": "a", "grouping": {"type": "LOCAL_OR_SHUFFLE"}}])
    result = run(doc)
    assert result.config["bolt"] == "x:A"
    assert "bolts" not in result.config["topology"]


@pytest.mark.parametrize("doc,fragment", [
    ({"name": "t", "spouts": [{"id": "s", "className": "com.acme.Spout"}]},
     "no KafkaSpout under spouts (found: com.acme.Spout)"),
    ({"name": "t"}, "a Flux fragment with no spouts"),
    ({"components": [{"id": "c", "className": "x.C"}]}, "a Flux fragment with only components"),
    (["a"], "not a Flux topology: a Flux file is a YAML mapping"),
    ({"spout": {"topic": "t"}, "hosts": {}}, "looks like a storm-kafka-compat CONFIG already"),
    ({"server": {"port": 8080}}, "not a Flux topology: none of the Flux keys"),
    ({"name": "t", "topologySource": {"className": "a.B"}}, "built by Java code"),
])
def test_flux_errors(doc: Any, fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        convert_flux(yaml.safe_dump(doc))
    assert fragment in str(err.value)


def test_flux_missing_ref_cycle_and_bad_arity() -> None:
    doc = flux([])
    doc["components"][-1]["constructorArgs"][0] = {"ref": "nohosts"}
    with pytest.raises(ConfigError, match="'nohosts', which is not defined"):
        run(doc)
    doc = flux([{"id": "a", "className": "org.apache.storm.spout.SchemeAsMultiScheme",
                 "constructorArgs": [{"ref": "b"}]},
                {"id": "b", "className": "org.apache.storm.spout.SchemeAsMultiScheme",
                 "constructorArgs": [{"ref": "a"}]}], [{"name": "scheme", "ref": "a"}])
    with pytest.raises(ConfigError, match="cycle"):
        run(doc)
    doc = flux([])
    doc["components"][-1]["constructorArgs"] = [{"ref": "hosts"}, "topic"]
    with pytest.raises(ConfigError, match="SpoutConfig takes"):
        run(doc)


def test_flux_bad_yaml() -> None:
    with pytest.raises(ConfigError, match="not valid YAML"):
        convert_flux("name: [x\n", source="topo.yaml")


# --- .properties --------------------------------------------------------------------------------

def test_convert_properties_file() -> None:
    result = convert_file(str(DATA / "clicks.properties"))
    assert result.config == {
        "topology": {"name": "clicks", "topology.message.timeout.secs": 45,
                     "storm.zookeeper.servers": ["zk1.example.com", "zk2.example.com"]},
        "hosts": {"zk": "zk1.example.com:2181,zk2.example.com:2181/kafka",
                  "brokerZkPath": "/brokers"},
        "spout": {"topic": "clicks", "zkRoot": "/kafka-offsets", "id": "clicks-spout",
                  "ignoreZkOffsets": False, "startOffsetTime": -1, "fetchSizeBytes": 2097152,
                  "retryDelayMultiplier": 1.5, "zkServers": ["zk-offsets.example.com"],
                  "scheme": "string"},
        "spark": {"master": "local[4]", "conf": {"spark.sql.shuffle.partitions": "4"}},
        # Java client names become kafka-python's
        "kafka": {"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN",
                  "sasl_plain_password": "s3cret"},
        "bolt": "clicks.bolts:count_clicks",
    }
    assert result.unmapped[0].startswith("topology.workers not mapped")
    assert any("forceFromStart" in u for u in result.unmapped)
    assert len(result.unmapped) == 2
    job = job_config_from_dict(result.config)
    assert job.spout.ignore_zk_offsets is False and job.spout.retry_delay_multiplier == 1.5


def test_properties_static_hosts_bootstrap_and_prefixes() -> None:
    result = convert_properties(
        "kafka.staticHosts.1=k2:9093\nkafka.staticHosts.0=k1:9092\n"
        "kafka.useTopicNameForPartitionPathId=true\n"
        "kafka.spout.topic=t\nkafka.spout.zkRoot=\nkafka.id=i\n"
        "kafka.scheme=storm.kafka.StringKeyValueScheme\nkafka.ignoreZkOffsets=TRUE\n"
        "kafka.topic.wildcard.match=false\ntopology.max.spout.pending=10\n"
        "storm.zookeeper.auth.payload=u:p\nacl=true\nkafka.client.ssl.cafile=/ca.pem\n"
        "spark.tasks=2\nspark.app.name=x\n")
    c = result.config
    assert c["hosts"] == {"static": {0: "k1:9092", 1: "k2:9093"},
                          "useTopicNameForPartitionPathId": True}
    assert c["spout"] == {"topic": "t", "zkRoot": "", "id": "i", "scheme": "string_key_value",
                          "ignoreZkOffsets": True}
    assert c["topology"] == {"kafka.topic.wildcard.match": False,
                             "topology.max.spout.pending": 10,
                             "storm.zookeeper.auth.payload": "u:p", "acl": True}
    assert c["kafka"] == {"ssl_cafile": "/ca.pem"}
    assert c["spark"] == {"tasks": 2, "appName": "x"}
    assert result.unmapped == []


@pytest.mark.parametrize("text,key", [
    ("kafka.fetchSizeBytes=lots", "kafka.fetchSizeBytes"),
    ("kafka.ignoreZkOffsets=yes", "kafka.ignoreZkOffsets"),
    ("kafka.retryDelayMultiplier=x", "kafka.retryDelayMultiplier"),
    ("kafka.staticHosts.first=k:1", "kafka.staticHosts.first"),
    ("topology.message.timeout.secs=30s", "topology.message.timeout.secs"),
])
def test_properties_type_errors(text: str, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        convert_properties(text)
    assert err.value.key == key


def test_properties_unknown_scheme_class_is_reported() -> None:
    result = convert_properties("kafka.scheme=com.acme.AvroScheme\n")
    assert result.config["spout"]["scheme"] == "com.acme:AvroScheme"
    assert "not mapped" in result.unmapped[0]


def test_filter_with_properties_input_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--filter applies to Flux"):
        convert_file(str(DATA / "clicks.properties"), filter_path=str(DATA / "dev.properties"))


def test_unreadable_file() -> None:
    with pytest.raises(ConfigError, match="cannot read file"):
        convert_file("/nonexistent/topo.yaml")


@pytest.mark.parametrize("name,text,expected", [
    ("a.properties", "name: x", "properties"),
    ("a.yaml", "a=b", "flux"),
    ("a.yml", "a=b", "flux"),
    ("topo", "name: x\nspouts: []\n", "flux"),
    ("topo", "kafka.topic=x\n", "properties"),
    ("topo", "a: [\n", "properties"),
])
def test_detect_format(name: str, text: str, expected: str) -> None:
    assert detect_format(name, text) == expected


@pytest.mark.parametrize("cls,expected", [
    ("com.example.bolts.SplitBolt", "com.example.bolts:SplitBolt"),
    ("SplitBolt", "ported:SplitBolt"),
    ("com.example.Outer$Inner", "com.example:Outer_Inner"),
])
def test_python_placeholder(cls: str, expected: str) -> None:
    assert python_placeholder(cls) == expected


@pytest.mark.parametrize("value,expected", [
    ("key_value", "key_value"), ("string", "string"),
    ("myjob.schemes:parse", "myjob.schemes:parse"),
    ("StringScheme", "string"), ("backtype.storm.spout.RawMultiScheme", "raw"),
])
def test_properties_scheme_values(value: str, expected: str) -> None:
    result = convert_properties(f"kafka.scheme={value}\n")
    assert result.config["spout"]["scheme"] == expected
    assert result.unmapped == []


# --- storm-kafka-client components ----------------------------------------------------------

CLIENT = "org.apache.storm.kafka.spout."


def client_flux(builder: dict, *extra: dict, config_ref: str = "cfg") -> str:
    doc = {"name": "c", "components": [
        *extra, builder,
        {"id": "cfg", "className": CLIENT + "KafkaSpoutConfig",
         "constructorArgs": [{"ref": "b"}]}],
        "spouts": [{"id": "ks", "className": CLIENT + "KafkaSpout",
                    "constructorArgs": [{"ref": config_ref}]}]}
    return yaml.safe_dump(doc)


def test_client_builder_defaults_to_the_record_translator_shape() -> None:
    result = convert_flux(client_flux({
        "id": "b", "className": CLIENT + "KafkaSpoutConfig$Builder",
        "constructorArgs": ["k1:9092", "orders"],
        "configMethods": [{"name": "setProp", "args": ["group.id", "g"]},
                          {"name": "setProcessingGuarantee",
                           "args": ["KafkaSpoutConfig.ProcessingGuarantee.AT_MOST_ONCE"]},
                          {"name": "setMetricsTimeBucketSizeInSecs", "args": [100]}]}))
    assert result.config["kafkaSpout"] == {"bootstrapServers": "k1:9092", "topics": ["orders"],
                                           "groupId": "g", "processingGuarantee": "AT_MOST_ONCE"}
    assert result.config["spout"] == {"scheme": "record_translator",
                                      "metricsTimeBucketSizeInSecs": 100}
    job = job_config_from_dict(dict(result.config, topology={"name": "c"}))
    assert job.spout.scheme == "record_translator" and job.spout.topic == "orders"


def test_client_builder_factory_pattern_and_old_four_argument_form() -> None:
    pattern = {"id": "p", "className": "java.util.regex.Pattern", "factory": "compile",
               "constructorArgs": ["orders-.*"]}
    result = convert_flux(client_flux({
        "id": "b", "className": CLIENT + "KafkaSpoutConfig", "factory": "builder",
        "constructorArgs": ["k1:9092", {"ref": "p"}],
        "properties": [{"name": "groupId", "value": "g"}]}, pattern, config_ref="b"))
    assert result.config["kafkaSpout"]["topicPattern"] == "orders-.*"
    assert result.config["kafkaSpout"]["groupId"] == "g"
    old = convert_flux(client_flux({
        "id": "b", "className": CLIENT + "KafkaSpoutConfig$Builder",
        "constructorArgs": ["k1:9092",
                            "org.apache.kafka.common.serialization.ByteArrayDeserializer",
                            "org.apache.kafka.common.serialization.ByteArrayDeserializer",
                            ["a", "b"]]}))
    assert old.config["kafkaSpout"]["topics"] == ["a", "b"]
    assert any("key.deserializer=org.apache.kafka.common.serialization.ByteArrayDeserializer"
               in u for u in old.unmapped)


def test_client_default_record_translator_component_and_bad_arguments() -> None:
    translator = {"id": "t", "className": CLIENT + "DefaultRecordTranslator"}
    result = convert_flux(client_flux({
        "id": "b", "className": CLIENT + "KafkaSpoutConfig$Builder",
        "constructorArgs": ["k1:9092", ["orders"]],
        "configMethods": [{"name": "setRecordTranslator", "args": [{"ref": "t"}]},
                          {"name": "setGroupId", "args": ["g"]}]}, translator))
    assert result.config["spout"] == {"scheme": "record_translator"}
    with pytest.raises(ConfigError, match="KafkaSpoutConfig\\$Builder takes"):
        convert_flux(client_flux({"id": "b", "className": CLIENT + "KafkaSpoutConfig$Builder",
                                  "constructorArgs": ["k1:9092"]}))
    with pytest.raises(ConfigError, match="storm-kafka-client's KafkaSpout takes one ref to a "
                                          "KafkaSpoutConfig component; got 'x'"):
        convert_flux(yaml.safe_dump({"name": "c", "spouts": [
            {"id": "ks", "className": CLIENT + "KafkaSpout", "constructorArgs": ["x"]}]}))


def test_client_enable_auto_commit_reaches_validation_as_in_storm() -> None:
    result = convert_flux(client_flux({
        "id": "b", "className": CLIENT + "KafkaSpoutConfig$Builder",
        "constructorArgs": ["k1:9092", "orders"],
        "configMethods": [{"name": "setGroupId", "args": ["g"]},
                          {"name": "setProp", "args": [{"enable.auto.commit": True}]}]}))
    assert result.config["kafkaSpout"]["consumer"] == {"enable.auto.commit": True}
    with pytest.raises(ConfigError, match="enable.auto.commit"):
        job_config_from_dict(dict(result.config, topology={"name": "c"}))


def test_argument_errors_name_components_not_internal_values() -> None:
    doc = {"name": "t", "components": [
        {"id": "gpi", "className": "com.acme.PartitionInfo"},
        {"id": "hosts", "className": "org.apache.storm.kafka.StaticHosts",
         "constructorArgs": [{"ref": "gpi"}]},
        {"id": "sc", "className": "org.apache.storm.kafka.SpoutConfig",
         "constructorArgs": [{"ref": "hosts"}, "t", "/r", "i"]}],
        "spouts": [{"id": "ks", "className": "org.apache.storm.kafka.KafkaSpout",
                    "constructorArgs": [{"ref": "sc"}]}]}
    with pytest.raises(ConfigError) as err:
        convert_flux(yaml.safe_dump(doc))
    text = str(err.value)
    assert "StaticHosts takes one GlobalPartitionInformation (a ref), got " \
           "components[gpi] of class com.acme.PartitionInfo" in text
    assert "Resolved(" not in text
