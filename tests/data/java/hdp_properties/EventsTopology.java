package com.example.events;

import java.io.FileInputStream;
import java.util.Arrays;
import java.util.Optional;
import java.util.Properties;
import org.apache.storm.Config;
import org.apache.storm.StormSubmitter;
import org.apache.storm.kafka.KafkaSpout;
import org.apache.storm.kafka.SpoutConfig;
import org.apache.storm.kafka.StringScheme;
import org.apache.storm.kafka.ZkHosts;
import org.apache.storm.spout.SchemeAsMultiScheme;
import org.apache.storm.topology.TopologyBuilder;

/** An HDP topology: keys in an enum and an interface of other files, values in a
 * .properties file given as args[0], the offsets' ZooKeeper as args[1]. */
public class EventsTopology {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.load(new FileInputStream(args[0]));

        ZkHosts hosts = new ZkHosts(props.getProperty(BrokerKeys.BROKER_ZK));
        SpoutConfig spoutConfig = new SpoutConfig(hosts, props.getProperty(Keys.KAFKA_TOPIC.key()),
            props.getProperty(Keys.ZK_ROOT.toString(), "/events-offsets"),
            props.getProperty(Keys.SPOUT_ID.key()));
        spoutConfig.scheme = new SchemeAsMultiScheme(new StringScheme());
        spoutConfig.securityProtocol = "PLAINTEXTSASL";
        spoutConfig.zkServers = Arrays.asList(args[1].split(","));
        spoutConfig.zkPort = 2181;

        Config conf = new Config();
        conf.put("topology.max.spout.pending", Integer.parseInt(
            Optional.ofNullable(props.getProperty("max.pending")).orElse("500")));

        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("events", new KafkaSpout(spoutConfig),
                         Integer.parseInt(props.getProperty(BrokerKeys.PARALLELISM, "2")));
        StormSubmitter.submitTopology("events", conf, builder.createTopology());
    }
}
