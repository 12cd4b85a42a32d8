package skc.peer;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.Map;

import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.BasicOutputCollector;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.base.BaseBasicBolt;
import org.apache.storm.tuple.Tuple;

/**
 * The peer topologies' bolt: appends each tuple's values (tab-separated, one line a
 * tuple, flushed at once) to a file the test reads, sleeps {@code delayMs} to pace the
 * topology, and lets BaseBasicBolt ack. Compiled by the test fixtures against the
 * Storm version under test (1.x and 2.x share this API).
 */
public class RecordingBolt extends BaseBasicBolt {
    private final String path;
    private final long delayMs;
    private transient Writer out;

    public RecordingBolt(String path, Integer delayMs) {
        this.path = path;
        this.delayMs = delayMs;
    }

    @Override
    @SuppressWarnings("rawtypes")
    public void prepare(Map conf, TopologyContext context) {
        try {
            out = new OutputStreamWriter(new FileOutputStream(path, true), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException("cannot open " + path, e);
        }
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
        try {
            out.write(line.append('\n').toString());
            out.flush();
            if (delayMs > 0) {
                Thread.sleep(delayMs);
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot write " + path, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void declareOutputFields(OutputFieldsDeclarer declarer) {
    }
}
