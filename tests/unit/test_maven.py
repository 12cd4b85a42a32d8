"""The Maven bundle: the pom it resolves, the manifest that decides re-resolution,
and the errors it gives; resolution itself runs in the integration suites."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from storm_kafka_compat.workshop.servers import maven
from storm_kafka_compat.workshop.servers.maven import Artifact, MavenBundle, MavenUnavailableError

NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def _deps(bundle: MavenBundle):
    root = ET.fromstring(bundle.pom())
    for dep in root.findall("m:dependencies/m:dependency", NS):
        yield (dep.findtext("m:groupId", namespaces=NS),
               dep.findtext("m:artifactId", namespaces=NS),
               dep.findtext("m:version", namespaces=NS),
               dep.findtext("m:classifier", namespaces=NS),
               [(e.findtext("m:groupId", namespaces=NS),
                 e.findtext("m:artifactId", namespaces=NS))
                for e in dep.findall("m:exclusions/m:exclusion", NS)])


def test_pom_lists_each_artifact_with_its_own_and_the_bundle_exclusions():
    bundle = MavenBundle("b", (Artifact("org.apache.storm:storm-core:1.2.4",
                                        ("ring-cors:ring-cors",)),
                               Artifact("org.apache.kafka:kafka-clients:3.9.2:test")),
                         exclusions=("org.slf4j:slf4j-log4j12",))
    assert list(_deps(bundle)) == [
        ("org.apache.storm", "storm-core", "1.2.4", None,
         [("ring-cors", "ring-cors"), ("org.slf4j", "slf4j-log4j12")]),
        ("org.apache.kafka", "kafka-clients", "3.9.2", "test", [("org.slf4j", "slf4j-log4j12")]),
    ]


@pytest.mark.parametrize("coordinates", ["a:b", "a::1", "a:b:c:d:e", ""])
def test_bad_coordinates_name_the_value(coordinates):
    with pytest.raises(ValueError, match="group:artifact:version"):
        Artifact(coordinates)


def test_bad_exclusion_names_the_value():
    with pytest.raises(ValueError, match="'a:b:1' is not group:artifact"):
        Artifact("g:a:1", ("a:b:1",))


def test_a_changed_artifact_list_is_resolved_again(tmp_path, monkeypatch):
    monkeypatch.setenv("STORM_KAFKA_COMPAT_CACHE", str(tmp_path))
    old = MavenBundle("peer", (Artifact("g:a:1"),))
    new = MavenBundle("peer", (Artifact("g:a:2"),))
    jars = maven.bundle_dir(old) / "jars"
    jars.mkdir(parents=True)
    (maven.bundle_dir(old) / "bundle.txt").write_text(old.manifest())
    assert maven.resolve(old) == jars          # cached: Maven not run
    monkeypatch.setattr(maven, "_mvn", lambda: None)
    with pytest.raises(MavenUnavailableError, match="'mvn' is not on PATH"):
        maven.resolve(new)
    assert maven.missing_prerequisite(old) is None
    assert "install Maven" in maven.missing_prerequisite(new)


def test_maven_errors_keep_the_failure_and_drop_the_help():
    output = ("\x1b[1;31m[ERROR]\x1b[m Failed to execute goal: could not resolve g:a:jar:9\n"
              "[ERROR] \n[ERROR] To see the full stack trace of the errors, re-run Maven\n"
              "[ERROR] [Help 1] http://cwiki.apache.org/x\n")
    assert maven._maven_errors(output) == "Failed to execute goal: could not resolve g:a:jar:9"
