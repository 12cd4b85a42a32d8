package com.example.events;

/** The properties keys the topology reads, one place for all of them. */
public enum Keys {
    KAFKA_TOPIC("kafka.topic"),
    SPOUT_ID("kafka.spout.id"),
    ZK_ROOT("kafka.zkRoot");

    private final String key;

    Keys(String key) {
        this.key = key;
    }

    public String key() {
        return key;
    }

    @Override
    public String toString() {
        return key;
    }
}
