package com.example.ledger;

import org.apache.storm.Config;
import org.apache.storm.StormSubmitter;
import org.apache.storm.kafka.spout.KafkaSpout;
import org.apache.storm.topology.TopologyBuilder;

/** The subclass: only the topic and the bolts are its own. */
public class LedgerTopology extends BaseKafkaTopology {

    public LedgerTopology() {
        super("ledger-storm");
    }

    @Override
    protected long commitPeriodMs() {
        return 5000;
    }

    void submit() throws Exception {
        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("entries", new KafkaSpout<>(spoutConfig("ledger-entries")), 4);
        builder.setBolt("post", new PostBolt(), 4).shuffleGrouping("entries");
        StormSubmitter.submitTopology("ledger", new Config(), builder.createTopology());
    }

    public static void main(String[] args) throws Exception {
        new LedgerTopology().submit();
    }
}
