package skc.peer;

import org.apache.storm.Config;
import org.apache.storm.flux.FluxBuilder;
import org.apache.storm.flux.model.ExecutionContext;
import org.apache.storm.flux.model.TopologyDef;
import org.apache.storm.flux.parser.FluxParser;

/** LocalStorm's factory for a Flux YAML, parsed and built by Flux itself. */
public final class FluxTopologies {
    private FluxTopologies() {
    }

    public static Object[] build(String yaml) throws Exception {
        TopologyDef def = FluxParser.parseFile(yaml, false, true, null, false);
        Config conf = FluxBuilder.buildConfig(def);
        return new Object[] {def.getName(), conf,
                             FluxBuilder.buildTopology(new ExecutionContext(def, conf))};
    }
}
