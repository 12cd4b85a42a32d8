"""Offset state in ZooKeeper, byte-compatible with storm-kafka.

``paths`` (pure) lays out ``zkRoot/id/[topic/]partition_N``, ``document`` (pure)
writes and reads the JSON document exactly as storm-kafka does, and ``zkstore``
is the thin kazoo adapter that moves those bytes with bounded retries.
"""
