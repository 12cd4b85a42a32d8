"""TLS and SASL/SCRAM listeners for the embedded Kafka brokers (0.11+).

:func:`make_tls_files` makes, with the JDK's ``keytool``, a self-signed key pair for
``127.0.0.1`` (its certificate names the address, so clients verify the host) in a
PKCS12 keystore the brokers read, and its certificate in PEM, the CA file the Python
clients trust (kafka-python ``ssl_cafile``, librdkafka ``ssl.ca.location``).
:func:`listener_settings` gives the broker settings of an ``SSL`` listener over those
files and of a ``SASL`` listener (SASL_PLAINTEXT) taking SCRAM-SHA-256::

    tls = make_tls_files(tmp_dir)
    cluster = KafkaCluster(1, distribution=KAFKA_39,
                           listeners={"SSL": "SSL", "SASL": "SASL_PLAINTEXT"},
                           settings=listener_settings(tls), scram_users={"alice": "s3cret"})
    cluster.addresses("SASL")        # what a client of the SASL listener bootstraps from
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict

from storm_kafka_compat.errors import EmbeddedServerError
from storm_kafka_compat.workshop.servers.kafka_versions import SCRAM_MECHANISM
from storm_kafka_compat.workshop.servers.zookeeper import jdk_tool


@dataclass(frozen=True)
class TlsFiles:
    """A broker keystore and the certificate clients trust."""

    keystore: Path
    password: str
    ca_pem: Path


def make_tls_files(directory: "os.PathLike[str]", *, password: str = "broker-keystore") -> TlsFiles:
    """A self-signed key pair for ``127.0.0.1`` (CN and subject alternative name), in
    ``directory``; made once, reused when present."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    keystore, ca_pem = directory / "broker.p12", directory / "ca.pem"
    if not (keystore.exists() and ca_pem.exists()):
        tool = jdk_tool("keytool", "to make the brokers' TLS keys")
        for command in (
                [tool, "-genkeypair", "-keystore", str(keystore), "-storetype", "PKCS12",
                 "-storepass", password, "-keypass", password, "-alias", "broker",
                 "-keyalg", "RSA", "-keysize", "2048", "-validity", "3650",
                 "-dname", "CN=127.0.0.1", "-ext", "SAN=IP:127.0.0.1,DNS:localhost"],
                [tool, "-exportcert", "-rfc", "-keystore", str(keystore), "-storetype", "PKCS12",
                 "-storepass", password, "-alias", "broker", "-file", str(ca_pem)]):
            proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, timeout=120)
            if proc.returncode != 0:
                raise EmbeddedServerError(f"keytool {command[1]} failed ({proc.returncode}): "
                                          f"{proc.stdout.decode(errors='replace')[-800:]}")
    return TlsFiles(keystore, password, ca_pem)


def listener_settings(tls: TlsFiles, *, ssl_listener: str = "SSL",
                      sasl_listener: str = "SASL") -> Dict[str, Any]:
    """Broker settings of the TLS listener ``ssl_listener`` (the keystore of ``tls``)
    and of the SASL_PLAINTEXT listener ``sasl_listener`` (SCRAM-SHA-256; users come
    from ``KafkaCluster(scram_users=...)``). Brokers keep PLAINTEXT between them."""
    ssl = f"listener.name.{ssl_listener.lower()}."
    sasl = f"listener.name.{sasl_listener.lower()}."
    return {
        ssl + "ssl.keystore.type": "PKCS12",
        ssl + "ssl.keystore.location": str(tls.keystore),
        ssl + "ssl.keystore.password": tls.password,
        ssl + "ssl.key.password": tls.password,
        sasl + "sasl.enabled.mechanisms": SCRAM_MECHANISM,
        sasl + f"{SCRAM_MECHANISM.lower()}.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "sasl.enabled.mechanisms": SCRAM_MECHANISM,
    }
