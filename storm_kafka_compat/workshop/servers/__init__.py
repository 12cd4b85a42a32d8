"""Embedded servers on loopback: ZooKeeper, Apache Kafka 0.9.0.1, tansu (demo, bench, tests)."""
