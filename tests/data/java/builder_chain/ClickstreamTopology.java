package com.example.clicks;

import org.apache.storm.StormSubmitter;
import org.apache.storm.kafka.KafkaSpout;
import org.apache.storm.kafka.SpoutConfig;
import org.apache.storm.kafka.StringScheme;
import org.apache.storm.kafka.ZkHosts;
import org.apache.storm.spout.SchemeAsMultiScheme;
import org.apache.storm.topology.TopologyBuilder;
import java.util.Arrays;

/** A fluent builder of the project's own, and a method called on an object the code made. */
public class ClickstreamTopology {

    static class SpoutBuilder {
        private String zk;
        private String topic;
        private String root = "/clicks";
        private int pending = 100;

        SpoutBuilder brokers(String zk) {
            this.zk = zk;
            return this;
        }

        SpoutBuilder topic(String topic) {
            this.topic = topic;
            return this;
        }

        KafkaSpout build() {
            SpoutConfig config = new SpoutConfig(new ZkHosts(zk), topic, root, topic + "-reader");
            config.scheme = new SchemeAsMultiScheme(new StringScheme());
            config.zkServers = Arrays.asList("zk1.example.com");
            config.zkPort = 2181;
            return new KafkaSpout(config);
        }
    }

    static class Wiring {
        private final TopologyBuilder builder;

        Wiring(TopologyBuilder builder) {
            this.builder = builder;
        }

        void addSpout(String name, KafkaSpout spout) {
            builder.setSpout(name, spout, 3);
            builder.setBolt("sessionize", new SessionBolt(), 3).shuffleGrouping(name);
        }
    }

    public static void main(String[] args) throws Exception {
        TopologyBuilder builder = new TopologyBuilder();
        Wiring wiring = new Wiring(builder);
        wiring.addSpout("clicks", new SpoutBuilder().brokers("zk1.example.com:2181")
            .topic("clicks").build());
        StormSubmitter.submitTopology("clickstream", new java.util.HashMap<>(),
                                      builder.createTopology());
    }
}
