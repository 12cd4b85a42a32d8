package com.acme.clicks;

/** Settings shared by the click topologies. */
public final class KafkaConstants {
    public static final String ZK_HOSTS = "zk1.acme.net:2181,zk2.acme.net:2181";
    public static final String BROKER_ZK_PATH = "/kafka/brokers";
    public static final String ZK_ROOT = "/storm-offsets";
    public static final String SPOUT_PREFIX = "clicks";
    public static final int FETCH_SIZE = 2 * 1024 * 1024;
    private KafkaConstants() {}
}
