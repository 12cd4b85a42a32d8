"""The storm-kafka-client mode: offsets in Kafka consumer groups.

storm-kafka-client's ``KafkaSpout`` (Storm 1.1+ and 2.x) on the same driver
engine as the legacy spout: ``KafkaSpoutConfig`` fields (:mod:`.config`), the
first-poll decision (:mod:`.first_poll`), the committable offset from acked
offsets with gaps (:mod:`.offset_manager`), the exponential-backoff retry
service (:mod:`.retry`), a partition manager implementing the partition-state
protocol (:mod:`.manager`) and the offset policy that commits to a consumer group
(:mod:`.spout`, ``GroupCommits``).

The modules ``config``, ``first_poll``, ``offset_manager``, ``retry`` and
``manager`` are pure: they import neither kazoo, kafka-python nor pyspark.
"""
