"""The curated public API: every exported name resolves to the object its module
defines, and importing the package pulls in neither pyspark nor a Kafka client."""

import importlib
import subprocess
import sys

import storm_kafka_compat


def test_every_export_is_the_defining_modules_object() -> None:
    for name, module in storm_kafka_compat._EXPORTS.items():
        assert getattr(storm_kafka_compat, name) is getattr(importlib.import_module(module), name)
    assert set(storm_kafka_compat.__all__) == {"__version__", *storm_kafka_compat._EXPORTS}


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        _ = storm_kafka_compat.PartitionManager  # internal: not exported
    except AttributeError as exc:
        assert "PartitionManager" in str(exc)
    else:
        raise AssertionError("an internal name was exported")


def test_importing_the_package_is_cheap() -> None:
    code = ("import sys, storm_kafka_compat; "
            "print(sorted(m for m in ('pyspark', 'kafka', 'kazoo', 'confluent_kafka') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
