package skc.peer;

import java.io.FileInputStream;
import java.io.InputStream;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

import org.apache.storm.kafka.spout.FirstPollOffsetStrategy;
import org.apache.storm.kafka.spout.KafkaSpout;
import org.apache.storm.kafka.spout.KafkaSpoutConfig;
import org.apache.storm.task.OutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.topology.base.BaseRichBolt;
import org.apache.storm.tuple.Fields;
import org.apache.storm.tuple.Tuple;
import org.apache.storm.tuple.Values;

/**
 * LocalStorm's factory for two stateful bolt topologies over storm-kafka-client's
 * KafkaSpout (string values, the default record translator: topic, partition, offset,
 * key, value), the reference the project's stateful results are compared with:
 *
 * <ul>
 * <li>{@code kind=wordcount}: each value a sentence; a split bolt (shuffle grouping)
 * emits one anchored tuple per whitespace-separated word, a count bolt (fields
 * grouping on "word") keeps a {@code HashMap<String, Long>} per task and emits
 * (word, count) after each word;</li>
 * <li>{@code kind=runningmax}: each value "key,number"; a parse bolt (shuffle grouping)
 * emits (key, number), a max bolt (fields grouping on "key") keeps the running maximum
 * per key per task and emits (key, max) after each tuple.</li>
 * </ul>
 *
 * A single RecordingBolt writes every (word, count) / (key, max) to {@code record}, so
 * the last line of a word is its final count; it writes each line before its tuple is
 * acked, so once the spout has committed an offset, everything that message led to is
 * in the file (the test kills the JVM by its PID, no cleanup runs). The first bolt also
 * appends "partition TAB offset" of each message it takes to {@code processed.<task>},
 * so a replay (AT_LEAST_ONCE after a timeout) shows. Every bolt anchors what it emits
 * and acks its input. Spec keys: {@code name}, {@code kind}, {@code bootstrap},
 * {@code topics}, {@code group}, {@code firstPoll}, {@code commitPeriodMs},
 * {@code record}, {@code processed}, {@code firstParallelism},
 * {@code stateParallelism}; {@code consumer.<key>} consumer properties and
 * {@code config.<key>} integer topology settings.
 */
public final class StatefulTopologies {
    private StatefulTopologies() {
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
                .setProcessingGuarantee(KafkaSpoutConfig.ProcessingGuarantee.AT_LEAST_ONCE)
                .setOffsetCommitPeriodMs(Long.parseLong(spec.getProperty("commitPeriodMs")));
        Map<String, Object> conf = new HashMap<>();
        for (String key : spec.stringPropertyNames()) {
            if (key.startsWith("consumer.")) {
                builder.setProp(key.substring("consumer.".length()), spec.getProperty(key));
            } else if (key.startsWith("config.")) {
                conf.put(key.substring("config.".length()), Integer.valueOf(spec.getProperty(key)));
            }
        }
        String kind = spec.getProperty("kind");
        String processed = spec.getProperty("processed");
        int first = Integer.parseInt(spec.getProperty("firstParallelism"));
        int state = Integer.parseInt(spec.getProperty("stateParallelism"));
        TopologyBuilder topology = new TopologyBuilder();
        topology.setSpout("kafka-spout", new KafkaSpout<>(builder.build()), 1);
        if (kind.equals("wordcount")) {
            topology.setBolt("split", new SplitSentence(processed), first)
                    .shuffleGrouping("kafka-spout");
            topology.setBolt("count", new CountWords(), state)
                    .fieldsGrouping("split", new Fields("word"));
            topology.setBolt("recorder", new RecordingBolt(spec.getProperty("record"), 0), 1)
                    .shuffleGrouping("count");
        } else if (kind.equals("runningmax")) {
            topology.setBolt("parse", new ParseKeyNumber(processed), first)
                    .shuffleGrouping("kafka-spout");
            topology.setBolt("max", new RunningMax(), state)
                    .fieldsGrouping("parse", new Fields("key"));
            topology.setBolt("recorder", new RecordingBolt(spec.getProperty("record"), 0), 1)
                    .shuffleGrouping("max");
        } else {
            throw new IllegalArgumentException("unknown kind " + kind);
        }
        return new Object[] {spec.getProperty("name"), conf, topology.createTopology()};
    }

    /** Appends each message's partition and offset to a file of its task. */
    private abstract static class MessageBolt extends BaseRichBolt {
        private final String processed;
        private transient LineRecorder recorder;
        protected transient OutputCollector collector;

        MessageBolt(String processed) {
            this.processed = processed;
        }

        @Override
        @SuppressWarnings("rawtypes")
        public void prepare(Map conf, TopologyContext context, OutputCollector collector) {
            this.collector = collector;
            recorder = new LineRecorder(processed + "." + context.getThisTaskId());
        }

        @Override
        public final void execute(Tuple input) {
            recorder.record(input.getIntegerByField("partition") + "\t"
                    + input.getLongByField("offset"), 0);
            take(input, input.getStringByField("value"));
            collector.ack(input);
        }

        /** Emit what {@code value} holds, anchored to {@code input}. */
        abstract void take(Tuple input, String value);
    }

    /** One tuple ("word") per whitespace-separated word of the sentence. */
    static final class SplitSentence extends MessageBolt {
        SplitSentence(String processed) {
            super(processed);
        }

        @Override
        void take(Tuple input, String value) {
            for (String word : value.trim().split("\\s+")) {
                if (!word.isEmpty()) {
                    collector.emit(input, new Values(word));
                }
            }
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer declarer) {
            declarer.declare(new Fields("word"));
        }
    }

    /** "key,number" as ("key", "number"), the number a long. */
    static final class ParseKeyNumber extends MessageBolt {
        ParseKeyNumber(String processed) {
            super(processed);
        }

        @Override
        void take(Tuple input, String value) {
            int comma = value.lastIndexOf(',');
            collector.emit(input, new Values(value.substring(0, comma),
                    Long.parseLong(value.substring(comma + 1).trim())));
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer declarer) {
            declarer.declare(new Fields("key", "number"));
        }
    }

    /** A count per word in this task's map; emits (word, count) after each word. */
    static final class CountWords extends BaseRichBolt {
        private transient Map<String, Long> counts;
        private transient OutputCollector collector;

        @Override
        @SuppressWarnings("rawtypes")
        public void prepare(Map conf, TopologyContext context, OutputCollector collector) {
            this.collector = collector;
            counts = new HashMap<>();
        }

        @Override
        public void execute(Tuple input) {
            String word = input.getStringByField("word");
            long count = counts.merge(word, 1L, Long::sum);
            collector.emit(input, new Values(word, count));
            collector.ack(input);
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer declarer) {
            declarer.declare(new Fields("word", "count"));
        }
    }

    /** The largest number seen per key in this task's map; emits (key, max) each time. */
    static final class RunningMax extends BaseRichBolt {
        private transient Map<String, Long> maxima;
        private transient OutputCollector collector;

        @Override
        @SuppressWarnings("rawtypes")
        public void prepare(Map conf, TopologyContext context, OutputCollector collector) {
            this.collector = collector;
            maxima = new HashMap<>();
        }

        @Override
        public void execute(Tuple input) {
            String key = input.getStringByField("key");
            long max = maxima.merge(key, input.getLongByField("number"), Math::max);
            collector.emit(input, new Values(key, max));
            collector.ack(input);
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer declarer) {
            declarer.declare(new Fields("key", "max"));
        }
    }
}
