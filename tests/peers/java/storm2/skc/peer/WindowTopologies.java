package skc.peer;

import java.io.FileInputStream;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.storm.Config;
import org.apache.storm.kafka.spout.FirstPollOffsetStrategy;
import org.apache.storm.kafka.spout.KafkaSpout;
import org.apache.storm.kafka.spout.KafkaSpoutConfig;
import org.apache.storm.task.OutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.topology.base.BaseRichBolt;
import org.apache.storm.topology.base.BaseWindowedBolt;
import org.apache.storm.tuple.Fields;
import org.apache.storm.tuple.Tuple;
import org.apache.storm.tuple.Values;
import org.apache.storm.utils.TupleUtils;
import org.apache.storm.windowing.TupleWindow;

/**
 * LocalStorm's factory for the topologies on time of issue 35, over storm-kafka-client's
 * KafkaSpout (string values "event-time-ms word [word ...]"), the reference the
 * project's Python ports (tests/windowed_bolts.py) are compared with:
 *
 * <ul>
 * <li>{@code kind=rolling}: a parse bolt emits (ts, word) per word; a rolling counter
 * (fields grouping on "word", ticks every second from its component configuration)
 * counts per 10 s event-time bucket and, on each tick, emits (bucket, word, count) for
 * the buckets ending before the largest time seen less 3 s, then forgets them;</li>
 * <li>{@code kind=windows}: a parse bolt emits (ts, first word); behind it, with global
 * groupings, a BaseWindowedBolt over the last 5 tuples every 3 emits (first ts, last ts,
 * count), and a BaseWindowedBolt with tumbling 10 s windows on the tuples' "ts" field, a
 * 3 s lag and a 500 ms watermark interval emits (end, count).</li>
 * </ul>
 *
 * A RecordingBolt per result bolt writes each result, tab-separated, to
 * {@code record.<bolt>} (rolling, sliding, tumbling). Spec keys as
 * StatefulTopologies: {@code name}, {@code kind}, {@code bootstrap}, {@code topics},
 * {@code group}, {@code firstPoll}, {@code commitPeriodMs}, {@code record},
 * {@code parallelism}, {@code config.<key>}.
 */
public final class WindowTopologies {
    static final long BUCKET_MS = 10_000L;
    static final long LAG_MS = 3_000L;

    private WindowTopologies() {
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
            if (key.startsWith("config.")) {
                conf.put(key.substring("config.".length()), Integer.valueOf(spec.getProperty(key)));
            }
        }
        String kind = spec.getProperty("kind");
        int parallelism = Integer.parseInt(spec.getProperty("parallelism", "1"));
        TopologyBuilder topology = new TopologyBuilder();
        topology.setSpout("kafka-spout", new KafkaSpout<>(builder.build()), 1);
        String record = spec.getProperty("record");
        if (kind.equals("rolling")) {
            topology.setBolt("parse", new Parse(true), 1).shuffleGrouping("kafka-spout");
            topology.setBolt("rolling", new RollingCount(), parallelism)
                    .fieldsGrouping("parse", new Fields("word"));
            topology.setBolt("recorder", new RecordingBolt(record + ".rolling", 0), 1)
                    .shuffleGrouping("rolling");
        } else if (kind.equals("windows")) {
            topology.setBolt("parse", new Parse(false), 1).shuffleGrouping("kafka-spout");
            topology.setBolt("sliding", new SlidingCount()
                    .withWindow(BaseWindowedBolt.Count.of(5), BaseWindowedBolt.Count.of(3)), 1)
                    .globalGrouping("parse");
            topology.setBolt("tumbling", new TumblingByTime()
                    .withTumblingWindow(BaseWindowedBolt.Duration.seconds(10))
                    .withTimestampField("ts")
                    .withLag(BaseWindowedBolt.Duration.seconds(3))
                    .withWatermarkInterval(BaseWindowedBolt.Duration.of(500)), 1)
                    .globalGrouping("parse");
            topology.setBolt("record-sliding", new RecordingBolt(record + ".sliding", 0), 1)
                    .shuffleGrouping("sliding");
            topology.setBolt("record-tumbling", new RecordingBolt(record + ".tumbling", 0), 1)
                    .shuffleGrouping("tumbling");
        } else {
            throw new IllegalArgumentException("unknown kind " + kind);
        }
        return new Object[] {spec.getProperty("name"), conf, topology.createTopology()};
    }

    /** "ts w1 w2" as (ts, word): one tuple per word, or only the first word. */
    static final class Parse extends BaseRichBolt {
        private final boolean everyWord;
        private transient OutputCollector collector;

        Parse(boolean everyWord) {
            this.everyWord = everyWord;
        }

        @Override
        @SuppressWarnings("rawtypes")
        public void prepare(Map conf, TopologyContext context, OutputCollector collector) {
            this.collector = collector;
        }

        @Override
        public void execute(Tuple input) {
            String[] parts = input.getStringByField("value").trim().split("\\s+");
            long ts = Long.parseLong(parts[0]);
            for (int i = 1; i < parts.length && (everyWord || i == 1); i++) {
                collector.emit(input, new Values(ts, parts[i]));
            }
            collector.ack(input);
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer declarer) {
            declarer.declare(new Fields("ts", "word"));
        }
    }

    /** Counts per (10 s event-time bucket, word); emits the closed buckets on ticks. */
    static final class RollingCount extends BaseRichBolt {
        private transient OutputCollector collector;
        private transient TreeMap<String, Long> counts;
        private long top;

        @Override
        @SuppressWarnings("rawtypes")
        public void prepare(Map conf, TopologyContext context, OutputCollector collector) {
            this.collector = collector;
            counts = new TreeMap<>();
        }

        @Override
        public void execute(Tuple input) {
            if (TupleUtils.isTick(input)) {
                List<String> closed = new ArrayList<>();
                for (String key : counts.keySet()) {
                    long bucket = Long.parseLong(key.substring(0, key.indexOf(' ')));
                    if (bucket + BUCKET_MS <= top - LAG_MS) {
                        closed.add(key);
                    }
                }
                for (String key : closed) {
                    int space = key.indexOf(' ');
                    collector.emit(new Values(Long.parseLong(key.substring(0, space)),
                            key.substring(space + 1), counts.remove(key)));
                }
                return;
            }
            long ts = input.getLongByField("ts");
            top = Math.max(top, ts);
            String key = (ts - ts % BUCKET_MS) + " " + input.getStringByField("word");
            counts.merge(key, 1L, Long::sum);
            collector.ack(input);
        }

        @Override
        public Map<String, Object> getComponentConfiguration() {
            Map<String, Object> conf = new HashMap<>();
            conf.put(Config.TOPOLOGY_TICK_TUPLE_FREQ_SECS, 1);
            return conf;
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer declarer) {
            declarer.declare(new Fields("bucket", "word", "count"));
        }
    }

    /** The last 5 tuples every 3: (first ts, last ts, count). */
    static final class SlidingCount extends BaseWindowedBolt {
        private transient OutputCollector collector;

        @Override
        @SuppressWarnings("rawtypes")
        public void prepare(Map conf, TopologyContext context, OutputCollector collector) {
            this.collector = collector;
        }

        @Override
        public void execute(TupleWindow window) {
            List<Tuple> tuples = window.get();
            collector.emit(new Values(tuples.get(0).getLongByField("ts"),
                    tuples.get(tuples.size() - 1).getLongByField("ts"), (long) tuples.size()));
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer declarer) {
            declarer.declare(new Fields("first", "last", "count"));
        }
    }

    /** Tumbling event-time windows: (end, count). */
    static final class TumblingByTime extends BaseWindowedBolt {
        private transient OutputCollector collector;

        @Override
        @SuppressWarnings("rawtypes")
        public void prepare(Map conf, TopologyContext context, OutputCollector collector) {
            this.collector = collector;
        }

        @Override
        public void execute(TupleWindow window) {
            collector.emit(new Values(window.getEndTimestamp(), (long) window.get().size()));
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer declarer) {
            declarer.declare(new Fields("end", "count"));
        }
    }
}
