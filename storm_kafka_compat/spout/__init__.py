"""storm-kafka's PartitionManager semantics as pure logic (no I/O, time injected)."""
