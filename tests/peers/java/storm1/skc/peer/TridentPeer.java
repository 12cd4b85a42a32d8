package skc.peer;

import java.util.Map;

import org.apache.storm.generated.StormTopology;
import org.apache.storm.kafka.StringScheme;
import org.apache.storm.kafka.ZkHosts;
import org.apache.storm.kafka.trident.OpaqueTridentKafkaSpout;
import org.apache.storm.kafka.trident.TridentKafkaConfig;
import org.apache.storm.spout.SchemeAsMultiScheme;
import org.apache.storm.trident.TridentTopology;
import org.apache.storm.trident.operation.BaseFunction;
import org.apache.storm.trident.operation.TridentCollector;
import org.apache.storm.trident.operation.TridentOperationContext;
import org.apache.storm.trident.tuple.TridentTuple;
import org.apache.storm.tuple.Fields;

/**
 * A Trident topology over storm-kafka's OpaqueTridentKafkaSpout, for Flux's
 * {@code topologySource}: stream {@code txStateId} from {@code topic} (ZkHosts, StringScheme,
 * from the earliest offset, {@code fetchSizeBytes} a fetch, so a batch holds that much of a
 * partition), each tuple's value appended to {@code recordPath}.
 */
public class TridentPeer {
    private final String zkHosts;
    private final String topic;
    private final String txStateId;
    private final String recordPath;
    private final long delayMs;
    private final int fetchSizeBytes;

    public TridentPeer(String zkHosts, String topic, String txStateId, String recordPath,
                       Integer delayMs, Integer fetchSizeBytes) {
        this.zkHosts = zkHosts;
        this.topic = topic;
        this.txStateId = txStateId;
        this.recordPath = recordPath;
        this.delayMs = delayMs;
        this.fetchSizeBytes = fetchSizeBytes;
    }

    public StormTopology getTopology(Map<String, Object> config) {
        TridentKafkaConfig spoutConfig = new TridentKafkaConfig(new ZkHosts(zkHosts), topic);
        spoutConfig.scheme = new SchemeAsMultiScheme(new StringScheme());
        spoutConfig.startOffsetTime = kafka.api.OffsetRequest.EarliestTime();
        spoutConfig.fetchSizeBytes = fetchSizeBytes;
        TridentTopology topology = new TridentTopology();
        topology.newStream(txStateId, new OpaqueTridentKafkaSpout(spoutConfig))
                .each(new Fields("str"), new Recorder(recordPath, delayMs), new Fields());
        return topology.build();
    }

    /** Appends each tuple's first value to a file, one line a tuple. */
    public static class Recorder extends BaseFunction {
        private final String path;
        private final long delayMs;
        private transient LineRecorder recorder;

        Recorder(String path, long delayMs) {
            this.path = path;
            this.delayMs = delayMs;
        }

        @Override
        @SuppressWarnings("rawtypes")
        public void prepare(Map conf, TridentOperationContext context) {
            recorder = new LineRecorder(path);
        }

        @Override
        public void execute(TridentTuple tuple, TridentCollector collector) {
            recorder.record(String.valueOf(tuple.getValue(0)), delayMs);
        }
    }
}
