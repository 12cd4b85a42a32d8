package io.audit;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import org.apache.storm.kafka.Broker;
import org.apache.storm.kafka.KafkaSpout;
import org.apache.storm.kafka.SpoutConfig;
import org.apache.storm.kafka.StaticHosts;
import org.apache.storm.kafka.trident.GlobalPartitionInformation;
import org.apache.storm.kafka.KeyValueSchemeAsMultiScheme;
import org.apache.storm.kafka.StringKeyValueScheme;
import org.apache.storm.spout.SchemeAsMultiScheme;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.StormSubmitter;
import org.apache.storm.tuple.Fields;

public class AuditTopology {
    public static void main(String[] args) throws Exception {
        Config config = ConfigFactory.load();
        String topic = config.getString("audit.topic");

        GlobalPartitionInformation partitions = new GlobalPartitionInformation(topic);
        partitions.addPartition(0, new Broker("kafka1.audit.io", 9092));
        partitions.addPartition(1, Broker.fromString("kafka2.audit.io:9093"));
        SpoutConfig events = new SpoutConfig(new StaticHosts(partitions), topic, "/audit",
                                             "audit-events-" + System.currentTimeMillis());
        events.scheme = new SchemeAsMultiScheme(new AvroAuditScheme());
        events.ignoreZkOffsets = true;

        SpoutConfig keys = new SpoutConfig(new StaticHosts(partitions), "audit-keys", "/audit",
                                           "audit-keys");
        keys.scheme = new KeyValueSchemeAsMultiScheme(new StringKeyValueScheme());
        keys.maxOffsetBehind = 5000;

        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("events", new KafkaSpout(events), 2);
        builder.setSpout("keys", new KafkaSpout(keys));
        builder.setBolt("join", new JoinBolt(), 2)
            .fieldsGrouping("events", new Fields("key"))
            .fieldsGrouping("keys", new Fields("key"));
        builder.setBolt("store", new StoreBolt()).globalGrouping("join");
        StormSubmitter.submitTopology("audit", new org.apache.storm.Config(), builder.createTopology());
    }
}
