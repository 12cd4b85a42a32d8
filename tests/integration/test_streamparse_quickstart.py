"""streamparse's own quickstart project (``sparse quickstart``, from the streamparse wheel)
on the project (issue 36): its WordCountBolt and topologies/wordcount.py unmodified,
converted by ``config convert`` with the Kafka spout standing for its Python WordSpout, fed
by a real Kafka 3.9 topic on Spark local[2], ends with the true counts (``dog`` counts 10
in that bolt)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from storm_kafka_compat.engine.shipping import ship
from storm_kafka_compat.flux.convert import convert_file
from tests import stateful_bolts
from tests.integration.conftest_spark import spark, spark_records  # noqa: F401
from tests.python_storm_support import REPORT, quickstart_counts, run_job
from tests.stateful_inputs import VOCABULARY, as_messages, sentences

streamparse = pytest.importorskip("streamparse")

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 4


def test_the_streamparse_quickstart_runs_unmodified_with_the_true_counts(
        spark, spark_records, zk_server, zk_root, kafka39, unique, tmp_path,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    env = {**os.environ, "LEIN_ROOT": "1"}
    sparse = shutil.which("sparse", path=os.path.dirname(sys.executable)) or "sparse"
    subprocess.run([sparse, "quickstart", "wordcount"], cwd=tmp_path, env=env, check=True,
                   capture_output=True, timeout=120)
    project = tmp_path / "wordcount"
    flt = tmp_path / "kafka.properties"
    flt.write_text("spout.topic=set-below\nhosts.zk=set-below\nspout.zkRoot=/wc\n"
                   "spout.id=wordcount\nspout.scheme=tests.python_storm_support:word\n")
    conv = convert_file(str(project / "topologies" / "wordcount.py"), filter_path=str(flt))
    assert conv.config["topology"]["bolts"][0]["bolt"] == "bolts.wordcount:WordCountBolt"
    # a report bolt reads the counts the quickstart's bolt emits (added to the CONFIG)
    conv.config["topology"]["bolts"].append(
        {**REPORT, "inputs": [{"from": "count_bolt", "grouping": "shuffle"}]})
    monkeypatch.syspath_prepend(str(project / "src"))          # the bolt hosts
    ship(spark.sparkContext, [str(project / "src" / "bolts")])  # the executors
    words = [w for line in sentences(200, seed=36, vocabulary=VOCABULARY[:20] + ("dog",))
             for w in line.split()]
    topic = unique("sparse-quickstart")
    kafka39.create_topic(topic, PARTITIONS, 1)
    kafka39.produce(topic, as_messages(words, PARTITIONS))
    summary = run_job(conv.config, topic, zk_server, zk_root, kafka39.bootstrap,
                      tmp_path / "state", spark)
    assert summary.bolt_errors == {}
    assert stateful_bolts.final_values(spark_records(topic)) == quickstart_counts(words)
    assert "dog" in words
