package com.example.metrics;

import org.apache.storm.generated.StormTopology;
import org.apache.storm.kafka.spout.KafkaSpout;
import org.apache.storm.kafka.spout.KafkaSpoutConfig;
import org.apache.storm.topology.TopologyBuilder;

/** The spout's config is a parameter: another project calls this method. */
public class MetricsWiring {
    public StormTopology topology(KafkaSpoutConfig<String, String> spoutConfig) {
        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("metrics", new KafkaSpout<>(spoutConfig), 2);
        builder.setBolt("store", new StoreBolt(), 2).shuffleGrouping("metrics");
        return builder.createTopology();
    }
}
