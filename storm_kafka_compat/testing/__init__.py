"""Test doubles behind the production interfaces: a scripted in-memory Kafka, an
in-memory document store and consumer group. The embedded servers are in
:mod:`storm_kafka_compat.workshop.servers`; the fault-suite machinery is in ``tests/faults``."""
