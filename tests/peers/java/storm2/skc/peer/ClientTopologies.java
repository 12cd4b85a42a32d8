package skc.peer;

import java.io.FileInputStream;
import java.io.InputStream;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

import org.apache.storm.kafka.spout.FirstPollOffsetStrategy;
import org.apache.storm.kafka.spout.KafkaSpout;
import org.apache.storm.kafka.spout.KafkaSpoutConfig;
import org.apache.storm.topology.TopologyBuilder;

/**
 * LocalStorm's factory for storm-kafka-client 2.x: a KafkaSpout built with
 * {@code KafkaSpoutConfig.builder(bootstrap, topics)} as its users write it, feeding a
 * RecordingBolt. The spec is a .properties file: {@code name}, {@code bootstrap},
 * {@code topics} (comma-separated), {@code group}, {@code firstPoll},
 * {@code guarantee}, {@code commitPeriodMs}, {@code record}, {@code delayMs};
 * {@code consumer.<key>} are consumer properties and {@code config.<key>} integer
 * topology settings. (Flux 2.x cannot be used: flux-core 2.4.0, the newest that
 * resolves, carries SnakeYAML 1.26, which Storm 2.8.3 cannot run with.)
 */
public final class ClientTopologies {
    private ClientTopologies() {
    }

    public static Object[] build(String specFile) throws Exception {
        Properties spec = new Properties();
        try (InputStream in = new FileInputStream(specFile)) {
            spec.load(in);
        }
        KafkaSpoutConfig.Builder<String, String> builder = KafkaSpoutConfig
                .builder(spec.getProperty("bootstrap"), spec.getProperty("topics").split(","))
                .setProp("group.id", spec.getProperty("group"))
                .setFirstPollOffsetStrategy(
                        FirstPollOffsetStrategy.valueOf(spec.getProperty("firstPoll")))
                .setProcessingGuarantee(KafkaSpoutConfig.ProcessingGuarantee.valueOf(
                        spec.getProperty("guarantee")))
                .setOffsetCommitPeriodMs(Long.parseLong(spec.getProperty("commitPeriodMs")));
        Map<String, Object> conf = new HashMap<>();
        for (String key : spec.stringPropertyNames()) {
            if (key.startsWith("consumer.")) {
                builder.setProp(key.substring("consumer.".length()), spec.getProperty(key));
            } else if (key.startsWith("config.")) {
                conf.put(key.substring("config.".length()), Integer.valueOf(spec.getProperty(key)));
            }
        }
        TopologyBuilder topology = new TopologyBuilder();
        topology.setSpout("kafka-spout", new KafkaSpout<>(builder.build()), 1);
        topology.setBolt("recorder", new RecordingBolt(spec.getProperty("record"),
                Integer.valueOf(spec.getProperty("delayMs"))), 1).shuffleGrouping("kafka-spout");
        return new Object[] {spec.getProperty("name"), conf, topology.createTopology()};
    }
}
