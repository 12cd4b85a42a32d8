package skc.peer;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.List;

import java.util.Map;

import org.apache.storm.LocalCluster;
import org.apache.storm.generated.KillOptions;
import org.apache.storm.generated.StormTopology;
import org.apache.storm.generated.TopologySummary;

/**
 * A topology in a LocalCluster, driven as an operator drives a cluster with the
 * {@code storm} command: each line appended to the control file is one command,
 * {@code deactivate}, {@code activate}, {@code kill <wait secs>} (returns once the
 * topology is gone) or {@code shutdown}; "SKC-PEER done <command>" on stdout says it
 * finished. Usage: {@code LocalStorm <factory class> <spec file> <control file>}, where
 * the factory's {@code public static Object[] build(String specFile)} returns the
 * topology's name, config and StormTopology (FluxTopologies for a Flux YAML,
 * ClientTopologies for a storm-kafka-client spec).
 */
public final class LocalStorm {
    private LocalStorm() {
    }

    public static void main(String[] args) throws Exception {
        Object[] built = (Object[]) Class.forName(args[0]).getMethod("build", String.class)
                .invoke(null, args[1]);
        String name = (String) built[0];
        @SuppressWarnings("unchecked")
        Map<String, Object> conf = (Map<String, Object>) built[1];
        StormTopology topology = (StormTopology) built[2];
        Path control = Paths.get(args[2]);
        LocalCluster cluster = new LocalCluster();
        cluster.submitTopology(name, conf, topology);
        say("submitted " + name);
        int done = 0;
        while (true) {
            List<String> lines = commands(control);
            for (; done < lines.size(); done++) {
                String command = lines.get(done).trim();
                String[] words = command.split("\\s+");
                if (words[0].equals("deactivate")) {
                    cluster.deactivate(name);
                } else if (words[0].equals("activate")) {
                    cluster.activate(name);
                } else if (words[0].equals("kill")) {
                    KillOptions options = new KillOptions();
                    options.set_wait_secs(Integer.parseInt(words[1]));
                    cluster.killTopologyWithOpts(name, options);
                    while (running(cluster, name)) {
                        Thread.sleep(100);
                    }
                } else if (words[0].equals("shutdown")) {
                    say("done " + command);
                    cluster.shutdown();
                    System.exit(0);
                } else {
                    say("unknown command " + command);
                    continue;
                }
                say("done " + command);
            }
            Thread.sleep(100);
        }
    }

    private static List<String> commands(Path control) throws IOException {
        if (!Files.exists(control)) {
            return Collections.emptyList();
        }
        List<String> lines = Files.readAllLines(control, StandardCharsets.UTF_8);
        // a line is a command once its newline is written
        String text = new String(Files.readAllBytes(control), StandardCharsets.UTF_8);
        return text.endsWith("\n") ? lines : lines.subList(0, Math.max(0, lines.size() - 1));
    }

    private static boolean running(LocalCluster cluster, String name) throws Exception {
        for (TopologySummary summary : cluster.getClusterInfo().get_topologies()) {
            if (summary.get_name().equals(name)) {
                return true;
            }
        }
        return false;
    }

    private static void say(String line) {
        System.out.println("SKC-PEER " + line);
        System.out.flush();
    }
}
