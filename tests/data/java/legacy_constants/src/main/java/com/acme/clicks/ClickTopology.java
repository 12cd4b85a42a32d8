package com.acme.clicks;

import java.io.FileInputStream;
import java.util.Arrays;
import java.util.Properties;

import org.apache.storm.Config;
import org.apache.storm.StormSubmitter;
import org.apache.storm.kafka.KafkaSpout;
import org.apache.storm.kafka.SpoutConfig;
import org.apache.storm.kafka.StringScheme;
import org.apache.storm.kafka.ZkHosts;
import org.apache.storm.spout.SchemeAsMultiScheme;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.tuple.Fields;

import com.acme.clicks.bolts.ParseBolt;
import com.acme.clicks.bolts.CountBolt;

public class ClickTopology {
    private static final String SPOUT_ID = KafkaConstants.SPOUT_PREFIX + "-spout";

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.load(new FileInputStream(args[1]));
        String topic = props.getProperty("kafka.topic");

        ZkHosts hosts = new ZkHosts(KafkaConstants.ZK_HOSTS, KafkaConstants.BROKER_ZK_PATH);
        SpoutConfig spoutConfig = new SpoutConfig(hosts, topic, KafkaConstants.ZK_ROOT, SPOUT_ID);
        spoutConfig.scheme = new SchemeAsMultiScheme(new StringScheme());
        spoutConfig.startOffsetTime = kafka.api.OffsetRequest.EarliestTime();
        spoutConfig.fetchSizeBytes = KafkaConstants.FETCH_SIZE;
        spoutConfig.zkServers = Arrays.asList("zk1.acme.net", "zk2.acme.net");
        spoutConfig.zkPort = 2181;
        spoutConfig.stateUpdateIntervalMs = 5000;

        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("clicks", new KafkaSpout(spoutConfig), 4);
        builder.setBolt("parse", new ParseBolt(), 4).shuffleGrouping("clicks");
        builder.setBolt("count", new CountBolt(), 2)
               .fieldsGrouping("parse", new Fields("page"));

        Config conf = new Config();
        conf.setNumWorkers(2);
        conf.setMaxSpoutPending(Integer.parseInt(props.getProperty("max.pending", "1000")));
        conf.put(Config.TOPOLOGY_MESSAGE_TIMEOUT_SECS, 60);
        StormSubmitter.submitTopology(args[0], conf, builder.createTopology());
    }
}
