package com.example.orders;

import static org.apache.storm.kafka.spout.KafkaSpoutConfig.FirstPollOffsetStrategy.UNCOMMITTED_EARLIEST;

import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.storm.Config;
import org.apache.storm.StormSubmitter;
import org.apache.storm.generated.StormTopology;
import org.apache.storm.kafka.spout.KafkaSpout;
import org.apache.storm.kafka.spout.KafkaSpoutConfig;
import org.apache.storm.kafka.spout.KafkaSpoutRetryExponentialBackoff;
import org.apache.storm.kafka.spout.KafkaSpoutRetryExponentialBackoff.TimeInterval;
import org.apache.storm.topology.TopologyBuilder;

public class OrdersTopology {
    private static final String GROUP = "orders-storm";

    static KafkaSpoutConfig<String, String> spoutConfig(String bootstrap) {
        return KafkaSpoutConfig.builder(bootstrap, "orders", "refunds")
            .setGroupId(GROUP)
            .setProp(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 500)
            .setProp("session.timeout.ms", 30000)
            .setFirstPollOffsetStrategy(UNCOMMITTED_EARLIEST)
            .setProcessingGuarantee(KafkaSpoutConfig.ProcessingGuarantee.AT_LEAST_ONCE)
            .setOffsetCommitPeriodMs(TimeUnit.SECONDS.toMillis(10))
            .setMaxUncommittedOffsets(250000)
            .setRetry(new KafkaSpoutRetryExponentialBackoff(TimeInterval.seconds(1),
                TimeInterval.milliSeconds(500), 10, TimeInterval.seconds(60)))
            .build();
    }

    static StormTopology build(String bootstrap) {
        TopologyBuilder tb = new TopologyBuilder();
        tb.setSpout("kafka", new KafkaSpout<>(spoutConfig(bootstrap)), 3);
        tb.setBolt("enrich", new EnrichBolt(), 6).shuffleGrouping("kafka");
        return tb.createTopology();
    }

    public static void main(String[] args) throws Exception {
        Config conf = new Config();
        conf.setMessageTimeoutSecs(120);
        StormSubmitter.submitTopology("orders", conf, build(System.getenv("KAFKA_BOOTSTRAP")));
    }
}
