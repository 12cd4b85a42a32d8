"""ServerProcess passes each server's environment to Popen, never through os.environ.

Spark's workers are launched from several threads at once; changing os.environ
while another thread's child is exec'ing gave that child a freed environment
(CI: ``OSError: [Errno 14] Bad address`` from spark-class).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from storm_kafka_compat.workshop.servers.process import ServerProcess
from storm_kafka_compat.workshop.servers.spark_cluster import SparkWorker


class _Echo(ServerProcess):
    name = "echo"

    def __init__(self, base_dir: Path, index: int) -> None:
        super().__init__(base_dir, base_dir / f"echo-{index}.log")
        self.index = index

    def command(self):
        return ["/bin/sh", "-c", 'echo "value=$SKC_TEST_VALUE"']

    def environment(self):
        return dict(os.environ, SKC_TEST_VALUE=f"v{self.index}")


def test_each_child_gets_its_own_environment_and_os_environ_is_untouched(tmp_path):
    before = dict(os.environ)
    servers = [_Echo(tmp_path, i) for i in range(8)]

    def launch(server: _Echo) -> None:
        with server._lock:
            server._launch("test")
    threads = [threading.Thread(target=launch, args=(s,)) for s in servers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for server in servers:
        server._process.wait(timeout=10)
        server._close_log()
        assert f"value=v{server.index}" in server.log_tail()
    assert dict(os.environ) == before
    assert "SKC_TEST_VALUE" not in os.environ


def test_spark_daemons_get_loopback_and_no_daemonizing_without_changing_os_environ(tmp_path):
    worker = SparkWorker(tmp_path, "spark://127.0.0.1:1", 0)
    before = dict(os.environ)
    env = worker.environment()
    assert env["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert env["SPARK_NO_DAEMONIZE"] == "1"
    assert "PYSPARK_GATEWAY_PORT" not in env
    assert dict(os.environ) == before
