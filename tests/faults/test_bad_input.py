"""Bad input: every SpoutConfig field with a wrong type or value, unreadable CONFIG,
unreachable ZooKeeper or broker. Each gives one ``Error:`` line naming the value,
exit code 2 (config) or 1 (operational), and writes nothing to ZooKeeper."""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Tuple

import pytest

from storm_kafka_compat.config import SPOUT_FIELDS
from tests.faults.harness import job_config, run_cli, wait_until, write_config, zk_tree
from storm_kafka_compat.workshop.servers.zookeeper import free_port

pytestmark = [pytest.mark.fault, pytest.mark.integration]

#: a value of the wrong type for each Java type of the field table
WRONG_TYPE: Dict[str, Any] = {
    "String": 12345, "MultiScheme": 12345, "int": "ten", "long": "ten", "Integer": "ten",
    "double": "ten", "boolean": "yes", "List<String>": 12345,
}

#: a value of the right type that the field does not accept
WRONG_VALUE: Dict[str, Any] = {
    "topic": "", "zkRoot": "offsets/", "id": "a/b", "clientId": None, "fetchSizeBytes": 0,
    "socketTimeoutMs": -1, "fetchMaxWait": -5, "minFetchByte": -1, "bufferSizeBytes": 0,
    "scheme": "no-such-scheme", "ignoreZkOffsets": 1, "startOffsetTime": -3,
    "maxOffsetBehind": -1, "useStartOffsetTimeIfOffsetOutOfRange": "false",
    "metricsTimeBucketSizeInSecs": 0, "zkServers": [], "zkPort": 70000, "outputStreamId": 7,
    "stateUpdateIntervalMs": -1, "failedMsgRetryManagerClass": "not a class",
    "retryInitialDelayMs": -1, "retryDelayMultiplier": 0, "retryDelayMaxMs": -1,
    "retryLimit": 2**31, "corruptStatePolicy": "maybe", "maxOffsetBehindResetToWindow": "no",
    "maxPendingPerPartition": 0,
}


def test_the_tables_cover_every_spout_field():
    names = {spec.storm_name for spec in SPOUT_FIELDS}
    assert names == set(WRONG_VALUE), "add the new field to WRONG_VALUE"
    assert {spec.java_type for spec in SPOUT_FIELDS} <= set(WRONG_TYPE)


def _cases() -> List[Tuple[str, Any]]:
    out = []
    for spec in SPOUT_FIELDS:
        out.append((spec.storm_name, WRONG_TYPE[spec.java_type]))
        out.append((spec.storm_name, WRONG_VALUE[spec.storm_name]))
    return out


def _base(zk_port: int) -> Dict[str, Any]:
    return job_config(topic="bad-input", zk_root="/skc-faults/bad-input", spout_id="spout",
                      zk_port=zk_port, static={0: "127.0.0.1:9"})


def test_every_spout_field_with_a_wrong_type_or_value(zk_server, tmp_path, capsys):
    """Through the CLI's entry point (in process: the table has ~60 rows), then
    one row through the installed console script."""
    import logging

    from storm_kafka_compat.cli.main import main

    before = zk_tree(zk_server.connect_string)
    failures = []
    package_logger = logging.getLogger("storm_kafka_compat")
    saved = (list(package_logger.handlers), package_logger.level)
    try:
        _run_table(main, zk_server.port, tmp_path, capsys, failures)
    finally:   # each CLI call installs a stderr handler: do not leak them
        package_logger.handlers[:] = saved[0]
        package_logger.setLevel(saved[1])
    assert not failures, "\n".join(failures)
    assert zk_tree(zk_server.connect_string) == before

    config = _base(zk_server.port)
    config["spout"]["fetchSizeBytes"] = "1MB"
    result = run_cli(["run", str(write_config(tmp_path / "one.yaml", config))], timeout_s=60)
    assert result.returncode == 2, result.stderr
    assert "spout.fetchSizeBytes" in result.stderr and "'1MB'" in result.stderr
    assert result.stdout == ""


def _run_table(main, zk_port, tmp_path, capsys, failures):
    for name, value in _cases():
        config = _base(zk_port)
        config["spout"] = copy.deepcopy(config["spout"])
        config["spout"][name] = value
        path = write_config(tmp_path / "job.yaml", config)
        code = main(["run", str(path), "--until-caught-up"])
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.startswith("Error:")]
        problems = []
        if code != 2:
            problems.append(f"exit {code}")
        if len(lines) != 1:
            problems.append(f"{len(lines)} 'Error:' lines")
        elif f"spout.{name}" not in lines[0] or (str(value) not in lines[0]
                                                 and repr(value) not in lines[0]):
            problems.append(f"message does not name spout.{name}={value!r}: {lines[0]}")
        if problems:
            failures.append(f"{name}={value!r}: {'; '.join(problems)}")


@pytest.mark.parametrize("content, expected", [
    (None, "cannot read config file"),                  # missing file
    (b"\xff\xfe not utf-8", "cannot read config file"),
    (b"spout: [unclosed\n", "is not valid YAML"),
    (b"", "is empty"),
    (b"spout: {}\nhosts: {}\ntopology: {}\nbolts: x\n", "unknown key 'bolts'"),
])
def test_unreadable_config(tmp_path, content, expected):
    path = tmp_path / "job.yaml"
    if content is not None:
        path.write_bytes(content)
    result = run_cli(["run", str(path)], timeout_s=60)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("Error:") and expected in result.stderr
    assert str(path) in result.stderr
    assert result.stdout == ""


@pytest.mark.hard_timeout(600)
def test_unreachable_zookeeper_and_broker(zk_server, tmp_path, unique):
    """Both jobs run at once (each starts Spark first, then finds its server gone)."""
    import os
    import subprocess
    import sys

    from tests.faults.harness import console_script

    dead_zk, dead_broker = free_port(), free_port()
    no_zk = _base(dead_zk)
    no_zk["spout"]["zkRoot"] = f"/skc-faults/{unique('nozk')}"
    no_zk["topology"].update({"storm.zookeeper.retry.times": 1,
                              "storm.zookeeper.retry.interval": 200,
                              "storm.zookeeper.connection.timeout": 1000})
    root = f"/skc-faults/{unique('nobroker')}"
    no_broker = job_config(topic="bad-input", zk_root=root, spout_id="spout",
                           zk_port=zk_server.port, static={0: f"127.0.0.1:{dead_broker}"},
                           spout={"socketTimeoutMs": 1000},
                           # kafka-python 3 waits bootstrap_timeout_ms (30 s), not
                           # socketTimeoutMs, for a first broker: keep the test short
                           kafka={"bootstrap_timeout_ms": 2000})
    before = zk_tree(zk_server.connect_string)
    env = {"PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    procs = {}
    for name, config in (("zk", no_zk), ("broker", no_broker)):
        path = write_config(tmp_path / f"{name}.yaml", config)
        procs[name] = subprocess.Popen([*console_script(), "run", str(path), "--until-caught-up"],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                       env={**os.environ, **env}, start_new_session=True)
    out = {}
    try:
        for name, proc in procs.items():
            stdout, stderr = proc.communicate(timeout=500)
            out[name] = (proc.returncode, stdout, stderr)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait()

    code, stdout, stderr = out["zk"]
    errors = [line for line in stderr.splitlines() if line.startswith("Error:")]
    assert code == 1, stderr[-2000:]
    assert len(errors) == 1 and f"127.0.0.1:{dead_zk}" in errors[0], stderr[-2000:]
    # never reached since the job started: one connection timeout, not the retry policy
    assert "cannot be reached" in errors[0] and "connection.timeout (1000 ms)" in errors[0]

    code, stdout, stderr = out["broker"]
    errors = [line for line in stderr.splitlines() if line.startswith("Error:")]
    assert code == 1, stderr[-2000:]
    assert len(errors) == 1 and f"127.0.0.1:{dead_broker}" in errors[0], stderr[-2000:]
    assert zk_tree(zk_server.connect_string) == before, "a failed start wrote to ZooKeeper"


@pytest.mark.hard_timeout(300)
def test_brokers_that_do_not_answer_with_api_version_set(zk_server, tmp_path, unique):
    """Issue 26: with ``kafka.api_version`` set (0.9 brokers need it) and bootstrap hosts
    that do not answer, run, offsets show and offsets explain printed nothing and never
    returned, and run ignored SIGTERM. Each now ends with one error within
    socketTimeoutMs (and a SIGTERM during the start stops the run at once)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.faults.harness import REPO, catches, console_script

    dead = free_port()
    config = job_config(topic="bad-input", zk_root=f"/skc-faults/{unique('apiversion')}",
                        spout_id="spout", zk_port=zk_server.port,
                        bootstrap=f"127.0.0.1:{dead}", spout={"socketTimeoutMs": 3000},
                        kafka={"api_version": "0.9"})
    path = write_config(tmp_path / "job.yaml", config)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
           "PYTHONPATH": REPO}
    procs = {args: subprocess.Popen([*console_script(), *args.split(), str(path)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env=env, start_new_session=True)
             for args in ("run", "offsets show", "offsets explain", "run --until-caught-up")}
    started = time.monotonic()
    # once run's start-up handlers are in (a loaded machine may take seconds to get there;
    # a SIGTERM before that is the interpreter's default and kills it)
    wait_until(lambda: catches(procs["run"].pid, signal.SIGTERM), timeout_s=30,
               interval_s=0.01, what="run's SIGTERM handler")
    os.kill(procs["run"].pid, signal.SIGTERM)         # a supervisor stopping it
    try:
        out = {args: (proc.wait(timeout=60), proc.communicate()) for args, proc in procs.items()}
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert time.monotonic() - started < 40
    code, (stdout, stderr) = out["run"]
    assert code == 0 and "stopped during start-up (SIGTERM): no batch ran" in stderr, stderr
    for args in ("offsets show", "offsets explain", "run --until-caught-up"):
        code, (stdout, stderr) = out[args]
        errors = [line for line in stderr.splitlines() if line.startswith("Error:")]
        assert code == 1 and len(errors) == 1, (args, stderr)
        assert f"no answer from 127.0.0.1:{dead} within socketTimeoutMs 3000 ms" in errors[0]
        assert "Traceback" not in stderr


def test_a_master_spark_does_not_know_is_a_config_error_before_spark(tmp_path):
    """`spark.master: local[x]` passed `config check` and `run` printed a 91-line traceback."""
    config = job_config(topic="t", zk_root="/skc-faults/master", spout_id="spout", zk_port=9,
                        bootstrap="127.0.0.1:9", spark={"master": "local[x]"})
    path = write_config(tmp_path / "job.yaml", config)
    for args in (["config", "check"], ["run"]):
        done = run_cli([*args, str(path)], timeout_s=60)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"Error: {path}: spark.master 'local[x]' is not a Spark "
                                      "master URL; use one of: local, local[N], local[*]"), \
            done.stderr
        assert len(done.stderr.splitlines()) == 1
