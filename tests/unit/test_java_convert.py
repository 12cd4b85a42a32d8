"""Java topology sources into CONFIG (storm_kafka_compat.java): topologies written in the
styles real projects use, each converted to the CONFIG a careful human would write."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List

import pytest

from storm_kafka_compat.cli.main import main
from storm_kafka_compat.config import job_config_from_dict
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.java import JavaConversion, convert_java

DATA = Path(__file__).resolve().parent.parent / "data" / "java"


def one(path: Path, **kw: Any) -> JavaConversion:
    found = convert_java([str(path)], **kw)
    assert len(found) == 1, [c.source for c in found]
    assert found[0].error is None, found[0].error
    return found[0]


def lines_about(conv: JavaConversion, text: str) -> List[str]:
    return [u for u in conv.unmapped if text in u]


# --- four topologies, four styles -------------------------------------------------------------

def test_constants_class_properties_lookup_and_args() -> None:
    """org.apache.storm.kafka, a constants class in another file, a Properties file read
    at run time, args[0] as the topology name, SpoutConfig set field by field."""
    conv = one(DATA / "legacy_constants", properties={"kafka.topic": "clicks",
                                                      "args.0": "click-counter"})
    assert conv.config == {
        "spout": {"topic": "clicks", "zkRoot": "/storm-offsets", "id": "clicks-spout",
                  "scheme": "string", "startOffsetTime": -2, "fetchSizeBytes": 2097152,
                  "zkServers": ["zk1.acme.net", "zk2.acme.net"], "zkPort": 2181,
                  "stateUpdateIntervalMs": 5000},
        "hosts": {"zk": "zk1.acme.net:2181,zk2.acme.net:2181", "brokerZkPath": "/kafka/brokers"},
        "topology": {
            "name": "click-counter",
            "topology.max.spout.pending": 1000,        # getProperty's default, typed
            "topology.message.timeout.secs": 60,
            "bolts": [
                {"name": "parse", "bolt": "com.acme.clicks.bolts:ParseBolt", "parallelism": 4},
                {"name": "count", "bolt": "com.acme.clicks.bolts:CountBolt", "parallelism": 2,
                 "inputs": [{"from": "parse", "grouping": "fields", "fields": ["page"]}]}]},
        "spark": {"tasks": 4},
    }
    assert conv.source == "ClickTopology.java:38" and conv.spout_name == "clicks"
    assert lines_about(conv, "port the bolt to Python (placeholder 'com.acme.clicks.bolts:Parse")
    assert lines_about(conv, "not mapped: Storm's worker processes have no equal here")
    job_config_from_dict(conv.config)          # valid once the two values are given


def test_without_filter_the_run_time_values_are_named_with_file_and_line() -> None:
    conv = one(DATA / "legacy_constants")
    assert conv.config["spout"]["topic"] == "${kafka.topic}"
    assert conv.config["topology"]["name"] == "${args.0}"
    assert conv.config["topology"]["topology.max.spout.pending"] == "${max.pending}"
    assert lines_about(conv, 'spout.topic: ${kafka.topic} is read at run time by '
                             'ClickTopology.java:26 `props.getProperty("kafka.topic")`; give it '
                             'with --filter FILE (kafka.topic=...)')
    assert lines_about(conv, "topology.name: ${args.0} is read at run time by "
                             "ClickTopology.java:47 `args[0]`")
    assert lines_about(conv, "(the code's default: '1000')")


def test_storm_09_random_id_helper_method_and_forcefromstart() -> None:
    """storm.kafka/backtype.storm, a helper building the SpoutConfig, UUID.randomUUID()
    as the id, zkRoot from the topic, args with defaults in ternaries."""
    conv = one(DATA / "storm09_uuid" / "WordCountKafka.java", properties={"args.0": "wc"})
    assert conv.config["spout"] == {
        "topic": "sentences", "zkRoot": "/kafkastorm/sentences", "id": "${spout.id}",
        "scheme": "string", "ignoreZkOffsets": True, "startOffsetTime": -2,
        "maxOffsetBehind": 10000}
    assert conv.config["hosts"] == {"zk": "localhost:2181"}   # args[1]'s default
    assert conv.config["topology"]["name"] == "wc"    # StormSubmitter's, not LocalCluster's
    assert [b["bolt"] for b in conv.config["topology"]["bolts"]] == \
        ["storm.starter:SplitSentence", "storm.starter:WordCount"]
    assert "inputs" not in conv.config["topology"]["bolts"][0]   # localOrShuffle on the spout
    assert lines_about(conv, "spout.id: WordCountKafka.java:18 `UUID.randomUUID()` is random, "
                             "new on every run; written as ${spout.id}")
    assert conv.evidence["spout.id"].kind == "random"
    kinds = {t.kind: t for t in conv.traps()}
    # maxOffsetBehind counts from the startOffsetTime offset, here the log start: no start-up
    # trap; but 10000 is below a batch's 100000 in flight: failures would be dropped
    assert set(kinds) == {"per_run_id", "ignore_zk_offsets", "topology_id", "zk_root_topic",
                          "max_offset_behind_in_flight", "offsets_zookeeper", "bolt_tasks"}
    assert "WordCountKafka.java:18" in (kinds["per_run_id"].where or "")
    assert "--zk-root /kafkastorm/sentences" in kinds["per_run_id"].fix


def test_storm_kafka_client_builder_chain_in_helpers() -> None:
    """storm-kafka-client: a builder chain with varargs topics, Kafka constants, a static
    import of the strategy, TimeUnit, a retry, built in a helper called by another."""
    conv = one(DATA / "client_builder", env={"KAFKA_BOOTSTRAP": "k1:9092,k2:9092"})
    assert conv.config == {
        "kafkaSpout": {
            "bootstrapServers": "k1:9092,k2:9092", "topics": ["orders", "refunds"],
            "groupId": "orders-storm", "firstPollOffsetStrategy": "UNCOMMITTED_EARLIEST",
            "processingGuarantee": "AT_LEAST_ONCE", "offsetCommitPeriodMs": 10000,
            "maxUncommittedOffsets": 250000,
            "retry": {"initialDelay": {"length": 1, "timeUnit": "SECONDS"},
                      "delayPeriod": {"length": 500, "timeUnit": "MILLISECONDS"},
                      "maxRetries": 10, "maxDelay": {"length": 60, "timeUnit": "SECONDS"}},
            "consumer": {"max.poll.records": 500, "session.timeout.ms": 30000}},
        "spout": {"scheme": "record_translator"},
        "topology": {"name": "orders", "topology.message.timeout.secs": 120},
        "spark": {"tasks": 3},
        "bolt": "com.example.orders:EnrichBolt",
    }
    job_config_from_dict(conv.config)
    assert [t.kind for t in conv.traps()] == ["topology_id", "bolt_tasks"]


def test_static_hosts_custom_scheme_and_two_spouts_give_two_configs() -> None:
    """StaticHosts over GlobalPartitionInformation, typesafe Config lookups, a time-based
    id, a custom Scheme class, and two KafkaSpouts in one topology."""
    events, keys = convert_java([str(DATA / "static_two_spouts")])
    assert events.spout_name == "events" and keys.spout_name == "keys"
    static = {0: "kafka1.audit.io:9092", 1: "kafka2.audit.io:9093"}
    assert events.config["spout"] == {"topic": "${audit.topic}", "zkRoot": "/audit",
                                      "id": "${spout.id}", "scheme": "io.audit:AvroAuditScheme",
                                      "ignoreZkOffsets": True}
    assert events.config["hosts"] == {"static": static} == keys.config["hosts"]
    assert keys.config["spout"] == {"topic": "audit-keys", "zkRoot": "/audit",
                                    "id": "audit-keys", "scheme": "string_key_value",
                                    "maxOffsetBehind": 5000}
    assert events.config["spark"] == {"tasks": 2} and "spark" not in keys.config
    assert events.evidence["spout.id"].kind == "time"
    assert events.evidence["spout.id"].expression == \
        '"audit-events-" + System.currentTimeMillis()'
    scheme_trap = next(t for t in events.traps() if t.kind == "custom_scheme")
    assert "io.audit.AvroAuditScheme" in scheme_trap.consequence
    # each CONFIG keeps the bolts fed by its own spout and names the other's stream
    join = events.config["topology"]["bolts"][0]
    assert join["inputs"] == [{"from": "spout", "grouping": "fields", "fields": ["key"]}]
    assert lines_about(keys, "streams[events --> join]: source 'events' (another spout)")
    assert [b["name"] for b in keys.config["topology"]["bolts"]] == ["join", "store"]


# --- expressions --------------------------------------------------------------------------

TEMPLATE = """
package t;
import org.apache.storm.kafka.*;
import org.apache.storm.topology.TopologyBuilder;
import static t.Names.*;
interface Names {{ String BASE = "/" + "offsets"; int KB = 1 << 10; }}
public class T {{
    static final String APP = "app";
    private static String root(String name) {{ return BASE + "/" + name; }}
    public static void main(String[] args) throws Exception {{
        {body}
        SpoutConfig c = new SpoutConfig(new ZkHosts("zk:2181"), "t", "/r", "i");
        c.{field} = {expr};
        new TopologyBuilder().setSpout("s", new KafkaSpout(c));
    }}
}}
"""


@pytest.mark.parametrize("body, field, expr, expected", [
    ("", "zkRoot", 'root(APP + "-" + 2)', "/offsets/app-2"),
    ("", "fetchSizeBytes", "64 * KB + 0x10", 65552),
    ("", "fetchSizeBytes", "1_048_576", 1048576),
    ("", "id", '"a" + true + 1.5', "atrue1.5"),
    ("String x = APP; x += \"-z\";", "id", "x", "app-z"),
    ("", "stateUpdateIntervalMs", "TimeUnit.SECONDS.toMillis(3)", 3000),
    ("", "startOffsetTime", "kafka.api.OffsetRequest.LatestTime()", -1),
    ("", "maxOffsetBehind", "Long.MAX_VALUE", 2**63 - 1),
    ("", "id", 'String.format("%s-%d", APP, 7)', "app-7"),
    ("", "id", '"""\n            text\n            """.trim()', "text"),
    ("", "id", 'APP.toUpperCase().concat("\\u0021")', "APP!"),
    ("", "zkServers", 'Arrays.asList("a", "b")', ["a", "b"]),
    ("", "ignoreZkOffsets", "Boolean.parseBoolean(\"true\")", True),
    ("", "id", 'System.getProperty("spout.id", "dflt")', "${spout.id}"),
    ("", "id", 'System.getenv("SPOUT_ID")', "${ENV-SPOUT_ID}"),
    ("", "id", "someService().lookup()", "${spout.id}"),
    ("", "id", '"x-" + new java.util.Date().getTime()', "${spout.id}"),
])
def test_expressions(tmp_path: Path, body: str, field: str, expr: str, expected: Any) -> None:
    (tmp_path / "T.java").write_text(TEMPLATE.format(body=body, field=field, expr=expr))
    conv = one(tmp_path)
    assert conv.config["spout"][field] == expected


def test_a_value_given_by_the_filter_wins_over_the_code_default(tmp_path: Path) -> None:
    (tmp_path / "T.java").write_text(TEMPLATE.format(
        body="", field="id", expr='System.getProperty("spout.id", "dflt")'))
    assert one(tmp_path, properties={}).config["spout"]["id"] == "dflt"
    assert one(tmp_path, properties={"spout.id": "given"}).config["spout"]["id"] == "given"


def test_a_syntax_error_is_read_around_and_named(tmp_path: Path) -> None:
    conv = one(DATA / "broken")
    # the grammar joins lines 10 and 11 into one statement: neither value is guessed
    assert conv.config["spout"] == {"topic": "logs", "zkRoot": "/logs", "id": "logs-reader"}
    assert any(u.endswith("Broken.java:10: syntax error; the statement there is not read: set "
                          "what it sets by hand.") for u in conv.unmapped)
    assert lines_about(conv, "no TopologyBuilder.setSpout of this spout was found")


def test_no_kafka_spout_is_an_error_naming_the_classes_looked_for(tmp_path: Path) -> None:
    (tmp_path / "A.java").write_text("class A { void m() { int x = 1; } }")
    with pytest.raises(ConfigError, match="no KafkaSpout is built in 1 Java file"):
        convert_java([str(tmp_path)])
    with pytest.raises(ConfigError, match="does not exist"):
        convert_java([str(tmp_path / "missing")])


# --- the command ----------------------------------------------------------------------------

def test_cli_converts_a_directory_into_one_config_per_spout(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["config", "convert", str(DATA / "static_two_spouts"), "--output-dir",
                 str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["audit-events.yaml", "audit-keys.yaml"]
    err = capsys.readouterr().err
    assert "trap: AuditTopology.java:36: spout.id (AuditTopology.java:26" in err
    assert main(["config", "convert", str(DATA / "static_two_spouts"), "-o",
                 str(tmp_path / "x.yaml")]) == 2
    assert "2 KafkaSpouts were found: use --output-dir DIR" in capsys.readouterr().err


def test_cli_stdout_and_filter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flt = tmp_path / "prod.properties"
    flt.write_text("kafka.topic=clicks\nargs.0=click-counter\n")
    assert main(["config", "convert", str(DATA / "legacy_constants"), "--filter",
                 str(flt)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("# converted from ClickTopology.java:38 by ")
    assert "  topic: clicks\n" in captured.out and "  name: click-counter\n" in captured.out
    assert "does not validate" not in captured.err
    assert "trap: topology.id: topology.id is unset" in captured.err
    assert "e.g. `topology: {id: click-counter-compat}`" in captured.err


def test_kafka_bolt_is_mapped_and_a_missing_submission_is_named() -> None:
    conv = one(DATA / "kafka_bolt")
    assert conv.config["topology"] == {"name": "${topology.name}", "bolts": [
        {"name": "forward", "bolt": "org.apache.storm.kafka.bolt.KafkaBolt", "parallelism": 2,
         "properties": {"producerProperties": {"bootstrap.servers": "k:9092", "acks": "1"},
                        "topicSelector": "DefaultTopicSelector", "topic": "out",
                        "boltKeyField": "key", "boltMessageField": "str"}}]}
    assert lines_about(conv, "no StormSubmitter.submitTopology of this topology was found; "
                             "topology.name written as ${topology.name}")


# --- sources in other languages ---------------------------------------------------------------

def test_scala_and_clojure_sources_are_named_not_read_as_properties(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 34 item 4: alone, a Scala or Clojure file is an error of one line naming its
    language (exit 2, nothing written); among files that convert it is reported and the
    others convert (exit 0)."""
    scala = str(DATA / "scala_clojure" / "WordCount.scala")
    clj = str(DATA / "scala_clojure" / "topology.clj")
    for path, language in ((scala, "Scala"), (clj, "Clojure")):
        assert main(["config", "convert", path]) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert err.strip().splitlines() == [
            f"Error: {path} is a {language} source, which config convert does not read (it "
            f"reads Java sources, Flux YAML and .properties): write its CONFIG by hand "
            f"(docs/configuration.md)."]
    assert main(["config", "convert", scala, str(DATA / "kafka_bolt")]) == 0
    out, err = capsys.readouterr()
    assert "# converted from ForwardTopology.java" in out
    assert f"convert: {scala} is a Scala source, which config convert does not read" in err
    # a directory of them: no .java file, and what it holds
    assert main(["config", "convert", str(DATA / "scala_clojure")]) == 2
    assert "only sources in other languages (1 Clojure, 1 Scala file(s))" in \
        capsys.readouterr().err


# --- spouts reached through an instance (issue 34 item 1) -------------------------------------

def test_instance_call_new_topology_run_main() -> None:
    """`new PageViewTopology().runMain(args)`: instance methods run on the object, its
    constructors (one calling `this(...)`) set the field the builder reads."""
    conv = one(DATA / "instance_call")
    assert conv.config == {
        "kafkaSpout": {"bootstrapServers": "kafka1.example.com:9092", "topics": ["pageviews"],
                       "groupId": "pageviews-storm",
                       "firstPollOffsetStrategy": "UNCOMMITTED_EARLIEST"},
        "spout": {"scheme": "record_translator"},
        "topology": {"name": "pageviews", "topology.message.timeout.secs": 90},
        "spark": {"tasks": 2}, "bolt": "com.example.pageviews:CountBolt"}
    assert conv.source == "PageViewTopology.java:43" and conv.spout_name == "views"


def test_builder_chain_and_a_method_called_on_an_object_the_code_made() -> None:
    """`new SpoutBuilder().brokers(..).topic(..).build()`, a builder of the project's own
    (fields set by its fluent setters, one with an initialiser), handed to
    `wiring.addSpout(...)` on an object main created."""
    conv = one(DATA / "builder_chain")
    assert conv.config["spout"] == {"topic": "clicks", "zkRoot": "/clicks",
                                    "id": "clicks-reader", "scheme": "string",
                                    "zkServers": ["zk1.example.com"], "zkPort": 2181}
    assert conv.config["hosts"] == {"zk": "zk1.example.com:2181"}
    assert conv.config["spark"] == {"tasks": 3}
    assert conv.config["bolt"] == "com.example.clicks:SessionBolt"
    assert conv.config["topology"]["name"] == "clickstream"
    job_config_from_dict(conv.config)


def test_parent_class_in_the_same_directory_holds_bootstrap_and_retry() -> None:
    """A subclass given alone: its directory's files are read for the parent class
    (bootstrap servers, retry, group id set by `super(...)`, an overridden method)."""
    conv = one(DATA / "parent_class" / "LedgerTopology.java")
    assert conv.config["kafkaSpout"] == {
        "bootstrapServers": "broker1.ledger.example:9092,broker2.ledger.example:9092",
        "topics": ["ledger-entries"], "groupId": "ledger-storm",
        "offsetCommitPeriodMs": 5000,               # the subclass's override
        "retry": {"initialDelay": {"length": 2, "timeUnit": "SECONDS"},
                  "delayPeriod": {"length": 100, "timeUnit": "MILLISECONDS"},
                  "maxRetries": 5, "maxDelay": {"length": 30, "timeUnit": "SECONDS"}}}
    assert conv.config["topology"]["name"] == "ledger"
    # the parent's file alone builds no topology: it is not run for one
    with pytest.raises(ConfigError, match="the code read builds none"):
        convert_java([str(DATA / "parent_class" / "BaseKafkaTopology.java")])


def test_the_directory_advice_only_when_a_class_of_the_project_is_missing(
        tmp_path: Path) -> None:
    child = (DATA / "parent_class" / "LedgerTopology.java").read_text()
    (tmp_path / "LedgerTopology.java").write_text(child)     # without its parent
    conv, = convert_java([str(tmp_path / "LedgerTopology.java")])
    assert lines_about(conv, "no file read declares (BaseKafkaTopology (the parent of "
                             "LedgerTopology)): give the directory that holds them")
    # what the parent gave is placeholders with the line of the call, not an abort
    assert conv.error is None
    assert conv.config["kafkaSpout"]["bootstrapServers"] == "${kafkaSpout.bootstrapServers}"
    assert lines_about(conv, "kafkaSpout.bootstrapServers: LedgerTopology.java:22 "
                             "`spoutConfig(\"ledger-entries\")` could not be resolved")
    (tmp_path / "LedgerTopology.java").write_text(
        "package a; public class T { public static void main(String[] a) {"
        " new org.apache.storm.topology.TopologyBuilder().setSpout(\"s\", new Other()); } }")
    with pytest.raises(ConfigError) as err:
        convert_java([str(tmp_path)])
    assert "give the directory" not in str(err.value)


# --- a value known only at run time (issue 34 item 2) -----------------------------------------

def test_reflection_scheme_is_a_placeholder_with_its_line() -> None:
    conv = one(DATA / "runtime_values" / "AuditTopology.java")
    assert conv.config["spout"] == {"topic": "audit", "zkRoot": "/audit", "id": "audit-reader",
                                    "scheme": "${spout.scheme}",
                                    "zkServers": ["zk1.audit.example"]}
    assert lines_about(conv, "spout.scheme: AuditTopology.java:18 "
                             "`Class.forName(schemeClass).newInstance()` could not be resolved; "
                             "written as ${spout.scheme}")
    assert not lines_about(conv, "give the directory")     # java.lang.Class is no project class
    conv = one(DATA / "runtime_values" / "AuditTopology.java",
               properties={"spout.scheme": "string", "args.0": "audit"})
    assert conv.config["spout"]["scheme"] == "string"
    job_config_from_dict(conv.config)


def test_a_spout_config_given_as_a_parameter_is_placeholders_with_its_line() -> None:
    conv = one(DATA / "runtime_values" / "MetricsWiring.java")
    assert conv.config["kafkaSpout"] == {"bootstrapServers": "${kafkaSpout.bootstrapServers}",
                                         "topics": ["${kafkaSpout.topics[0]}"],
                                         "groupId": "${kafkaSpout.groupId}"}
    assert lines_about(conv, "kafkaSpout.bootstrapServers: MetricsWiring.java:10 "
                             "`KafkaSpoutConfig<String, String> spoutConfig` could not be "
                             "resolved")
    assert conv.config["bolt"] == "com.example.metrics:StoreBolt"


def _all_sources() -> List[Path]:
    """Every Java directory and every file of tests/data (Java, Scala, Flux, .properties)."""
    dirs = sorted(p for p in DATA.iterdir() if p.is_dir())
    files = sorted(p for p in DATA.parent.rglob("*") if p.is_file() and p.suffix != ".md")
    return dirs + files


@pytest.mark.parametrize("path", _all_sources(), ids=lambda p: str(p.relative_to(DATA.parent)))
def test_no_output_shows_an_internal_token_or_a_python_repr(
        path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Whatever a file gives (a CONFIG, placeholders, an error), what the user reads never
    holds an internal token (${?N}) or a Python repr of the converter's values."""
    import re
    bad = re.compile(r"\$\{\?\d+\}|\b(Resolved|JObject|ClassRef|MainArgs|SpoutDecl|BoltDecl|"
                     r"Submission|Unknown|Origin)\(")
    for extra in ([], ["--filter", str(tmp_path / "empty.properties")]):
        (tmp_path / "empty.properties").write_text("")
        main(["config", "convert", str(path), "--output-dir", str(tmp_path / "out"), *extra])
        out, err = capsys.readouterr()
        written = "".join(p.read_text() for p in (tmp_path / "out").glob("*.yaml")) \
            if (tmp_path / "out").is_dir() else ""
        for text in (out, err, written):
            assert not bad.search(text), bad.search(text)


# --- settings kept, and a Java source with its .properties (issue 34 items 3 and 5) -----------

HDP = DATA / "hdp_properties"


def test_security_protocol_default_zk_servers_from_args_in_file_defaults_and_enum_keys() -> None:
    conv = one(HDP / "EventsTopology.java")       # alone: Keys.java, BrokerKeys.java beside it
    assert conv.config["kafka"] == {"security_protocol": "SASL_PLAINTEXT",
                                    "sasl_mechanism": "GSSAPI"}
    assert lines_about(conv, "securityProtocol PLAINTEXTSASL written as "
                             "kafka.security_protocol SASL_PLAINTEXT")
    assert conv.config["spout"]["zkServers"] == "${args.1}"          # not []
    assert lines_about(conv, "spout.zkServers: ${args.1} is read at run time by "
                             "EventsTopology.java:29 `args[1]`")
    # the keys of an enum (key(), toString()) and an interface of other files, not
    # ${Keys.KAFKA_TOPIC}
    assert conv.config["spout"]["topic"] == "${kafka.topic}"
    assert conv.config["spout"]["zkRoot"] == "${kafka.zkRoot}"
    assert conv.config["hosts"] == {"zk": "${kafka.broker.zk}"}
    # in-file defaults: getProperty(k, d) and Optional.ofNullable(...).orElse(d)
    assert lines_about(conv, "(the code's default: '/events-offsets')")
    assert lines_about(conv, "`props.getProperty(\"max.pending\")` (the code's default: '500')")
    assert "offsets_zookeeper" not in [t.kind for t in conv.traps()]


@pytest.mark.parametrize("protocol, expected", [
    ("SASL_SSL", {"security_protocol": "SASL_SSL", "sasl_mechanism": "GSSAPI"}),
    ("SSL", {"security_protocol": "SSL"}),
    ("PLAINTEXT", None),
])
def test_security_protocols(tmp_path: Path, protocol: str, expected: Any) -> None:
    (tmp_path / "T.java").write_text(TEMPLATE.format(body="", field="securityProtocol",
                                                     expr=f'"{protocol}"'))
    assert one(tmp_path).config.get("kafka") == expected


def test_an_unknown_security_protocol_stops_the_spout_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "T.java").write_text(TEMPLATE.format(body="", field="securityProtocol",
                                                     expr='"KERBEROS"'))
    conv, = convert_java([str(tmp_path)])
    assert conv.error is not None and "securityProtocol 'KERBEROS' is not a Kafka security " \
        "protocol; use one of PLAINTEXT, SSL, PLAINTEXTSASL" in conv.error


def test_properties_pairing_fills_every_placeholder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`config convert Topology.java --filter app.properties`: every value the code reads
    from its properties is filled, defaults the file does not give from the code."""
    out = tmp_path / "events.yaml"
    assert main(["config", "convert", str(HDP / "EventsTopology.java"), "--filter",
                 str(HDP / "app.properties"), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    text = out.read_text()
    assert "${" not in text and "is read at run time" not in err
    conv = one(HDP, properties={k: v for k, v in (
        line.split("=", 1) for line in (HDP / "app.properties").read_text().splitlines())})
    assert conv.config["spout"] == {"topic": "events", "zkRoot": "/events-offsets",
                                    "id": "events-reader", "scheme": "string",
                                    "zkServers": "zk1.hdp.example,zk2.hdp.example",
                                    "zkPort": 2181}
    assert conv.config["spark"] == {"tasks": 4}
    assert conv.config["topology"]["topology.max.spout.pending"] == 500
    job = job_config_from_dict(conv.config)
    assert job.spout.zk_servers == ("zk1.hdp.example", "zk2.hdp.example")


def test_a_properties_file_given_beside_the_java_source_is_its_filter(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "events.yaml"
    assert main(["config", "convert", str(HDP / "EventsTopology.java"),
                 str(HDP / "app.properties"), "-o", str(out)]) == 0
    assert "${" not in out.read_text()
    assert "app.properties: read as the values the Java code reads" in capsys.readouterr().err


def test_a_key_constant_of_a_file_not_given_asks_for_its_directory(tmp_path: Path) -> None:
    (tmp_path / "EventsTopology.java").write_text((HDP / "EventsTopology.java").read_text())
    conv = one(tmp_path / "EventsTopology.java")
    assert lines_about(conv, "no file read declares (com.example.events.BrokerKeys, "
                             "com.example.events.Keys): give the directory that holds them")


def test_an_instance_method_nobody_calls_runs_on_a_new_object(tmp_path: Path) -> None:
    """A root that is an instance method reads the fields its class's constructor set."""
    (tmp_path / "W.java").write_text("""
package w;
import org.apache.storm.kafka.*;
import org.apache.storm.topology.TopologyBuilder;
public class W {
    private final String topic;
    public W() { this.topic = "wired"; }
    public void wire(TopologyBuilder builder) {
        builder.setSpout("s", new KafkaSpout(new SpoutConfig(new ZkHosts("zk:2181"), topic,
                                                             "/w", "w-id")));
    }
}
""")
    assert one(tmp_path).config["spout"]["topic"] == "wired"


TIMED = '''package acme.timed;

import org.apache.storm.Config;
import org.apache.storm.StormSubmitter;
import org.apache.storm.kafka.*;
import org.apache.storm.spout.SchemeAsMultiScheme;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.tuple.Fields;

public class TimedTopology {
    public static void main(String[] args) throws Exception {
        SpoutConfig cfg = new SpoutConfig(new ZkHosts("zk:2181"), "clicks", "/offsets", "timed");
        cfg.scheme = new SchemeAsMultiScheme(new StringScheme());
        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("kafka", new KafkaSpout(cfg), 1);
        builder.setBolt("parse", new Parse(), 2).noneGrouping("kafka");
        builder.setBolt("count", new Count(), 4).partialKeyGrouping("parse", new Fields("user"))
               .addConfiguration(Config.TOPOLOGY_TICK_TUPLE_FREQ_SECS, 5);
        builder.setBolt("route", new Route(), 1).customGrouping("count", new UserGrouping());
        builder.setBolt("task", new Task(), 3).directGrouping("route");
        Config conf = new Config();
        conf.put(Config.TOPOLOGY_TICK_TUPLE_FREQ_SECS, 60);
        StormSubmitter.submitTopology("timed", conf, builder.createTopology());
    }
}
'''


def test_ticks_and_every_grouping_from_java(tmp_path: Path) -> None:
    """addConfiguration(TOPOLOGY_TICK_TUPLE_FREQ_SECS) on a declarer and in the topology's
    Config; none, partial-key, custom and direct groupings."""
    src = tmp_path / "TimedTopology.java"
    src.write_text(TIMED)
    conv = one(src)
    topology = conv.config["topology"]
    assert topology["topology.tick.tuple.freq.secs"] == 60
    bolts = {b["name"]: b for b in topology["bolts"]}
    assert "inputs" not in bolts["parse"]                       # none on the spout
    assert bolts["count"]["tick_freq_secs"] == 5
    assert bolts["count"]["inputs"] == [{"from": "parse", "grouping": "partial_key",
                                         "fields": ["user"]}]
    assert bolts["route"]["inputs"] == [{"from": "count", "grouping": "custom",
                                         "custom": "acme.timed:UserGrouping"}]
    assert bolts["task"]["inputs"] == [{"from": "route", "grouping": "direct"}]
    assert lines_about(conv, "grouping CUSTOM acme.timed.UserGrouping not mapped: port it to "
                             "Python as a CustomStreamGrouping")
