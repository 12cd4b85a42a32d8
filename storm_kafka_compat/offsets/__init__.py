"""Where a spout's place is kept, and offsets as ranges.

``paths`` (pure) lays out ``zkRoot/id/[topic/]partition_N``, ``document`` (pure)
writes and reads the JSON document exactly as storm-kafka does, ``zkstore`` is
the thin kazoo adapter that moves those bytes with bounded retries, ``store``
declares the protocol every offset store implements, ``ownership`` detects a
second writer, and ``ranges`` is the one copy of offset-range arithmetic.
"""
