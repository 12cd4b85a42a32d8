"""The znode layout zkRoot/id/[topic/]partition_N and ZooKeeper's path rules."""

import pytest

from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.offsets.paths import (
    parse_partition_node,
    partition_path,
    spout_root,
    validate_zk_path,
    validate_zk_root,
)


@pytest.mark.parametrize("zk_root, spout_id, partition, topic, expected", [
    ("/kafka-offsets", "my-spout-id", 0, None, "/kafka-offsets/my-spout-id/partition_0"),
    ("/kafka-offsets", "my-spout-id", 12, None, "/kafka-offsets/my-spout-id/partition_12"),
    ("/a/b", "id", 3, None, "/a/b/id/partition_3"),
    # spec 11 case 23: an empty zkRoot gives /id/partition_N
    ("", "spout", 7, None, "/spout/partition_7"),
    # wildcard layout: a topic segment between id and partition_N
    ("/kafka-offsets", "my-spout-id", 3, "clicks.eu",
     "/kafka-offsets/my-spout-id/clicks.eu/partition_3"),
    ("", "s", 0, "t", "/s/t/partition_0"),
    # verbatim concatenation like Storm: a bad zkRoot stays bad (validated separately)
    ("kafka", "s", 1, None, "kafka/s/partition_1"),
    ("/kafka/", "s", 1, None, "/kafka//s/partition_1"),
])
def test_partition_path(zk_root, spout_id, partition, topic, expected):
    assert partition_path(zk_root, spout_id, partition, topic) == expected


def test_spout_root():
    assert spout_root("/kafka-offsets", "my-spout-id") == "/kafka-offsets/my-spout-id"
    assert spout_root("", "id") == "/id"


@pytest.mark.parametrize("partition, error", [(True, TypeError), (1.0, TypeError),
                                              ("1", TypeError), (-1, ValueError)])
def test_partition_path_rejects_bad_partition(partition, error):
    with pytest.raises(error):
        partition_path("/r", "id", partition)


@pytest.mark.parametrize("name, expected", [
    ("partition_0", 0),
    ("partition_12", 12),
    ("partition_2147483647", 2147483647),
    ("partition_012", None),      # Storm never writes leading zeros
    ("partition_-1", None),
    ("partition_+1", None),
    ("partition_", None),
    ("partition_1a", None),
    ("partition_\u0661", None),   # a non-ASCII digit
    ("Partition_1", None),
    ("clicks.eu", None),
    ("", None),
])
def test_parse_partition_node(name, expected):
    assert parse_partition_node(name) == expected


@pytest.mark.parametrize("path", [
    "/", "/a", "/kafka-offsets/my-spout-id/partition_0", "/a/..b/c.", "/a/b c/\u00e9",
])
def test_valid_paths(path):
    assert validate_zk_path(path) == path


@pytest.mark.parametrize("path, reason", [
    ("", "empty"),
    ("kafka/id/partition_0", "does not start with '/'"),
    ("/kafka/", "ends with '/'"),
    ("/kafka//id", "empty segment"),
    ("/kafka/./id", "'.' segment"),
    ("/kafka/../id", "'..' segment"),
    ("/kafka\x00/id", "NUL"),
    ("/kafka\x01", "U+0001"),
    ("/kafka\x85", "U+0085"),
    ("/kafka\ufff5", "U+FFF5"),
])
def test_invalid_paths_name_the_path_and_the_fix(path, reason):
    with pytest.raises(ConfigError) as info:
        validate_zk_path(path)
    message = str(info.value)
    assert repr(path) in message
    assert reason in message
    assert "spout.zkRoot" in message
    assert info.value.value == path


@pytest.mark.parametrize("zk_root", ["", "/kafka-offsets", "/a/b"])
def test_valid_zk_roots(zk_root):
    assert validate_zk_root(zk_root) == zk_root


@pytest.mark.parametrize("zk_root", ["/", "kafka", "/kafka/", "/a//b"])
def test_invalid_zk_roots(zk_root):
    with pytest.raises(ConfigError) as info:
        validate_zk_root(zk_root)
    assert info.value.key == "spout.zkRoot"
    assert repr(zk_root) in str(info.value)
