package org.example;

import storm.kafka.KafkaSpout;
import storm.kafka.SpoutConfig;
import storm.kafka.ZkHosts;

public class Broken {
    public static void main(String[] args) {
        SpoutConfig cfg = new SpoutConfig(new ZkHosts("zk:2181"), "logs", "/logs", "logs-reader");
        cfg.fetchSizeBytes = ;
        cfg.bufferSizeBytes = 65536;
        KafkaSpout spout = new KafkaSpout(cfg);
    }
}
