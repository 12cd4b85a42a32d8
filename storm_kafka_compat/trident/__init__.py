"""Trident's Kafka spouts: transactional state in ZooKeeper."""
