"""Java topology sources converted into CONFIG (``config convert Topology.java`` or a
source directory).

* :mod:`.source` -- parsing with tree-sitter's Java grammar; classes, constants, imports;
* :mod:`.values` -- what expressions evaluate to; the Java and Storm names known;
* :mod:`.interpret` -- runs the methods that build a topology, following variables,
  constants, concatenation and helper methods;
* :mod:`.convert` -- each KafkaSpout found into a CONFIG, through the Flux converter's
  resolver, with every value it could not resolve named by file and line.

Pure: source text in, mappings out (tree-sitter is a parser, nothing else).
"""

from storm_kafka_compat.java.convert import JavaConversion, convert_java

__all__ = ["JavaConversion", "convert_java"]
