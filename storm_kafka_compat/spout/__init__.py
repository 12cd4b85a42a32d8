"""The spout: which partitions a task owns, where each starts, what it commits.

``spout`` is the one driver-side spout; ``legacy`` (storm-kafka: ZooKeeper
documents) and ``client/`` (storm-kafka-client: consumer-group commits) are its
two offset policies. ``state`` declares the partition-state protocol both
partition managers implement (``manager``, ``client/manager``); ``assignment``,
``startup``, ``retry`` and ``metrics`` are pure logic with time injected.
"""
