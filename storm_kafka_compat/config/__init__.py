"""The job CONFIG: storm-kafka 1.2.x's SpoutConfig/KafkaConfig, hosts, topology keys.

Every Storm field keeps its name (camelCase, accepted as input) and default; the
Python attribute is its snake_case form (``fetchSizeBytes`` -> ``fetch_size_bytes``).
Config objects are frozen. Units are in the names. The package is pure: it imports
neither kazoo, kafka-python nor pyspark.

* :mod:`.model` -- the frozen config objects and Storm's constants;
* :mod:`.fields` -- the field tables (Storm name, type, default, meaning) and checkers;
* :mod:`.sections` -- one section of a CONFIG mapping into its object;
* :mod:`.loader` -- the whole CONFIG: YAML, placeholders, client mode, ``JobConfig``;
* :mod:`.effective` -- the effective config with secrets masked, and warnings;
* :mod:`.objects` -- ``package.module:name`` references to Python objects.

The names below are re-exported so that ``from storm_kafka_compat.config import X``
reaches every one of them.
"""

from storm_kafka_compat.config.model import (BootstrapHosts, Broker, BrokerHosts,
                                             CORRUPT_STATE_POLICIES, DEFAULT_RETRY_MANAGER,
                                             EARLIEST_TIME, INT_MAX, JobConfig, LATEST_TIME,
                                             LONG_MAX, NO_OFFSET, REQUIRED, RETRY_MANAGER_NAMES,
                                             SCHEME_NAMES, STORM_SCHEME_CLASSES, SparkConfig,
                                             SpoutConfig, StaticHosts, TopologyConfig, ZkAuth,
                                             ZkHosts)
from storm_kafka_compat.config.fields import (AUTH_KEYS, BOLT_TOPOLOGY_KEYS, FieldSpec, HOSTS_KEYS,
                                              MASK, REQUIRED_SPOUT_FIELDS, SPARK_KEYS,
                                              SPOUT_FIELDS, TOPOLOGY_FIELDS, TOP_LEVEL_KEYS,
                                              check_bolt_ref, is_callable_ref)
from storm_kafka_compat.config.sections import (hosts_from_dict,
                                                spark_config_from_dict, split_chroot,
                                                spout_config_from_dict, topology_config_from_dict)
from storm_kafka_compat.config.loader import (PLACEHOLDER_RE, find_placeholders,
                                              job_config_from_dict, load_job_config, parse_yaml,
                                              placeholder_fix)
from storm_kafka_compat.config.effective import (config_warnings, effective_config, is_secret_key,
                                                 mask_secrets, offset_store_servers, spout_to_dict,
                                                 topology_to_dict)

__all__ = ["BootstrapHosts", "Broker", "BrokerHosts", "CORRUPT_STATE_POLICIES",
           "DEFAULT_RETRY_MANAGER", "EARLIEST_TIME", "INT_MAX", "JobConfig", "LATEST_TIME",
           "LONG_MAX", "NO_OFFSET", "REQUIRED", "RETRY_MANAGER_NAMES", "SCHEME_NAMES",
           "STORM_SCHEME_CLASSES", "SparkConfig", "SpoutConfig", "StaticHosts", "TopologyConfig",
           "ZkAuth", "ZkHosts", "AUTH_KEYS", "BOLT_TOPOLOGY_KEYS", "FieldSpec", "HOSTS_KEYS",
           "MASK", "REQUIRED_SPOUT_FIELDS", "SPARK_KEYS", "SPOUT_FIELDS", "TOPOLOGY_FIELDS",
           "TOP_LEVEL_KEYS", "is_callable_ref", "check_bolt_ref", "hosts_from_dict",
           "spark_config_from_dict", "split_chroot", "spout_config_from_dict",
           "topology_config_from_dict", "PLACEHOLDER_RE", "find_placeholders",
           "job_config_from_dict", "load_job_config", "parse_yaml", "placeholder_fix",
           "config_warnings", "effective_config", "is_secret_key", "mask_secrets",
           "offset_store_servers", "spout_to_dict", "topology_to_dict"]
