package t;
import java.util.Properties;
import org.apache.storm.kafka.*;
import org.apache.storm.kafka.bolt.KafkaBolt;
import org.apache.storm.kafka.bolt.selector.DefaultTopicSelector;
import org.apache.storm.kafka.bolt.mapper.FieldNameBasedTupleToKafkaMapper;
import org.apache.storm.topology.TopologyBuilder;
public class ForwardTopology {
  public static void main(String[] args) {
    SpoutConfig c = new SpoutConfig(new ZkHosts("zk:2181"), "in", "/r", "i");
    Properties p = new Properties();
    p.put("bootstrap.servers", "k:9092");
    p.put("acks", "1");
    KafkaBolt bolt = new KafkaBolt().withProducerProperties(p)
        .withTopicSelector(new DefaultTopicSelector("out"))
        .withTupleToKafkaMapper(new FieldNameBasedTupleToKafkaMapper("key", "str"));
    TopologyBuilder b = new TopologyBuilder();
    b.setSpout("s", new KafkaSpout(c));
    b.setBolt("forward", bolt, 2).shuffleGrouping("s");
  }
}
