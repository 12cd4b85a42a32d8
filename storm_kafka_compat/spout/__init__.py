"""The spout: which partitions a task owns, where each starts, what it commits.

``spout`` is the one driver-side spout, which owns each batch: it plans it,
applies what comes back and commits; ``batch`` is the contract with the engine
(the plan going out, the result coming back). ``legacy`` (storm-kafka: ZooKeeper
documents) and ``client/`` (storm-kafka-client: consumer-group commits) are its
two offset policies. ``state`` declares the partition-state protocol both
partition managers implement (``manager``, ``client/manager``); ``assignment``,
``startup``, ``retry`` and ``metrics`` are pure logic with time injected.
"""
