"""Files real users wrote (tests/data/real, sources in its README): each is converted,
or refused with a message that says what is unsupported and what to do."""

import json
from pathlib import Path

import pytest
import yaml

from storm_kafka_compat.config import job_config_from_dict
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.flux import convert_file, convert_flux
from storm_kafka_compat.offsets.document import parse_document

REAL = Path(__file__).resolve().parents[1] / "data" / "real"


def convert(name, **kw):
    return convert_file(str(REAL / name), **kw)


def refused(name):
    with pytest.raises(ConfigError) as err:
        convert(name)
    return str(err.value)


# --- storm-kafka Flux ----------------------------------------------------------------------

def test_storm_1_2_4_flux_example_converts_and_validates():
    result = convert("storm-1.2.4-flux-examples-kafka_spout.yaml")
    assert result.config["spout"]["topic"] == "myKafkaTopic"
    assert result.config["spout"]["scheme"] == "string"
    assert result.config["hosts"] == {"zk": "localhost:2181"}
    job_config_from_dict(result.config)


def test_azure_reader_with_environment_converts():
    result = convert("azure-hdinsight-storm-java-kafka-reader.yaml",
                     env={"ZKHOSTS": "zk0:2181,zk1:2181", "KAFKATOPIC": "stormtopic"})
    job = job_config_from_dict(result.config)
    assert (job.spout.topic, job.spout.zk_root, job.spout.id) == ("stormtopic", "", "readerid")
    assert job.spout.scheme == "string"   # storm.kafka / backtype.storm (0.9/0.10) packages


def test_azure_reader_without_environment_names_each_placeholder_and_the_flag():
    result = convert("azure-hdinsight-storm-java-kafka-reader.yaml")
    assert any("spout.topic: placeholder ${ENV-KAFKATOPIC} was not substituted; environment "
               "variable KAFKATOPIC: set it and run 'config convert --env-filter'" in u
               for u in result.unmapped)
    with pytest.raises(ConfigError) as err:
        job_config_from_dict(result.config)
    text = str(err.value)
    assert "2 Flux placeholder(s) were never substituted" in text
    assert "spout.topic holds ${ENV-KAFKATOPIC} (environment variable KAFKATOPIC" in text
    assert "hosts.zk holds ${ENV-ZKHOSTS}" in text


def test_config_check_rejects_a_filter_placeholder_with_the_filter_flag():
    with pytest.raises(ConfigError, match=r"spout\.topic holds \$\{kafka\.topic\} \(key "
                                          r"'kafka\.topic' of a properties file: run 'config "
                                          r"convert --filter FILE'"):
        job_config_from_dict({"spout": {"topic": "${kafka.topic}", "zkRoot": "/r", "id": "i"},
                              "hosts": {"zk": "zk:2181"}, "topology": {"name": "t"}})


def test_a_spoutconfig_subclass_is_named_with_what_to_do():
    text = refused("flink-storm-spoutconfig-subclass.yaml")
    assert "components[spoutConfig] of class org.apache.flink.storm.flux.utils." \
           "KafkaSpoutConfig" in text
    assert "change its className to org.apache.storm.kafka.SpoutConfig" in text
    assert "FluxValue" not in text


def test_a_components_only_fragment_is_refused_as_a_fragment():
    text = refused("xannz-WordCountExample-kafkaconfig.yaml")
    assert "Flux fragment with only components and no spouts section" in text


# --- storm-kafka-client Flux ---------------------------------------------------------------

def test_storm_2_8_8_client_flux_example_converts_to_a_kafka_spout_section():
    result = convert("storm-2.8.8-flux-examples-kafka_spout.yaml")
    assert result.config["kafkaSpout"] == {"bootstrapServers": "localhost:9092",
                                           "topics": ["myKafkaTopic"],
                                           "firstPollOffsetStrategy": "EARLIEST"}
    assert result.config["spout"] == {
        "scheme": "org.apache.storm.flux.examples:OnlyValueRecordTranslator"}
    assert any("record translator org.apache.storm.flux.examples.OnlyValueRecordTranslator "
               "not mapped: port it as a scheme" in u for u in result.unmapped)
    assert any("no group id" in u for u in result.unmapped)
    with pytest.raises(ConfigError, match="kafkaSpout.groupId is missing.*Storm accepts a "
                                          "spout without one"):
        job_config_from_dict(result.config)


def test_streamline_generated_client_flux_converts_with_retry_and_properties():
    result = convert("streamline-generated-kafka-client-topology.yaml")
    ks = result.config["kafkaSpout"]
    assert ks["groupId"] == "kafka-source-1"
    assert ks["consumer"] == {"max.poll.records": 500}
    assert ks["retry"]["maxDelay"] == {"length": 10000, "timeUnit": "MILLISECONDS"}
    assert (ks["offsetCommitPeriodMs"], ks["firstPollOffsetStrategy"]) == (
        30000, "UNCOMMITTED_EARLIEST")
    assert any("setConsumerStartDelayMs(60000) not mapped" in u for u in result.unmapped)
    assert result.config["spark"] == {"tasks": 2}
    config = dict(result.config, spout={"scheme": "string"})
    job = job_config_from_dict(config)
    assert job.kafka_spout.group_id == "kafka-source-1"
    assert job.kafka_spout.retry.max_delay.nanos == 10_000 * 1_000_000
    assert job.kafka_spout.retry.delay_period.nanos == 2 * 1_000_000


# --- not Flux --------------------------------------------------------------------------------

def test_storm_perf_topology_properties_yaml_is_not_flux():
    text = refused("storm-2.8.8-storm-perf-KafkaClientSpoutNullBoltTopo.yml")
    assert "is not a Flux topology: none of the Flux keys" in text
    assert "found: bootstrap.servers, kafka.topic" in text
    assert "write a CONFIG with a kafkaSpout section" in text


def test_a_storm_yaml_is_not_flux():
    assert "is not a Flux topology" in refused("storm-2.8.8-integration-test-storm-java9.yaml")


def test_a_topology_source_is_refused_as_java_code():
    assert "names a topologySource" in refused("storm-2.8.8-flux-core-existing-topology.yaml")


# --- .properties ---------------------------------------------------------------------------

def test_a_flux_filter_file_reports_each_key_and_the_mapping():
    result = convert("azure-hdinsight-storm-java-kafka-dev.properties")
    assert result.config["spout"] == {"topic": "stormtopic"}
    assert ("kafka.zookeeper.hosts not understood (no key of this name; if it means "
            "kafka.zkHosts, rename it to kafka.zkHosts).") in result.unmapped
    assert any(u.startswith("kafka.broker.hosts not understood") and "kafka.bootstrap.servers"
               in u for u in result.unmapped)
    summary = result.unmapped[-1]
    assert summary.startswith("4 of 5 keys of ")
    assert "--filter" in summary


def test_flux_with_its_filter_file_substitutes_the_topic():
    text = (REAL / "azure-hdinsight-storm-java-kafka-reader.yaml").read_text()
    result = convert_flux(text.replace("${ENV-KAFKATOPIC}", "${kafka.topic}"),
                          properties={"kafka.topic": "stormtopic"},
                          env={"ZKHOSTS": "zk0:2181"})
    assert result.config["spout"]["topic"] == "stormtopic"


# --- ZooKeeper documents ---------------------------------------------------------------------

def test_storm_0_9_2_document_from_an_issue_parses():
    raw = (REAL / "verspaetung-issue-9-partition_0.json").read_bytes()
    doc = parse_document(raw)
    assert doc.problem is None
    assert (doc.topology_id, doc.offset) == ("4f9a8081-fc1e-4729-b8e8-464cb1a22f6d", 88)
    assert json.loads(raw)["broker"] == {"host": "kafka-2.example.com", "port": 6667}


def test_readme_names_the_source_of_every_file():
    readme = (REAL / "README.md").read_text()
    for path in REAL.iterdir():
        if path.name != "README.md":
            assert path.name in readme, path.name


def test_real_yaml_files_are_small():
    for path in REAL.iterdir():
        assert path.stat().st_size < 8_000, path.name
        if path.suffix in (".yaml", ".yml"):
            yaml.safe_load(path.read_text())


# --- through the command line -----------------------------------------------------------------

def test_cli_convert_then_check_names_the_placeholders(tmp_path, capsys):
    from storm_kafka_compat.cli.main import main

    out = tmp_path / "job.yaml"
    assert main(["config", "convert", str(REAL / "azure-hdinsight-storm-java-kafka-reader.yaml"),
                 "--output", str(out)]) == 0
    capsys.readouterr()
    assert main(["config", "check", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Error:" in err and "${ENV-KAFKATOPIC}" in err and "--env-filter" in err


def test_cli_refuses_a_non_flux_yaml_with_exit_2(capsys):
    from storm_kafka_compat.cli.main import main

    assert main(["config", "convert",
                 str(REAL / "storm-2.8.8-storm-perf-KafkaClientSpoutNullBoltTopo.yml")]) == 2
    assert "is not a Flux topology" in capsys.readouterr().err
