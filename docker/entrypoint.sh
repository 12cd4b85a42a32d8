#!/bin/sh
# Spark binds and advertises SPARK_LOCAL_IP; storm-kafka-compat defaults it to
# 127.0.0.1 for single-machine runs, which executors in other containers cannot
# reach. Use the container's own address unless the caller set one.
set -e
if [ -z "${SPARK_LOCAL_IP:-}" ]; then
    SPARK_LOCAL_IP="$(hostname -i | awk '{print $1}')"
    export SPARK_LOCAL_IP
fi
if [ ! -d "${JAVA_HOME:-/nonexistent}" ]; then
    JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")"
    export JAVA_HOME
fi
exec "$@"
