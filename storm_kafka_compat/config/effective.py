"""The effective config (``config show``): every field with its value, secrets masked,
and the warnings a CONFIG deserves.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Tuple

from storm_kafka_compat.config.model import (DEFAULT_STORM_ZOOKEEPER, BrokerHosts, JobConfig,
                                             SpoutConfig, StaticHosts, TopologyConfig, ZkHosts)
from storm_kafka_compat.config.fields import MASK, SPOUT_FIELDS, TOPOLOGY_FIELDS, SECRET_WORDS


# --- effective config -------------------------------------------------------------


def is_secret_key(key: str) -> bool:
    """True if a settings key names a secret (password, JAAS config, token...)."""
    low = key.lower()
    return any(word in low for word in SECRET_WORDS)


def secret_values(settings: Mapping[str, Any]) -> List[str]:
    """The values of the secret keys of ``settings`` (recursively), as text: what a
    log must never print (:func:`storm_kafka_compat.cli.console.redact`)."""
    out: List[str] = []
    for k, v in settings.items():
        if is_secret_key(str(k)) and v not in (None, ""):
            out.append(str(v))
        elif isinstance(v, Mapping):
            out += secret_values(v)
    return out


def mask_secrets(settings: Mapping[str, Any]) -> Dict[str, Any]:
    """Copy of ``settings`` with secret values replaced by ``"***"`` (recursively)."""
    out: Dict[str, Any] = {}
    for k, v in settings.items():
        if is_secret_key(str(k)):
            out[k] = MASK
        elif isinstance(v, Mapping):
            out[k] = mask_secrets(v)
        else:
            out[k] = v
    return out


def offset_store_servers(spout: SpoutConfig, topology: TopologyConfig) -> Tuple[str, ...]:
    """ZooKeeper ``host:port`` list that stores the offsets.

    ``zkServers``/``zkPort`` when set, else ``storm.zookeeper.servers``/``port``
    (Storm's own ZooKeeper, as storm-kafka does).
    """
    servers = spout.zk_servers if spout.zk_servers is not None else topology.zookeeper_servers
    port = spout.zk_port if spout.zk_port is not None else topology.zookeeper_port
    return tuple(f"{s}:{port}" for s in servers)


def _hosts_dict(hosts: BrokerHosts) -> Dict[str, Any]:
    if isinstance(hosts, ZkHosts):
        return {"zk": hosts.broker_zk_str, "brokerZkPath": hosts.broker_zk_path,
                "refreshFreqSecs": hosts.refresh_freq_secs}
    if isinstance(hosts, StaticHosts):
        return {"static": {p: str(b) for p, b in hosts.partitions.items()},
                "useTopicNameForPartitionPathId": hosts.use_topic_name_for_partition_path_id}
    return {"bootstrap": list(hosts.servers), "refreshFreqSecs": hosts.refresh_freq_secs}


def spout_to_dict(spout: SpoutConfig) -> Dict[str, Any]:
    """Every SpoutConfig field under its Storm name (lists for tuples)."""
    out: Dict[str, Any] = {}
    for spec in SPOUT_FIELDS:
        value = getattr(spout, spec.attr)
        out[spec.storm_name] = list(value) if isinstance(value, tuple) else value
    return out


def topology_to_dict(topology: TopologyConfig, *, mask: bool = True) -> Dict[str, Any]:
    """Every topology key under its Storm name; the digest credential masked."""
    out: Dict[str, Any] = {}
    for spec in TOPOLOGY_FIELDS:
        value = getattr(topology, spec.attr)
        out[spec.storm_name] = list(value) if isinstance(value, tuple) else value
    auth = topology.zookeeper_auth
    if auth is not None:
        out["storm.zookeeper.auth.scheme"] = auth.scheme
        out["storm.zookeeper.auth.payload"] = MASK if mask else auth.credential
        out["acl"] = auth.acl_on_create
    return out


def effective_config(job: JobConfig) -> Dict[str, Any]:
    """The configuration as the job will use it, for ``config check``.

    Nested like CONFIG, Storm names, every default filled in, secrets shown as
    ``"***"``. ``spout.zkServers``/``zkPort`` show what is used: Storm's
    ZooKeeper (``storm.zookeeper.*``) when they were unset.
    """
    spout = spout_to_dict(job.spout)
    if job.spout.zk_servers is None:
        spout["zkServers"] = list(job.topology.zookeeper_servers)
    if job.spout.zk_port is None:
        spout["zkPort"] = job.topology.zookeeper_port
    topology = topology_to_dict(job.topology)
    if job.topology_spec is not None:
        topology.update(job.topology_spec.as_dict())
    out: Dict[str, Any] = {
        "spout": spout,
        "hosts": _hosts_dict(job.spout.hosts),
        "topology": topology,
        "spark": {"master": job.spark.master, "appName": job.spark.app_name,
                  "tasks": job.spark.tasks, "conf": mask_secrets(job.spark.conf),
                  "pyFiles": list(job.spark.py_files),
                  "triggerInterval": job.spark.trigger_interval_ms},
    }
    if job.bolt is not None:
        out["bolt"] = job.bolt
    if job.dataframe is not None:
        out["dataframe"] = job.dataframe
    out["kafka"] = mask_secrets(job.kafka)
    if job.kafka_spout is not None:
        from storm_kafka_compat.config.kafka_spout import kafka_spout_to_dict
        client = kafka_spout_to_dict(job.kafka_spout)
        client["consumer"] = mask_secrets(client["consumer"])
        out["kafkaSpout"] = client
    return out


def config_warnings(job: JobConfig) -> List[str]:
    """Advice about legal but surprising settings, one sentence each (the settings that
    lose a topology's place are traps: :mod:`storm_kafka_compat.config.traps`)."""
    out: List[str] = []
    if job.uses_kafka_offsets and job.spout.scheme == "raw":
        out.append("kafkaSpout with spout.scheme raw: bolts get one field, the value bytes; "
                   "storm-kafka-client's default RecordTranslator emits (topic, partition, "
                   "offset, key, value): set spout.scheme: record_translator to keep that "
                   "tuple shape.")
    if job.spout.zk_servers is None and not job.uses_kafka_offsets and \
            job.topology.zookeeper_servers != DEFAULT_STORM_ZOOKEEPER:
        # on the default ZooKeeper (127.0.0.1) it is a trap: traps.offsets_zookeeper
        out.append("spout.zkServers is unset: offsets are stored in Storm's ZooKeeper "
                   f"({','.join(offset_store_servers(job.spout, job.topology))}), as "
                   "storm-kafka does (STORM-692).")
    if job.spout.fetch_max_wait == 0 and job.spout.min_fetch_byte == 0:
        from storm_kafka_compat.config.kafka_settings import MIN_FETCH_MAX_WAIT_MS
        out.append("fetchMaxWait and minFetchByte are both 0 (Storm 1.0.1+ defaults): Storm "
                   "busy-polls an idle partition; here a fetch waits at least "
                   f"{MIN_FETCH_MAX_WAIT_MS} ms for data (docs/deviations.md).")
    return out
