package com.example.events;

public interface BrokerKeys {
    String BROKER_ZK = "kafka.broker.zk";
    String PARALLELISM = "spout.parallelism";
}
