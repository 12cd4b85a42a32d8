"""The ``storm-kafka-compat`` command line."""
