"""One CONFIG section into its object: ``spout``, ``hosts``, ``topology``, ``spark``,
the bolt references and the ``kafka`` mapping.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any, Dict, Mapping, Optional, Tuple

from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.config.model import (BootstrapHosts, Broker, BrokerHosts,
                                             CORRUPT_STATE_POLICIES, DEFAULT_RETRY_MANAGER,
                                             EARLIEST_TIME, INT_MAX, LATEST_TIME, LONG_MAX,
                                             RETRY_MANAGER_NAMES, SCHEME_NAMES,
                                             STORM_SCHEME_CLASSES, SparkConfig, SpoutConfig,
                                             StaticHosts, TopologyConfig, ZkAuth, ZkHosts)
from storm_kafka_compat.config.fields import (AUTH_KEYS, BOLT_TOPOLOGY_KEYS, FieldSpec,
                                              HOSTS_KEYS, HOSTS_KINDS, MASK,
                                              REQUIRED_SPOUT_FIELDS, SPARK_KEYS,
                                              SPOUT_FIELDS, TOPOLOGY_FIELDS, DOTTED_RE,
                                              SPOUT_BY_NAME, TOPOLOGY_BY_NAME, check_bool,
                                              check_int, check_str, check_str_list,
                                              check_zk_path, require_mapping, type_name,
                                              unknown_key, is_callable_ref,
                                              parse_interval_ms)
from storm_kafka_compat.config.topology_spec import TopologySpec, topology_spec_from_dict


# --- SpoutConfig ----------------------------------------------------------------


def _check_spout_value(spec: FieldSpec, value: Any, key: str) -> Any:
    """Type- and range-check one SpoutConfig value; return the normalised value."""
    name = spec.storm_name
    if value is None and name in ("zkServers", "zkPort", "outputStreamId",
                                  "maxPendingPerPartition"):
        return None
    if name in ("topic", "id"):
        text = check_str(value, key, empty_ok=False)
        if name == "id" and "/" in text:
            raise ConfigError(f"{key} {text!r} must be one ZooKeeper path segment without '/'; "
                              f"use {text.replace('/', '-')!r} or move the prefix into zkRoot.",
                              key=key, value=text)
        return text
    if name == "zkRoot":
        return check_zk_path(value, key, empty_ok=True)
    if name in ("clientId", "outputStreamId"):
        return check_str(value, key)
    if name == "scheme":
        text = check_str(value, key)
        if text in STORM_SCHEME_CLASSES:
            return STORM_SCHEME_CLASSES[text]
        if text not in SCHEME_NAMES and not is_callable_ref(text):
            raise ConfigError(f"{key} {text!r} is not a scheme; use one of "
                              f"{', '.join(SCHEME_NAMES)}, a Storm scheme class such as "
                              f"org.apache.storm.kafka.StringScheme, or "
                              f"'package.module:callable'.",
                              key=key, value=text, allowed=SCHEME_NAMES)
        return text
    if name == "failedMsgRetryManagerClass":
        text = check_str(value, key)
        if text in RETRY_MANAGER_NAMES:
            return DEFAULT_RETRY_MANAGER
        if not is_callable_ref(text) and not DOTTED_RE.match(text):
            raise ConfigError(f"{key} {text!r} is not a class name; use "
                              f"{DEFAULT_RETRY_MANAGER!r} or a Python class as "
                              f"'package.module:Class'.", key=key, value=text,
                              allowed=(DEFAULT_RETRY_MANAGER, "module:callable"))
        return text
    if name == "corruptStatePolicy":
        text = check_str(value, key)
        if text not in CORRUPT_STATE_POLICIES:
            raise ConfigError(f"{key} {text!r} is not a policy; use one of "
                              f"{', '.join(CORRUPT_STATE_POLICIES)}.", key=key, value=text,
                              allowed=CORRUPT_STATE_POLICIES)
        return text
    if name == "zkServers":
        return check_str_list(value, key)
    if name == "zkPort":
        return check_int(value, key, lo=1, hi=65535, what="a port number")
    if name == "retryDelayMultiplier":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{key} must be a number, got {value!r} ({type_name(value)}).",
                              key=key, value=value)
        if not math.isfinite(value) or value <= 0:
            raise ConfigError(f"{key} must be a finite number > 0, got {value!r}; use 1.0 for "
                              f"a constant delay or e.g. 2.0 to double it per failure.",
                              key=key, value=value)
        return float(value)
    if spec.java_type == "boolean":
        return check_bool(value, key)
    if name == "startOffsetTime":
        v = check_int(value, key, what="an integer (-2, -1 or epoch milliseconds)")
        if v < 0 and v not in (EARLIEST_TIME, LATEST_TIME):
            raise ConfigError(f"{key} {v} is not valid; use -2 (earliest), -1 (latest) or a "
                              f"time in epoch milliseconds (>= 0).", key=key, value=v,
                              allowed=("-2", "-1", ">= 0"))
        return v
    if name == "retryLimit":
        return check_int(value, key, lo=-INT_MAX - 1, hi=INT_MAX)
    hi = INT_MAX if spec.java_type == "int" else LONG_MAX
    # sizes, periods and the max-pending cap must be positive; waits and delays may be 0
    positive = name in ("fetchSizeBytes", "bufferSizeBytes", "socketTimeoutMs",
                        "metricsTimeBucketSizeInSecs", "maxPendingPerPartition")
    return check_int(value, key, lo=1 if positive else 0, hi=hi)


def spout_config_from_dict(mapping: Mapping[str, Any], *, hosts: BrokerHosts,
                           section: str = "spout", documents: bool = True) -> SpoutConfig:
    """Build a :class:`SpoutConfig` from Storm (camelCase) or snake_case names.

    Parameters
    ----------
    mapping : Mapping
        The ``spout`` section. ``forceFromStart`` (0.9.x) is accepted as an alias
        of ``ignoreZkOffsets``.
    hosts : ZkHosts, StaticHosts or BootstrapHosts
        Built from the top-level ``hosts`` section (see :func:`hosts_from_dict`).
    section : str
        Prefix used in error keys.
    documents : bool
        The job keeps its offsets in ZooKeeper documents, so ``zkRoot`` and ``id``
        are required; False for a Kafka-store job (they are None unless given).

    Returns
    -------
    SpoutConfig

    Raises
    ------
    ConfigError
        Unknown key, wrong type, out-of-range value, missing required field, or
        the same field given twice under different names with different values.
    """
    require_mapping(mapping, section)
    valid = [spec.storm_name for spec in SPOUT_FIELDS] + ["forceFromStart"]
    values: Dict[str, Any] = {}
    given_as: Dict[str, str] = {}
    for raw_key, value in mapping.items():
        spec = SPOUT_BY_NAME.get(raw_key)
        if spec is None:
            if raw_key == "hosts":
                raise ConfigError(f"{section}.hosts: hosts is a top-level section, not a spout "
                                  f"field; move it out of {section}.", key=f"{section}.hosts",
                                  value=value)
            raise unknown_key(section, raw_key, valid)
        key = f"{section}.{raw_key}"
        checked = _check_spout_value(spec, value, key)
        if spec.attr in values and values[spec.attr] != checked:
            raise ConfigError(f"{key} ({checked!r}) contradicts {section}.{given_as[spec.attr]} "
                              f"({values[spec.attr]!r}); they are the same field, keep one.",
                              key=key, value=value)
        values[spec.attr] = checked
        given_as[spec.attr] = raw_key
    for name in REQUIRED_SPOUT_FIELDS:
        if not documents and name in ("zkRoot", "id"):
            values.setdefault(SPOUT_BY_NAME[name].attr, None)
            continue
        if SPOUT_BY_NAME[name].attr not in values:
            raise ConfigError(f"{section}.{name} is required (a SpoutConfig constructor "
                              f"argument); add it to the {section} section.",
                              key=f"{section}.{name}", value=None)
    return SpoutConfig(hosts=hosts, **values)


# --- hosts ------------------------------------------------------------------------


def split_chroot(connect: str) -> Tuple[str, str]:
    """Split a ZooKeeper connect string into hosts and chroot.

    ``"zk1:2181,zk2:2181/kafka"`` -> ``("zk1:2181,zk2:2181", "/kafka")``; without a
    chroot (or with ``"/"``) the chroot is ``""``.

    Raises
    ------
    ConfigError
        No host, or a chroot that ZooKeeper would reject (trailing ``/``, ``//``).
    """
    text = connect.strip()
    slash = text.find("/")
    hosts, chroot = (text, "") if slash < 0 else (text[:slash], text[slash:])
    if chroot == "/":
        chroot = ""
    if not hosts or any(not h.strip() for h in hosts.split(",")):
        raise ConfigError(f"ZooKeeper connect string {connect!r} has an empty host; write "
                          f"'host:port[,host:port...][/chroot]'.", key="hosts.zk", value=connect)
    if chroot and (chroot.endswith("/") or "//" in chroot):
        raise ConfigError(f"chroot {chroot!r} of {connect!r} is not a valid ZooKeeper path; "
                          f"use {'/' + chroot.strip('/')!r}.", key="hosts.zk", value=connect)
    return hosts, chroot


def _first(mapping: Mapping[str, Any], *names: str) -> Tuple[Optional[str], Any]:
    for n in names:
        if n in mapping:
            return n, mapping[n]
    return None, None


def hosts_from_dict(mapping: Mapping[str, Any], *, section: str = "hosts") -> BrokerHosts:
    """Build the broker hosts from the ``hosts`` section.

    Exactly one of:

    - ``zk: "h1:2181,h2:2181/chroot"`` (ZkHosts) with optional ``brokerZkPath``
      (default ``/brokers``) and ``refreshFreqSecs`` (default 60);
    - ``static: {0: "host:port", ...}`` (StaticHosts) with optional
      ``useTopicNameForPartitionPathId`` (default false);
    - ``bootstrap: "h:p,h2:p"`` or a list (KRaft-era discovery) with optional
      ``refreshFreqSecs``.

    Raises
    ------
    ConfigError
        Unknown key, none or several kinds, or a malformed value.
    """
    require_mapping(mapping, section)
    for k in mapping:
        if k not in HOSTS_KEYS:
            raise unknown_key(section, k, ("zk", "brokerZkPath", "refreshFreqSecs", "static",
                                            "useTopicNameForPartitionPathId", "bootstrap"))
    kinds = [k for k in HOSTS_KINDS if k in mapping]
    if len(kinds) != 1:
        raise ConfigError(f"{section} must have exactly one of zk, static or bootstrap, got "
                          f"{kinds or 'none'}; keep the one that describes your cluster.",
                          key=section, value=kinds, allowed=HOSTS_KINDS)
    kind = kinds[0]
    allowed_extra = {"zk": {"brokerZkPath", "broker_zk_path", "refreshFreqSecs",
                            "refresh_freq_secs"},
                     "static": {"useTopicNameForPartitionPathId",
                                "use_topic_name_for_partition_path_id"},
                     "bootstrap": {"refreshFreqSecs", "refresh_freq_secs"}}[kind]
    for k in mapping:
        if k != kind and k not in allowed_extra:
            raise ConfigError(f"{section}.{k} does not apply to {kind} hosts; remove it "
                              f"(allowed with {kind}: {', '.join(sorted(allowed_extra))}).",
                              key=f"{section}.{k}", value=mapping[k],
                              allowed=sorted(allowed_extra))
    rk, refresh = _first(mapping, "refreshFreqSecs", "refresh_freq_secs")
    refresh_secs = 60 if rk is None else check_int(refresh, f"{section}.{rk}", lo=1,
                                                    hi=INT_MAX)
    if kind == "zk":
        connect = check_str(mapping["zk"], f"{section}.zk", empty_ok=False).strip()
        split_chroot(connect)
        pk, path = _first(mapping, "brokerZkPath", "broker_zk_path")
        broker_path = "/brokers" if pk is None else check_zk_path(path, f"{section}.{pk}",
                                                                   empty_ok=False)
        return ZkHosts(connect, broker_path, refresh_secs)
    if kind == "static":
        table = require_mapping(mapping["static"], f"{section}.static")
        if not table:
            raise ConfigError(f"{section}.static is empty; map each partition number to its "
                              f"leader, e.g. {{0: 'kafka1:9092'}}.", key=f"{section}.static",
                              value=dict(table))
        partitions: Dict[int, Broker] = {}
        for p, addr in table.items():
            pkey = f"{section}.static.{p}"
            try:
                num = int(p) if not isinstance(p, bool) else None
            except (TypeError, ValueError):
                num = None
            if num is None or num < 0:
                raise ConfigError(f"{pkey}: partition {p!r} must be a number >= 0.", key=pkey,
                                  value=p)
            partitions[num] = _broker(addr, pkey)
        uk, use = _first(mapping, "useTopicNameForPartitionPathId",
                         "use_topic_name_for_partition_path_id")
        use_topic = False if uk is None else check_bool(use, f"{section}.{uk}")
        return StaticHosts(dict(sorted(partitions.items())), use_topic)
    servers = check_str_list(mapping["bootstrap"], f"{section}.bootstrap")
    for i, s in enumerate(servers):
        _broker(s, f"{section}.bootstrap[{i}]")
    return BootstrapHosts(servers, refresh_secs)


def _broker(addr: Any, key: str) -> Broker:
    if isinstance(addr, Mapping):
        host = check_str(addr.get("host"), f"{key}.host", empty_ok=False)
        port = check_int(addr.get("port", 9092), f"{key}.port", lo=1, hi=65535)
        return Broker(host, port)
    text = check_str(addr, key, empty_ok=False).strip()
    try:
        broker = Broker.from_string(text)
    except ValueError:
        raise ConfigError(f"{key} {text!r} is not 'host' or 'host:port' with a numeric port.",
                          key=key, value=text) from None
    if not broker.host or not 0 < broker.port <= 65535:
        raise ConfigError(f"{key} {text!r} is not 'host' or 'host:port' (port 1-65535).",
                          key=key, value=text)
    return broker


# --- topology --------------------------------------------------------------------


def _check_topology_value(spec: FieldSpec, value: Any, key: str) -> Any:
    attr = spec.attr
    if attr == "name":
        return check_str(value, key, empty_ok=False)
    if attr == "id":
        return None if value is None else check_str(value, key, empty_ok=False)
    if attr in ("trident_tx_state_id", "transactional_root", "state_dir"):
        return None if value is None else check_str(value, key, empty_ok=False)
    if attr == "wildcard_match":
        return check_bool(value, key)
    if attr == "zookeeper_servers":
        return check_str_list(value, key)
    if attr == "zookeeper_port":
        return check_int(value, key, lo=1, hi=65535, what="a port number")
    if attr in ("max_spout_pending", "bolt_hosts", "tick_tuple_freq_secs"):
        return None if value is None else check_int(value, key, lo=1, hi=INT_MAX)
    if attr == "zookeeper_retry_times":
        return check_int(value, key, lo=0, hi=INT_MAX)
    return check_int(value, key, lo=1, hi=INT_MAX)  # timeouts and intervals


def topology_config_from_dict(mapping: Mapping[str, Any], *,
                              section: str = "topology") -> TopologyConfig:
    """Build a :class:`TopologyConfig` from Storm topology-config keys.

    Accepts ``topology.name`` (or ``name``), ``topology.id`` (or ``id``),
    ``kafka.topic.wildcard.match``, ``storm.zookeeper.*``,
    ``topology.message.timeout.secs``, ``topology.max.spout.pending``, the digest
    auth keys ``storm.zookeeper.auth.scheme``/``storm.zookeeper.auth.payload``
    (``user:password``) and our ``acl`` flag. ``bolts`` (a topology of bolts)
    is skipped here: :func:`job_config_from_dict` keeps it.

    Raises
    ------
    ConfigError
        Unknown key, wrong type or value, missing ``topology.name``.
    """
    require_mapping(mapping, section)
    valid = [s.storm_name for s in TOPOLOGY_FIELDS] + ["name", "id"] + list(AUTH_KEYS) \
        + list(BOLT_TOPOLOGY_KEYS)
    values: Dict[str, Any] = {}
    given_as: Dict[str, str] = {}
    for raw_key, value in mapping.items():
        if raw_key in BOLT_TOPOLOGY_KEYS or raw_key in AUTH_KEYS:
            continue
        spec = TOPOLOGY_BY_NAME.get(raw_key)
        if spec is None:
            raise unknown_key(section, raw_key, valid)
        key = f"{section}.{raw_key}"
        checked = _check_topology_value(spec, value, key)
        if spec.attr in values and values[spec.attr] != checked:
            raise ConfigError(f"{key} ({checked!r}) contradicts {section}.{given_as[spec.attr]} "
                              f"({values[spec.attr]!r}); keep one.", key=key, value=value)
        values[spec.attr] = checked
        given_as[spec.attr] = raw_key
    if "name" not in values:
        raise ConfigError(f"{section}.name (topology.name) is required: it is written into "
                          f"every offset document; add 'name: <topology name>'.",
                          key=f"{section}.name", value=None)
    auth = _zk_auth_from_dict(mapping, section)
    return TopologyConfig(zookeeper_auth=auth, **values)


def _zk_auth_from_dict(mapping: Mapping[str, Any], section: str) -> Optional[ZkAuth]:
    sk, scheme = _first(mapping, "storm.zookeeper.auth.scheme",
                        "storm.zookeeper.topology.auth.scheme")
    pk, payload = _first(mapping, "storm.zookeeper.auth.payload",
                         "storm.zookeeper.topology.auth.payload")
    acl = False if "acl" not in mapping else check_bool(mapping["acl"], f"{section}.acl")
    if sk is not None:
        check_str(scheme, f"{section}.{sk}")
        if scheme != "digest":
            raise ConfigError(f"{section}.{sk} {scheme!r} is not supported; only 'digest' "
                              f"authentication is.", key=f"{section}.{sk}", value=scheme,
                              allowed=("digest",))
    if pk is None:
        if acl:
            raise ConfigError(f"{section}.acl is true but no storm.zookeeper.auth.payload "
                              f"('user:password') is given; add the credentials or drop acl.",
                              key=f"{section}.acl", value=True)
        return None
    cred = check_str(payload, f"{section}.{pk}")
    user, sep, _ = cred.partition(":")
    if not sep or not user:
        shown = f"{user}:{MASK}" if sep else MASK  # never echo what may be a password
        raise ConfigError(f"{section}.{pk} must be 'user:password' (digest), got {shown!r}.",
                          key=f"{section}.{pk}", value=MASK)
    return ZkAuth("digest", cred, acl)


# --- spark, bolts, kafka ----------------------------------------------------------------


#: the master URLs Spark accepts (SparkContext.createTaskScheduler, SparkSubmit)
_MASTER_FORMS = (
    (re.compile(r"local(\[(\d+|\*)(,\d+)?\])?"), "local, local[N], local[*], local[N,F]"),
    (re.compile(r"local-cluster\[\d+,\d+,\d+\]"), "local-cluster[N,CORES,MB]"),
    (re.compile(r"spark://[^\s/,]+:\d+(,[^\s/,]+:\d+)*"), "spark://HOST:PORT[,HOST:PORT]"),
    (re.compile(r"yarn"), "yarn"),
    (re.compile(r"k8s://\S+"), "k8s://https://HOST:PORT"),
    (re.compile(r"mesos://\S+"), "mesos://HOST:PORT"),
)


def check_master(value: str, key: str = "spark.master") -> str:
    """``value`` when it is a master URL Spark accepts; else a ConfigError naming the
    forms (Spark itself fails only when the session starts, with a long traceback)."""
    if any(pattern.fullmatch(value.strip()) for pattern, _ in _MASTER_FORMS):
        return value.strip()
    forms = "; ".join(form for _, form in _MASTER_FORMS)
    raise ConfigError(f"{key} {value!r} is not a Spark master URL; use one of: {forms} "
                      "(N, F, CORES and MB are numbers, e.g. local[2])", key=key, value=value)


def spark_config_from_dict(mapping: Mapping[str, Any], *, section: str = "spark") -> SparkConfig:
    """Build :class:`SparkConfig` from ``master``, ``appName``/``app_name``, ``tasks``, ``conf``
    and ``pyFiles``/``py_files`` (what to ship to the executors).

    ``conf`` values are turned into strings (booleans as ``true``/``false``).
    """
    require_mapping(mapping, section)
    for k in mapping:
        if k not in SPARK_KEYS:
            raise unknown_key(section, k, ("master", "appName", "tasks", "conf", "pyFiles",
                                            "triggerInterval"))
    values: Dict[str, Any] = {}
    if "master" in mapping:
        values["master"] = check_master(
            check_str(mapping["master"], f"{section}.master", empty_ok=False),
            f"{section}.master")
    ak, app = _first(mapping, "appName", "app_name")
    if ak is not None:
        values["app_name"] = check_str(app, f"{section}.{ak}", empty_ok=False)
    if mapping.get("tasks") is not None:
        values["tasks"] = check_int(mapping["tasks"], f"{section}.tasks", lo=1, hi=INT_MAX)
    if mapping.get("conf") is not None:
        conf = require_mapping(mapping["conf"], f"{section}.conf")
        out: Dict[str, str] = {}
        for k, v in conf.items():
            if isinstance(v, bool):
                out[k] = "true" if v else "false"
            elif isinstance(v, (str, int, float)):
                out[k] = str(v)
            else:
                raise ConfigError(f"{section}.conf.{k} must be a scalar (Spark settings are "
                                  f"strings), got {v!r}.", key=f"{section}.conf.{k}", value=v)
        values["conf"] = out
    pk, py_files = _first(mapping, "pyFiles", "py_files")
    if pk is not None and py_files is not None:
        values["py_files"] = check_str_list(py_files, f"{section}.{pk}",
                                             "files, package directories or archives")
    tk, trigger = _first(mapping, "triggerInterval", "trigger_interval")
    if tk is not None and trigger is not None:
        values["trigger_interval_ms"] = parse_interval_ms(trigger, f"{section}.{tk}")
    return SparkConfig(**values)


def kafka_bolts_inherit(spec: Optional[TopologySpec], kafka: Mapping[str, Any]
                         ) -> Optional[TopologySpec]:
    """KafkaBolt entries without their own ``kafka`` property get the job's ``kafka``
    section (the pinned ``api_version`` above all) for their producer."""
    if spec is None or not kafka:
        return spec
    bolts = []
    for b in spec.bolts:
        if b.storm_class:
            props = dict(b.properties or {})
            props.setdefault("kafka", dict(kafka))
            b = replace(b, properties=props)
        bolts.append(b)
    return TopologySpec(tuple(bolts))


def topology_spec_section(mapping: Mapping[str, Any], section: str) -> Optional[TopologySpec]:
    """The section's ``bolts`` as a :class:`TopologySpec`, or None without them."""
    present = {k: mapping[k] for k in BOLT_TOPOLOGY_KEYS if k in mapping}
    if not present:
        return None
    return topology_spec_from_dict(present, section)


def kafka_settings_section(value: Any, section: str = "kafka") -> Dict[str, Any]:
    from storm_kafka_compat.config.kafka_settings import kafka_settings_from_dict
    mapping = dict(require_mapping(value, section))
    kafka_settings_from_dict(mapping, section)          # raises ConfigError when malformed
    return mapping
