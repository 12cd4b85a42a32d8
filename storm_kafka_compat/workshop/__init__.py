"""The workshop next door: what only the tests, ``demo`` and ``bench`` run.

* :mod:`.servers`: real servers on loopback (ZooKeeper from pyspark's jars, Apache Kafka
  0.9 from npm, 3.9 and 4.x from Maven Central, a Spark standalone cluster, tansu),
  offered to users' own tests as they are;
* :mod:`.embedded`: the servers and in-memory doubles ``demo`` and ``bench`` run on;
* :mod:`.demo`: ``storm-kafka-compat demo``;
* :mod:`.bench`: ``storm-kafka-compat bench``.

No module of the product imports it; the CLI's ``demo`` and ``bench`` commands do, when
they run (``tests/unit/test_package_layout.py``).
"""
