"""storm-kafka-compat: Storm's legacy KafkaSpout semantics on PySpark.

The library never configures logging; only the command-line interface installs
handlers.
"""

import logging

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())
