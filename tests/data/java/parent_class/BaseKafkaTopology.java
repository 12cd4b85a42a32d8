package com.example.ledger;

import java.util.concurrent.TimeUnit;
import org.apache.storm.kafka.spout.KafkaSpoutConfig;
import org.apache.storm.kafka.spout.KafkaSpoutRetryExponentialBackoff;
import org.apache.storm.kafka.spout.KafkaSpoutRetryExponentialBackoff.TimeInterval;
import org.apache.storm.kafka.spout.KafkaSpoutRetryService;

/** The parent every topology of the team extends: brokers and retry in one place. */
public abstract class BaseKafkaTopology {
    protected static final String BOOTSTRAP = "broker1.ledger.example:9092,broker2.ledger.example:9092";

    protected final String groupId;

    protected BaseKafkaTopology(String groupId) {
        this.groupId = groupId;
    }

    protected KafkaSpoutRetryService retry() {
        return new KafkaSpoutRetryExponentialBackoff(TimeInterval.seconds(2),
            TimeInterval.milliSeconds(100), 5, TimeInterval.seconds(30));
    }

    protected KafkaSpoutConfig<String, String> spoutConfig(String topic) {
        return KafkaSpoutConfig.builder(BOOTSTRAP, topic)
            .setGroupId(groupId)
            .setRetry(retry())
            .setOffsetCommitPeriodMs(commitPeriodMs())
            .build();
    }

    protected long commitPeriodMs() {
        return 30000;
    }
}
