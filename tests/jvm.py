"""JVM options for the short-lived JVMs the tests start (Spark's drivers and executors;
the workshop's servers start theirs so too): C1 only and the serial GC. The suite is
bound by CPU on two cores, and C2's compiler threads cost a short-lived JVM most of its
start-up: a local Spark session and ten small jobs took 12 CPU-seconds with the
defaults, 7 with these."""

FAST_START_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
