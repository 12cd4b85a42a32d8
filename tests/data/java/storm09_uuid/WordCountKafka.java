package storm.starter;

import backtype.storm.Config;
import backtype.storm.LocalCluster;
import backtype.storm.StormSubmitter;
import backtype.storm.spout.SchemeAsMultiScheme;
import backtype.storm.topology.TopologyBuilder;
import backtype.storm.tuple.Fields;
import storm.kafka.*;
import java.util.UUID;

public class WordCountKafka {
    static final String TOPIC = "sentences";

    private static SpoutConfig spoutConfig(String zk, String topic) {
        BrokerHosts hosts = new ZkHosts(zk);
        SpoutConfig cfg = new SpoutConfig(hosts, topic, "/kafkastorm/" + topic,
                                          UUID.randomUUID().toString());
        cfg.scheme = new SchemeAsMultiScheme(new StringScheme());
        cfg.forceFromStart = true;
        cfg.startOffsetTime = -2;
        cfg.maxOffsetBehind = 10000;
        return cfg;
    }

    public static void main(String[] args) throws Exception {
        String zk = args.length > 1 ? args[1] : "localhost:2181";
        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("sentences", new KafkaSpout(spoutConfig(zk, TOPIC)), 1);
        builder.setBolt("split", new SplitSentence(), 8).localOrShuffleGrouping("sentences");
        builder.setBolt("count", new WordCount(), 12).fieldsGrouping("split", new Fields("word"));

        Config conf = new Config();
        conf.setDebug(false);
        if (args != null && args.length > 0) {
            conf.setNumWorkers(3);
            StormSubmitter.submitTopology(args[0], conf, builder.createTopology());
        } else {
            LocalCluster cluster = new LocalCluster();
            cluster.submitTopology("word-count", conf, builder.createTopology());
        }
    }
}
