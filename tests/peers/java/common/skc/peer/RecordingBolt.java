package skc.peer;

import java.util.Map;

import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.BasicOutputCollector;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.base.BaseBasicBolt;
import org.apache.storm.tuple.Tuple;

/**
 * The peer topologies' bolt: appends each tuple's values (tab-separated, one line a
 * tuple) to a file the test reads, sleeps {@code delayMs} to pace the topology, and lets
 * BaseBasicBolt ack. Compiled by the test fixtures against the Storm version under test
 * (1.x and 2.x share this API).
 */
public class RecordingBolt extends BaseBasicBolt {
    private final String path;
    private final long delayMs;
    private transient LineRecorder recorder;

    public RecordingBolt(String path, Integer delayMs) {
        this.path = path;
        this.delayMs = delayMs;
    }

    @Override
    @SuppressWarnings("rawtypes")
    public void prepare(Map conf, TopologyContext context) {
        recorder = new LineRecorder(path);
    }

    @Override
    public void execute(Tuple tuple, BasicOutputCollector collector) {
        StringBuilder line = new StringBuilder();
        for (Object value : tuple.getValues()) {
            if (line.length() > 0) {
                line.append('\t');
            }
            line.append(value);
        }
        recorder.record(line.toString(), delayMs);
    }

    @Override
    public void declareOutputFields(OutputFieldsDeclarer declarer) {
    }
}
