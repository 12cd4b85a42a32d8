package com.example.audit;

import java.util.Arrays;
import org.apache.storm.StormSubmitter;
import org.apache.storm.kafka.KafkaSpout;
import org.apache.storm.kafka.SpoutConfig;
import org.apache.storm.kafka.ZkHosts;
import org.apache.storm.spout.Scheme;
import org.apache.storm.spout.SchemeAsMultiScheme;
import org.apache.storm.topology.TopologyBuilder;

/** The scheme class is chosen at run time, by reflection. */
public class AuditTopology {
    public static void main(String[] args) throws Exception {
        String schemeClass = args.length > 1 ? args[1] : "com.example.audit.AuditScheme";
        SpoutConfig config = new SpoutConfig(new ZkHosts("zk1.audit.example:2181"), "audit",
                                             "/audit", "audit-reader");
        config.scheme = new SchemeAsMultiScheme((Scheme) Class.forName(schemeClass).newInstance());
        config.zkServers = Arrays.asList("zk1.audit.example");
        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("audit", new KafkaSpout(config), 2);
        StormSubmitter.submitTopology(args[0], new java.util.HashMap<>(), builder.createTopology());
    }
}
