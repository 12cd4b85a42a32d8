"""CONFIG loading and validation: defaults, aliases, validation errors, YAML, effective config."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict

import pytest

from storm_kafka_compat.config import (
    DEFAULT_RETRY_MANAGER,
    LONG_MAX,
    MASK,
    REQUIRED,
    SCHEME_NAMES,
    SPOUT_FIELDS,
    TOPOLOGY_FIELDS,
    BootstrapHosts,
    Broker,
    JobConfig,
    SparkConfig,
    SpoutConfig,
    StaticHosts,
    TopologyConfig,
    ZkAuth,
    ZkHosts,
    config_warnings,
    effective_config,
    hosts_from_dict,
    is_secret_key,
    job_config_from_dict,
    load_job_config,
    offset_store_servers,
    spark_config_from_dict,
    split_chroot,
    spout_config_from_dict,
    topology_config_from_dict,
)
from storm_kafka_compat.errors import ConfigError

HOSTS = ZkHosts("zk1:2181")
REQ = {"topic": "clicks", "zkRoot": "/kafka-offsets", "id": "clicks-spout"}


def spout(**extra: Any) -> SpoutConfig:
    return spout_config_from_dict({**REQ, **extra}, hosts=HOSTS)


def job_dict(**sections: Any) -> Dict[str, Any]:
    d: Dict[str, Any] = {"spout": dict(REQ), "hosts": {"zk": "zk1:2181/kafka"},
                         "topology": {"name": "clicks"}}
    d.update(sections)
    return d


# --- defaults ------------------------------------------------------------------------

#: storm-kafka 1.2.x defaults (reference spec section 1), written out independently
SPEC_DEFAULTS = [
    ("clientId", "client_id", ""),
    ("fetchSizeBytes", "fetch_size_bytes", 1048576),
    ("socketTimeoutMs", "socket_timeout_ms", 10000),
    ("fetchMaxWait", "fetch_max_wait", 0),
    ("minFetchByte", "min_fetch_byte", 0),
    ("bufferSizeBytes", "buffer_size_bytes", 1048576),
    ("scheme", "scheme", "raw"),
    ("ignoreZkOffsets", "ignore_zk_offsets", False),
    ("startOffsetTime", "start_offset_time", -2),
    ("maxOffsetBehind", "max_offset_behind", 2**63 - 1),
    ("useStartOffsetTimeIfOffsetOutOfRange", "use_start_offset_time_if_offset_out_of_range",
     True),
    ("metricsTimeBucketSizeInSecs", "metrics_time_bucket_size_in_secs", 60),
    ("zkServers", "zk_servers", None),
    ("zkPort", "zk_port", None),
    ("outputStreamId", "output_stream_id", None),
    ("stateUpdateIntervalMs", "state_update_interval_ms", 2000),
    ("failedMsgRetryManagerClass", "failed_msg_retry_manager_class",
     "org.apache.storm.kafka.ExponentialBackoffMsgRetryManager"),
    ("retryInitialDelayMs", "retry_initial_delay_ms", 0),
    ("retryDelayMultiplier", "retry_delay_multiplier", 1.0),
    ("retryDelayMaxMs", "retry_delay_max_ms", 60000),
    ("retryLimit", "retry_limit", -1),
    # extensions keep Storm's behaviour by default
    ("corruptStatePolicy", "corrupt_state_policy", "storm"),
    ("maxOffsetBehindResetToWindow", "max_offset_behind_reset_to_window", False),
    ("maxPendingPerPartition", "max_pending_per_partition", None),
]


@pytest.mark.parametrize("storm_name,attr,expected", SPEC_DEFAULTS)
def test_spout_default_matches_storm(storm_name: str, attr: str, expected: Any) -> None:
    cfg = spout()
    assert getattr(cfg, attr) == expected
    assert type(getattr(cfg, attr)) is type(expected)
    spec = next(s for s in SPOUT_FIELDS if s.storm_name == storm_name)
    assert spec.attr == attr
    assert spec.default == expected


def test_field_table_covers_every_spout_field_once() -> None:
    attrs = [s.attr for s in SPOUT_FIELDS]
    assert len(attrs) == len(set(attrs))
    dataclass_attrs = {f.name for f in dataclasses.fields(SpoutConfig)} - {"hosts"}
    assert set(attrs) == dataclass_attrs
    assert {s.storm_name for s in SPOUT_FIELDS} >= {s for s, _, _ in SPEC_DEFAULTS}
    for s in SPOUT_FIELDS:
        assert s.meaning and s.java_type
    assert [s.storm_name for s in SPOUT_FIELDS if s.default is REQUIRED] == \
        ["topic", "zkRoot", "id"]


@pytest.mark.parametrize("storm_key,attr,expected", [
    ("kafka.topic.wildcard.match", "wildcard_match", False),
    ("storm.zookeeper.port", "zookeeper_port", 2181),
    ("storm.zookeeper.session.timeout", "zookeeper_session_timeout_ms", 20000),
    ("storm.zookeeper.connection.timeout", "zookeeper_connection_timeout_ms", 15000),
    ("storm.zookeeper.retry.times", "zookeeper_retry_times", 5),
    ("storm.zookeeper.retry.interval", "zookeeper_retry_interval_ms", 1000),
    ("topology.message.timeout.secs", "message_timeout_secs", 30),
    ("topology.max.spout.pending", "max_spout_pending", None),
    ("topology.id", "id", None),
])
def test_topology_defaults(storm_key: str, attr: str, expected: Any) -> None:
    topo = topology_config_from_dict({"name": "clicks"})
    assert getattr(topo, attr) == expected
    spec = next(s for s in TOPOLOGY_FIELDS if s.storm_name == storm_key)
    assert spec.attr == attr and spec.default == expected


def test_field_table_covers_every_topology_field() -> None:
    attrs = {s.attr for s in TOPOLOGY_FIELDS}
    assert attrs | {"zookeeper_auth"} == {f.name for f in dataclasses.fields(TopologyConfig)}


# --- names and aliases ------------------------------------------------------------------

def test_camel_and_snake_case_give_the_same_config() -> None:
    camel = spout(fetchSizeBytes=2048, stateUpdateIntervalMs=500, retryDelayMultiplier=2)
    snake = spout_config_from_dict({"topic": "clicks", "zk_root": "/kafka-offsets",
                                    "id": "clicks-spout", "fetch_size_bytes": 2048,
                                    "state_update_interval_ms": 500,
                                    "retry_delay_multiplier": 2}, hosts=HOSTS)
    assert camel == snake
    assert camel.retry_delay_multiplier == 2.0 and isinstance(camel.retry_delay_multiplier, float)


@pytest.mark.parametrize("alias", ["forceFromStart", "force_from_start", "ignoreZkOffsets",
                                   "ignore_zk_offsets"])
def test_force_from_start_is_ignore_zk_offsets(alias: str) -> None:
    assert spout(**{alias: True}).ignore_zk_offsets is True
    assert spout(**{alias: False}).ignore_zk_offsets is False


def test_alias_and_name_agreeing_is_accepted_disagreeing_is_an_error() -> None:
    assert spout(forceFromStart=True, ignoreZkOffsets=True).ignore_zk_offsets is True
    with pytest.raises(ConfigError) as err:
        spout(forceFromStart=True, ignoreZkOffsets=False)
    assert err.value.key == "spout.ignoreZkOffsets"
    assert "forceFromStart" in str(err.value)


def test_zk_root_empty_is_allowed() -> None:
    assert spout(zkRoot="").zk_root == ""


def test_values_are_normalised() -> None:
    cfg = spout(zkServers="zk-a, zk-b", zkPort=2182, scheme="string",
                failedMsgRetryManagerClass="storm.kafka.ExponentialBackoffMsgRetryManager")
    assert cfg.zk_servers == ("zk-a", "zk-b")
    assert cfg.failed_msg_retry_manager_class == DEFAULT_RETRY_MANAGER
    assert spout(failedMsgRetryManagerClass="myjob.retry:Mine").failed_msg_retry_manager_class \
        == "myjob.retry:Mine"
    for name in SCHEME_NAMES + ("myjob.schemes:parse",):
        assert spout(scheme=name).scheme == name
    assert spout(scheme="org.apache.storm.kafka.StringScheme").scheme == "string"
    assert spout(scheme="storm.kafka.StringKeyValueScheme").scheme == "string_key_value"
    assert spout(scheme="backtype.storm.spout.RawMultiScheme").scheme == "raw"
    assert spout(startOffsetTime=1514764800000).start_offset_time == 1514764800000
    assert spout(maxOffsetBehind=LONG_MAX).max_offset_behind == LONG_MAX
    assert spout(retryLimit=0).retry_limit == 0
    assert spout(outputStreamId="clicks").output_stream_id == "clicks"


# --- validation errors --------------------------------------------------------------------

SPOUT_ERRORS = [
    # (field, bad value, message fragment)
    ("fetchSizeBytes", True, "must be an integer"),
    ("fetchSizeBytes", "1024", "must be an integer"),
    ("fetchSizeBytes", 0, ">= 1"),
    ("fetchSizeBytes", -1, ">= 1"),
    ("fetchSizeBytes", 2**31, "Java type"),
    ("socketTimeoutMs", -5, ">= 1"),
    ("bufferSizeBytes", 0, ">= 1"),
    ("fetchMaxWait", -1, ">= 0"),
    ("minFetchByte", -1, ">= 0"),
    ("stateUpdateIntervalMs", -2000, ">= 0"),
    ("retryInitialDelayMs", -1, ">= 0"),
    ("retryDelayMaxMs", -1, ">= 0"),
    ("metricsTimeBucketSizeInSecs", 0, ">= 1"),
    ("maxOffsetBehind", -1, ">= 0"),
    ("maxOffsetBehind", 2**63, "Java type"),
    ("maxPendingPerPartition", 0, ">= 1"),
    ("retryLimit", 1.5, "must be an integer"),
    ("ignoreZkOffsets", 1, "true or false"),
    ("ignoreZkOffsets", "true", "true or false"),
    ("useStartOffsetTimeIfOffsetOutOfRange", 0, "true or false"),
    ("maxOffsetBehindResetToWindow", "yes", "true or false"),
    ("startOffsetTime", -3, "-2 (earliest), -1 (latest)"),
    ("startOffsetTime", -5, "-2 (earliest), -1 (latest)"),
    ("startOffsetTime", True, "must be an integer"),
    ("retryDelayMultiplier", 0, "> 0"),
    ("retryDelayMultiplier", -1.5, "> 0"),
    ("retryDelayMultiplier", float("inf"), "> 0"),
    ("retryDelayMultiplier", True, "must be a number"),
    ("zkRoot", "kafka-offsets", "must start with '/'"),
    ("zkRoot", "/kafka-offsets/", "must not end with '/'"),
    ("zkRoot", "/", "must start with '/'"),
    ("zkRoot", "/a//b", "not a valid ZooKeeper path"),
    ("zkRoot", 5, "must be a string"),
    ("id", "", "must not be empty"),
    ("id", "team/clicks", "without '/'"),
    ("topic", "", "must not be empty"),
    ("topic", " ", "must not be empty"),
    ("corruptStatePolicy", "ignore", "storm, fail"),
    ("scheme", "json", "is not a scheme"),
    ("scheme", "com.acme.AvroScheme", "is not a scheme"),
    ("failedMsgRetryManagerClass", "not a class", "is not a class name"),
    ("zkPort", 0, ">= 1"),
    ("zkPort", 70000, "<= 65535"),
    ("zkServers", [], "non-empty list"),
    ("zkServers", ["zk1", ""], "must not be empty"),
    ("clientId", 7, "must be a string"),
]


@pytest.mark.parametrize("name,value,fragment", SPOUT_ERRORS)
def test_spout_validation_errors(name: str, value: Any, fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        spout(**{name: value})
    if err.value.key == f"spout.{name}":
        assert err.value.value == value
    else:  # an item of a list value: the key names the item
        assert err.value.key.startswith(f"spout.{name}[")
    assert fragment in str(err.value)
    assert f"spout.{name}" in str(err.value)
    assert err.value.exit_code == 2


def test_corrupt_state_policy_error_lists_allowed() -> None:
    with pytest.raises(ConfigError) as err:
        spout(corruptStatePolicy="ignore")
    assert err.value.allowed == ("storm", "fail")


def test_unknown_spout_key_lists_valid_and_suggests_closest() -> None:
    with pytest.raises(ConfigError) as err:
        spout(fetchSizeByte=1)
    msg = str(err.value)
    assert err.value.key == "spout.fetchSizeByte"
    assert "Did you mean 'fetchSizeBytes'?" in msg
    assert "Valid keys:" in msg and "stateUpdateIntervalMs" in msg
    assert err.value.allowed is not None and "retryLimit" in err.value.allowed


def test_unknown_key_far_from_everything_has_no_suggestion() -> None:
    with pytest.raises(ConfigError) as err:
        spout(zzzzzzzz=1)
    assert "Did you mean" not in str(err.value)


@pytest.mark.parametrize("missing", ["topic", "zkRoot", "id"])
def test_required_spout_fields(missing: str) -> None:
    d = dict(REQ)
    del d[missing]
    with pytest.raises(ConfigError) as err:
        spout_config_from_dict(d, hosts=HOSTS)
    assert err.value.key == f"spout.{missing}"
    assert "required" in str(err.value)


def test_hosts_inside_spout_is_pointed_out() -> None:
    with pytest.raises(ConfigError) as err:
        spout(hosts={"zk": "a:1"})
    assert "top-level" in str(err.value)


# --- hosts ---------------------------------------------------------------------------

@pytest.mark.parametrize("connect,hosts,chroot", [
    ("zk1:2181", "zk1:2181", ""),
    ("zk1:2181,zk2:2181/kafka", "zk1:2181,zk2:2181", "/kafka"),
    ("zk1:2181/kafka/prod", "zk1:2181", "/kafka/prod"),
    ("zk1:2181/", "zk1:2181", ""),
])
def test_split_chroot(connect: str, hosts: str, chroot: str) -> None:
    assert split_chroot(connect) == (hosts, chroot)


@pytest.mark.parametrize("connect", ["/kafka", "zk1:2181,,zk2:2181", "zk1:2181/kafka/"])
def test_split_chroot_rejects(connect: str) -> None:
    with pytest.raises(ConfigError) as err:
        split_chroot(connect)
    assert connect in str(err.value)


def test_zk_hosts() -> None:
    assert hosts_from_dict({"zk": "zk1:2181/kafka"}) == ZkHosts("zk1:2181/kafka", "/brokers", 60)
    assert hosts_from_dict({"zk": "zk1:2181", "brokerZkPath": "/kafka/brokers",
                            "refreshFreqSecs": 10}) == ZkHosts("zk1:2181", "/kafka/brokers", 10)
    assert hosts_from_dict({"zk": "zk1:2181", "broker_zk_path": "/b",
                            "refresh_freq_secs": 5}) == ZkHosts("zk1:2181", "/b", 5)


def test_static_hosts() -> None:
    hosts = hosts_from_dict({"static": {1: "k2:9093", 0: "k1", "2": {"host": "k3", "port": 9094}},
                             "useTopicNameForPartitionPathId": True})
    assert isinstance(hosts, StaticHosts)
    assert list(hosts.partitions) == [0, 1, 2]
    assert hosts.partitions[0] == Broker("k1", 9092)
    assert hosts.partitions[1] == Broker("k2", 9093)
    assert hosts.partitions[2] == Broker("k3", 9094)
    assert hosts.use_topic_name_for_partition_path_id is True


@pytest.mark.parametrize("value,expected", [
    ("k1:9092,k2:9092", ("k1:9092", "k2:9092")),
    (["k1:9092", "k2:9092"], ("k1:9092", "k2:9092")),
])
def test_bootstrap_hosts(value: Any, expected: Any) -> None:
    assert hosts_from_dict({"bootstrap": value}) == BootstrapHosts(expected, 60)


HOSTS_ERRORS = [
    ({}, "hosts", "exactly one of"),
    ({"zk": "a:1", "static": {0: "b:1"}}, "hosts", "exactly one of"),
    ({"zk": "a:1", "useTopicNameForPartitionPathId": True}, "hosts.useTopicNameForPartitionPathId",
     "does not apply"),
    ({"static": {0: "b:1"}, "brokerZkPath": "/b"}, "hosts.brokerZkPath", "does not apply"),
    ({"zk": "a:1", "brokerZkPath": "brokers"}, "hosts.brokerZkPath", "must start with '/'"),
    ({"zk": "a:1", "brokerZkPath": ""}, "hosts.brokerZkPath", "must start with '/'"),
    ({"zk": "a:1", "refreshFreqSecs": 0}, "hosts.refreshFreqSecs", ">= 1"),
    ({"zk": ""}, "hosts.zk", "must not be empty"),
    ({"zk": "a:1/kafka/"}, "hosts.zk", "chroot"),
    ({"zk": 5}, "hosts.zk", "must be a string"),
    ({"static": {}}, "hosts.static", "is empty"),
    ({"static": {-1: "b:1"}}, "hosts.static.-1", "partition"),
    ({"static": {"x": "b:1"}}, "hosts.static.x", "partition"),
    ({"static": {0: "b:port"}}, "hosts.static.0", "host:port"),
    ({"static": {0: "b:99999"}}, "hosts.static.0", "host:port"),
    ({"static": ["b:1"]}, "hosts.static", "must be a mapping"),
    ({"bootstrap": []}, "hosts.bootstrap", "non-empty list"),
    ({"bootstrap": "k1:x"}, "hosts.bootstrap[0]", "host:port"),
    ({"zkk": "a:1"}, "hosts.zkk", "Did you mean 'zk'?"),
]


@pytest.mark.parametrize("mapping,key,fragment", HOSTS_ERRORS)
def test_hosts_errors(mapping: Dict[str, Any], key: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        hosts_from_dict(mapping)
    assert err.value.key == key
    assert fragment in str(err.value)


# --- topology, auth, spark ------------------------------------------------------------------

def test_topology_storm_keys_and_short_keys() -> None:
    topo = topology_config_from_dict({
        "topology.name": "clicks", "topology.id": "clicks-17-1514764800",
        "kafka.topic.wildcard.match": True, "storm.zookeeper.servers": ["zk1", "zk2"],
        "storm.zookeeper.port": 2182, "storm.zookeeper.session.timeout": 30000,
        "storm.zookeeper.connection.timeout": 5000, "storm.zookeeper.retry.times": 0,
        "storm.zookeeper.retry.interval": 200, "topology.message.timeout.secs": 60,
        "topology.max.spout.pending": 1000})
    assert topo == TopologyConfig("clicks", "clicks-17-1514764800", True, ("zk1", "zk2"), 2182,
                                  30000, 5000, 0, 200, 60, 1000, None)
    assert topology_config_from_dict({"name": "n", "id": "i"}) == TopologyConfig("n", "i")


def test_topology_digest_auth() -> None:
    topo = topology_config_from_dict({"name": "n", "storm.zookeeper.auth.payload": "alice:pw",
                                      "acl": True})
    assert topo.zookeeper_auth == ZkAuth("digest", "alice:pw", True)
    assert "pw" not in repr(topo.zookeeper_auth)
    topo = topology_config_from_dict({"name": "n", "storm.zookeeper.auth.scheme": "digest",
                                      "storm.zookeeper.auth.payload": "alice:pw"})
    assert topo.zookeeper_auth == ZkAuth("digest", "alice:pw", False)


TOPOLOGY_ERRORS = [
    ({}, "topology.name", "required"),
    ({"name": ""}, "topology.name", "must not be empty"),
    ({"name": "n", "id": ""}, "topology.id", "must not be empty"),
    ({"name": "n", "topology.name": "m"}, "topology.topology.name", "contradicts"),
    ({"name": "n", "kafka.topic.wildcard.match": "true"}, "topology.kafka.topic.wildcard.match",
     "true or false"),
    ({"name": "n", "storm.zookeeper.port": True}, "topology.storm.zookeeper.port",
     "must be a port number"),
    ({"name": "n", "storm.zookeeper.session.timeout": -1},
     "topology.storm.zookeeper.session.timeout", ">= 1"),
    ({"name": "n", "storm.zookeeper.connection.timeout": 0},
     "topology.storm.zookeeper.connection.timeout", ">= 1"),
    ({"name": "n", "storm.zookeeper.retry.times": -1}, "topology.storm.zookeeper.retry.times",
     ">= 0"),
    ({"name": "n", "storm.zookeeper.retry.interval": -1},
     "topology.storm.zookeeper.retry.interval", ">= 1"),
    ({"name": "n", "topology.message.timeout.secs": 0}, "topology.topology.message.timeout.secs",
     ">= 1"),
    ({"name": "n", "topology.max.spout.pending": 0}, "topology.topology.max.spout.pending",
     ">= 1"),
    ({"name": "n", "storm.zookeeper.servers": []}, "topology.storm.zookeeper.servers",
     "non-empty list"),
    ({"name": "n", "topology.workers": 2}, "topology.topology.workers", "Valid keys"),
    ({"name": "n", "storm.zookeeper.auth.payload": "alice"},
     "topology.storm.zookeeper.auth.payload", "user:password"),
    ({"name": "n", "storm.zookeeper.auth.payload": ":pw"},
     "topology.storm.zookeeper.auth.payload", "user:password"),
    ({"name": "n", "storm.zookeeper.auth.scheme": "sasl", "storm.zookeeper.auth.payload": "a:b"},
     "topology.storm.zookeeper.auth.scheme", "digest"),
    ({"name": "n", "acl": True}, "topology.acl", "no storm.zookeeper.auth.payload"),
    ({"name": "n", "acl": "yes"}, "topology.acl", "true or false"),
]


@pytest.mark.parametrize("mapping,key,fragment", TOPOLOGY_ERRORS)
def test_topology_errors(mapping: Dict[str, Any], key: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        topology_config_from_dict(mapping)
    assert err.value.key == key
    assert fragment in str(err.value)


def test_bad_auth_payload_is_not_echoed() -> None:
    with pytest.raises(ConfigError) as err:
        topology_config_from_dict({"name": "n", "storm.zookeeper.auth.payload": "secretpw"})
    assert "secretpw" not in str(err.value)
    assert err.value.value == MASK


def test_spark_section() -> None:
    assert spark_config_from_dict({}) == SparkConfig()
    s = spark_config_from_dict({"master": "local[4]", "appName": "clicks", "tasks": 3,
                                "conf": {"spark.ui.enabled": False, "spark.executor.cores": 2}})
    assert s == SparkConfig("local[4]", "clicks", 3, {"spark.ui.enabled": "false",
                                                      "spark.executor.cores": "2"})
    assert spark_config_from_dict({"app_name": "x"}).app_name == "x"
    for master in ("local", "local[*]", "local[2,4]", "local[*,3]", "local-cluster[2,1,1024]",
                   "spark://a:7077,b:7077", "yarn", "k8s://https://api:6443", "mesos://m:5050"):
        assert spark_config_from_dict({"master": master}).master == master


def test_a_wrong_master_names_the_forms_spark_accepts() -> None:
    with pytest.raises(ConfigError) as err:
        spark_config_from_dict({"master": "local[x]"})
    assert str(err.value).startswith("spark.master 'local[x]' is not a Spark master URL; use "
                                      "one of: local, local[N], local[*], local[N,F];")


@pytest.mark.parametrize("mapping,key", [
    ({"tasks": 0}, "spark.tasks"),
    ({"tasks": True}, "spark.tasks"),
    ({"master": ""}, "spark.master"),
    ({"master": "local[x]"}, "spark.master"),          # run printed a 91-line traceback
    ({"master": "local[2"}, "spark.master"),
    ({"master": "spark://host"}, "spark.master"),
    ({"conf": {"a": [1]}}, "spark.conf.a"),
    ({"appname": "x"}, "spark.appname"),
    ({"triggerInterval": "2 fortnights"}, "spark.triggerInterval"),
    ({"triggerInterval": "soon"}, "spark.triggerInterval"),
    ({"triggerInterval": 5}, "spark.triggerInterval"),
    ({"trigger_interval": True}, "spark.trigger_interval"),
])
def test_spark_errors(mapping: Dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as err:
        spark_config_from_dict(mapping)
    assert err.value.key == key


@pytest.mark.parametrize("value,ms", [
    (2000, 2000), ("2 seconds", 2000), ("500 ms", 500), ("1 minute", 60_000),
    ("0.5s", 500), ("10 milliseconds", 10), (" 3 SECONDS ", 3000),
])
def test_trigger_interval_in_milliseconds_or_as_spark_writes_it(value: Any, ms: int) -> None:
    assert spark_config_from_dict({"triggerInterval": value}).trigger_interval_ms == ms
    assert spark_config_from_dict({}).trigger_interval_ms is None


def test_a_bad_trigger_interval_names_the_forms_that_work() -> None:
    with pytest.raises(ConfigError) as err:
        spark_config_from_dict({"triggerInterval": "2 fortnights"})
    assert "'2 fortnights'" in str(err.value) and "\"2 seconds\"" in str(err.value)
    with pytest.raises(ConfigError) as err:
        spark_config_from_dict({"triggerInterval": 5})
    assert "shorter than 10 ms" in str(err.value)


# --- the whole job ----------------------------------------------------------------------------

def test_job_config_minimal() -> None:
    job = job_config_from_dict(job_dict())
    assert isinstance(job, JobConfig)
    assert job.spout.hosts == ZkHosts("zk1:2181/kafka")
    assert job.topology.name == "clicks"
    assert job.spark == SparkConfig() and job.bolt is None and job.topology_spec is None
    assert dict(job.kafka) == {}


def test_job_config_simple_bolt_and_kafka_passthrough() -> None:
    job = job_config_from_dict(job_dict(bolt="myjob.bolts:count", kafka={
        "security_protocol": "SASL_SSL", "sasl_plain_password": "pw"}))
    assert job.bolt == "myjob.bolts:count"
    assert job.kafka["sasl_plain_password"] == "pw"
    assert job.kafka_settings.for_kafka_python()["sasl_plain_password"] == "pw"
    # librdkafka's dotted names are for the confluent backend only
    job = job_config_from_dict(job_dict(kafka={"backend": "confluent",
                                               "sasl.password": "pw"}))
    assert job.kafka_settings.for_librdkafka() == {"sasl.password": "pw"}
    with pytest.raises(ConfigError, match="backend: confluent"):
        job_config_from_dict(job_dict(kafka={"sasl.password": "pw"}))


def test_job_config_topology_of_bolts_is_read_typed() -> None:
    from storm_kafka_compat.config.topology_spec import BoltEntry, InputEntry, TopologySpec
    bolts = [{"name": "split", "bolt": "myjob.bolts:split", "parallelism": 2},
             {"name": "count", "bolt": "myjob.bolts:count",
              "inputs": [{"from": "split", "grouping": "fields", "fields": "word"}]}]
    job = job_config_from_dict(job_dict(topology={"name": "clicks", "bolts": bolts}))
    assert job.topology_spec == TopologySpec((
        BoltEntry("split", "myjob.bolts:split", parallelism=2),
        BoltEntry("count", "myjob.bolts:count",
                  inputs=(InputEntry("split", "fields", ("word",)),))))
    # the effective form: every default filled in, the spout's shuffle included
    assert job.topology_spec.as_dict()["bolts"] == [
        {"name": "split", "bolt": "myjob.bolts:split", "parallelism": 2,
         "inputs": [{"from": "spout", "grouping": "shuffle", "stream": "default"}]},
        {"name": "count", "bolt": "myjob.bolts:count", "parallelism": 1,
         "inputs": [{"from": "split", "grouping": "fields", "fields": ["word"],
                     "stream": "default"}]}]
    assert job.topology.name == "clicks"



@pytest.mark.parametrize("entry, key, says", [
    ({"name": "count", "callable": "myjob.bolts:count"}, "topology.bolts[0].callable",
     "unknown key(s) ['callable']"),
    ({"name": "count"}, "topology.bolts[0]", "needs 'name' and 'bolt'"),
    ({"bolt": "myjob.bolts:count"}, "topology.bolts[0]", "needs 'name' and 'bolt'"),
])
def test_a_bolt_entry_the_topology_cannot_build_is_a_config_error(entry, key, says) -> None:
    # found when the CONFIG loads (config check, run before anything starts), not when
    # the topology is built after ZooKeeper and Kafka were reached
    with pytest.raises(ConfigError) as err:
        job_config_from_dict(job_dict(topology={"name": "clicks", "bolts": [entry]}))
    assert err.value.key == key and says in str(err.value)

JOB_ERRORS = [
    (dict(extra=1), "extra", "Valid keys"),
    (dict(spouts={}), "spouts", "Did you mean 'spout'?"),
    (dict(spout=None), "spout", "missing"),
    (dict(hosts=None), "hosts", "missing"),
    (dict(topology=None), "topology", "missing"),
    (dict(spout=["a"]), "spout", "must be a mapping"),
    (dict(bolt="myjob.bolts"), "bolt", "module:callable"),
    (dict(bolt="my job:count"), "bolt", "module:callable"),
    (dict(bolt="mod:"), "bolt", "module:callable"),
    (dict(bolt=3), "bolt", "must be a string"),
    (dict(bolt="m:f", topology={"name": "n", "bolts": [{"name": "a", "bolt": "m:g"}]}), "bolt",
     "not both"),
    (dict(topology={"name": "n", "bolts": []}), "topology.bolts", "non-empty list"),
    (dict(topology={"name": "n", "bolts": {"a": 1}}), "topology.bolts", "non-empty list"),
    (dict(topology={"name": "n", "bolts": ["m:f"]}), "topology.bolts[0]", "must be a mapping"),
    (dict(topology={"name": "n", "bolts": [{"name": "a", "bolt": "nocolon"}]}),
     "topology.bolts[0].bolt", "module:callable"),
    (dict(topology={"name": "n", "streams": []}), "topology.streams", "Valid keys"),
    (dict(kafka="security.protocol=SSL"), "kafka", "must be a mapping"),
    (dict(spout={**REQ, "topic": "clicks.(eu"},
          topology={"name": "n", "kafka.topic.wildcard.match": True}), "spout.topic", "regex"),
    (dict(hosts={"static": {0: "k:9092"}},
          topology={"name": "n", "kafka.topic.wildcard.match": True}),
     "topology.kafka.topic.wildcard.match", "static"),
]


@pytest.mark.parametrize("sections,key,fragment", JOB_ERRORS)
def test_job_errors(sections: Dict[str, Any], key: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        job_config_from_dict(job_dict(**sections))
    assert err.value.key == key
    assert fragment in str(err.value)


def test_wildcard_topic_regex_is_accepted() -> None:
    job = job_config_from_dict(job_dict(spout={**REQ, "topic": r"clicks\..*"},
                                        topology={"name": "n", "kafka.topic.wildcard.match": True}))
    assert job.topology.wildcard_match is True and job.spout.topic == r"clicks\..*"


def test_job_not_a_mapping() -> None:
    with pytest.raises(ConfigError):
        job_config_from_dict(["spout"])  # type: ignore[arg-type]


# --- YAML files -------------------------------------------------------------------------------

GOOD_YAML = """\
spout:
  topic: clicks
  zkRoot: /kafka-offsets
  id: clicks-spout
  forceFromStart: true
  fetchSizeBytes: 2097152
hosts:
  zk: zk1:2181,zk2:2181/kafka
  brokerZkPath: /brokers
topology:
  name: clicks
  storm.zookeeper.servers: [zk1, zk2]
  storm.zookeeper.auth.payload: "alice:pw"
spark:
  master: local[2]
bolt: myjob.bolts:count
kafka:
  security_protocol: SASL_SSL
  sasl_plain_password: pw
"""


def test_load_job_config(tmp_path: Any) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(GOOD_YAML)
    job = load_job_config(path)
    assert job.spout.ignore_zk_offsets is True
    assert job.spout.fetch_size_bytes == 2097152
    assert job.spout.hosts == ZkHosts("zk1:2181,zk2:2181/kafka", "/brokers", 60)
    assert job.topology.zookeeper_servers == ("zk1", "zk2")
    assert job.bolt == "myjob.bolts:count"
    assert load_job_config(str(path)) == job


def test_load_missing_file_names_it(tmp_path: Any) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError) as err:
        load_job_config(path)
    assert str(path) in str(err.value) and "cannot read" in str(err.value)


def test_load_bad_yaml_names_file_and_line(tmp_path: Any) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("spout:\n  topic: [clicks\nhosts: {}\n")
    with pytest.raises(ConfigError) as err:
        load_job_config(path)
    assert str(path) in str(err.value) and "not valid YAML" in str(err.value)
    assert "line" in str(err.value)


def test_load_duplicate_key_is_an_error(tmp_path: Any) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text(GOOD_YAML.replace("  id: clicks-spout\n",
                                      "  id: clicks-spout\n  id: other\n"))
    with pytest.raises(ConfigError) as err:
        load_job_config(path)
    assert "duplicate key 'id'" in str(err.value)


def test_load_empty_file(tmp_path: Any) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("# nothing\n")
    with pytest.raises(ConfigError) as err:
        load_job_config(path)
    assert "empty" in str(err.value)


def test_load_validation_error_names_file_and_keeps_key(tmp_path: Any) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(GOOD_YAML.replace("zkRoot: /kafka-offsets", "zkRoot: kafka-offsets"))
    with pytest.raises(ConfigError) as err:
        load_job_config(path)
    assert str(path) in str(err.value)
    assert err.value.key == "spout.zkRoot" and err.value.value == "kafka-offsets"


# --- effective config ----------------------------------------------------------------------

def test_effective_config(tmp_path: Any) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(GOOD_YAML)
    eff = effective_config(load_job_config(path))
    assert list(eff) == ["spout", "hosts", "topology", "spark", "bolt", "kafka"]
    sp = eff["spout"]
    assert [k for k in sp] == [s.storm_name for s in SPOUT_FIELDS]
    assert sp["ignoreZkOffsets"] is True and sp["fetchSizeBytes"] == 2097152
    assert sp["maxOffsetBehind"] == 2**63 - 1 and sp["stateUpdateIntervalMs"] == 2000
    # offsets go to Storm's ZooKeeper when zkServers/zkPort are unset
    assert sp["zkServers"] == ["zk1", "zk2"] and sp["zkPort"] == 2181
    assert eff["hosts"] == {"zk": "zk1:2181,zk2:2181/kafka", "brokerZkPath": "/brokers",
                            "refreshFreqSecs": 60}
    topo = eff["topology"]
    assert topo["topology.name"] == "clicks"
    assert topo["storm.zookeeper.session.timeout"] == 20000
    assert topo["storm.zookeeper.auth.payload"] == MASK
    assert eff["kafka"] == {"security_protocol": "SASL_SSL", "sasl_plain_password": MASK}
    assert eff["bolt"] == "myjob.bolts:count"
    text = json.dumps(eff)
    assert "alice:pw" not in text and '"pw"' not in text


def test_effective_config_static_bootstrap_and_bolts() -> None:
    job = job_config_from_dict(job_dict(
        hosts={"static": {0: "k1:9092"}}, spout={**REQ, "zkServers": ["zo"], "zkPort": 2999},
        topology={"name": "n", "bolts": [{"name": "a", "bolt": "m:f"}]}))
    eff = effective_config(job)
    assert eff["hosts"] == {"static": {0: "k1:9092"}, "useTopicNameForPartitionPathId": False}
    assert eff["spout"]["zkServers"] == ["zo"] and eff["spout"]["zkPort"] == 2999
    assert eff["topology"]["bolts"] == [{"name": "a", "bolt": "m:f", "parallelism": 1,
                                         "inputs": [{"from": "spout", "grouping": "shuffle",
                                                     "stream": "default"}]}]
    assert "bolt" not in eff
    job = job_config_from_dict(job_dict(hosts={"bootstrap": "k1:9092"}))
    assert effective_config(job)["hosts"] == {"bootstrap": ["k1:9092"], "refreshFreqSecs": 60}


def test_offset_store_servers() -> None:
    job = job_config_from_dict(job_dict())
    assert offset_store_servers(job.spout, job.topology) == ("127.0.0.1:2181",)
    job = job_config_from_dict(job_dict(spout={**REQ, "zkServers": ["a", "b"], "zkPort": 2182}))
    assert offset_store_servers(job.spout, job.topology) == ("a:2182", "b:2182")


@pytest.mark.parametrize("key,secret", [
    ("sasl.plain.password", True), ("ssl.key.password", True), ("sasl.jaas.config", True),
    ("sasl_oauth_token_provider", True), ("security.protocol", False),
    ("ssl.keystore.location", False), ("bootstrap.servers", False),
])
def test_is_secret_key(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


def test_config_warnings() -> None:
    job = job_config_from_dict(job_dict())
    notes = config_warnings(job)
    # on the default 127.0.0.1 it is a trap (test_traps.py), said once
    assert not any("STORM-692" in n for n in notes)
    job = job_config_from_dict(job_dict(topology={"name": "clicks",
                                                  "storm.zookeeper.servers": ["szk"]}))
    assert any("STORM-692" in n for n in config_warnings(job))
    # what the adapters do with Storm's 0/0 (kafka.client.MIN_FETCH_MAX_WAIT_MS), not
    # "polled without pause" as this note said while configuration.md said 100 ms
    assert "fetchMaxWait and minFetchByte are both 0 (Storm 1.0.1+ defaults): Storm " \
           "busy-polls an idle partition; here a fetch waits at least 100 ms for data " \
           "(docs/deviations.md)." in notes
    job = job_config_from_dict(job_dict(spout={**REQ, "zkServers": ["z"], "fetchMaxWait": 100,
                                               "minFetchByte": 1}))
    assert config_warnings(job) == []
    job = job_config_from_dict(job_dict(spout={**REQ, "zkServers": ["z"], "minFetchByte": 1,
                                               "maxOffsetBehind": 100000}))
    assert config_warnings(job) == []   # a trap now (test_traps.py), said once


def test_client_mode_notes_the_tuple_shape_not_the_zookeeper_store() -> None:
    client = {"groupId": "g", "bootstrapServers": "k:1", "topics": ["t"]}
    job = job_config_from_dict({"kafkaSpout": client, "topology": {"name": "x"}})
    notes = config_warnings(job)
    assert any("set spout.scheme: record_translator" in n for n in notes)
    assert not any("STORM-692" in n for n in notes)
    job = job_config_from_dict({"kafkaSpout": client, "topology": {"name": "x"},
                                "spout": {"scheme": "record_translator"}})
    assert not any("record_translator" in n for n in config_warnings(job))


# --- documentation stays in step with the tables ---------------------------------------------

DOCS = __import__("pathlib").Path(__file__).resolve().parents[2] / "docs"


def test_configuration_doc_lists_every_field() -> None:
    text = (DOCS / "configuration.md").read_text()
    for spec in SPOUT_FIELDS + TOPOLOGY_FIELDS:
        assert f"`{spec.storm_name}`" in text, spec.storm_name
        assert f"`{spec.attr}`" in text, spec.attr


def test_deviations_doc_names_the_tickets() -> None:
    text = (DOCS / "deviations.md").read_text()
    for ticket in ("STORM-2624", "STORM-869", "STORM-1863", "STORM-399", "analysis"):
        assert ticket in text
    rows = [line for line in text.splitlines() if line[:4] in {f"| {n} " for n in "123456"}]
    assert len(rows) == 6
