package com.example.pageviews;

import org.apache.storm.Config;
import org.apache.storm.StormSubmitter;
import org.apache.storm.generated.StormTopology;
import org.apache.storm.kafka.spout.KafkaSpout;
import org.apache.storm.kafka.spout.KafkaSpoutConfig;
import org.apache.storm.topology.TopologyBuilder;

/** main reaches the topology through an instance: new PageViewTopology().runMain(args). */
public class PageViewTopology {
    private static final String BROKERS = "kafka1.example.com:9092";

    private final String groupId;

    public PageViewTopology() {
        this("pageviews-storm");
    }

    public PageViewTopology(String groupId) {
        this.groupId = groupId;
    }

    public static void main(String[] args) throws Exception {
        new PageViewTopology().runMain(args);
    }

    protected void runMain(String[] args) throws Exception {
        Config conf = new Config();
        conf.setMessageTimeoutSecs(90);
        StormSubmitter.submitTopology("pageviews", conf, getTopology(getSpoutConfig(BROKERS)));
    }

    protected KafkaSpoutConfig<String, String> getSpoutConfig(String brokers) {
        return KafkaSpoutConfig.builder(brokers, "pageviews")
            .setGroupId(groupId)
            .setFirstPollOffsetStrategy(KafkaSpoutConfig.FirstPollOffsetStrategy.UNCOMMITTED_EARLIEST)
            .build();
    }

    protected StormTopology getTopology(KafkaSpoutConfig<String, String> spoutConfig) {
        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("views", new KafkaSpout<>(spoutConfig), 2);
        builder.setBolt("count", new CountBolt(), 2).shuffleGrouping("views");
        return builder.createTopology();
    }
}
