"""Storm Flux topologies and Java ``.properties`` files converted into CONFIG.

* :mod:`.convert` -- a Flux YAML file into CONFIG, and :func:`convert_file` for either kind;
* :mod:`.properties` -- a ``.properties`` file into CONFIG;
* :mod:`.components` / :mod:`.client` -- Flux components of storm-kafka and
  storm-kafka-client resolved into CONFIG values;
* :mod:`.kafka_bolt` -- a Flux KafkaBolt into a ``kafkaBolt`` bolt entry;
* :mod:`.common` -- the result type, ``${...}`` substitution, ``.properties`` loading.

Pure: text in, mappings out.
"""

from storm_kafka_compat.flux.common import Conversion, load_properties, substitute
from storm_kafka_compat.flux.components import python_placeholder
from storm_kafka_compat.flux.convert import convert_file, convert_flux, detect_format
from storm_kafka_compat.flux.properties import convert_properties

__all__ = ["Conversion", "convert_file", "convert_flux", "convert_properties", "detect_format",
           "load_properties", "python_placeholder", "substitute"]
