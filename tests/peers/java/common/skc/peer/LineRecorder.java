package skc.peer;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;

/**
 * Appends lines to the file a test reads, each flushed at once, then sleeps
 * {@code delayMs} to pace the topology: what the peer bolts and Trident functions share.
 */
final class LineRecorder {
    private final String path;
    private final Writer out;

    LineRecorder(String path) {
        this.path = path;
        try {
            out = new OutputStreamWriter(new FileOutputStream(path, true), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException("cannot open " + path, e);
        }
    }

    void record(String line, long delayMs) {
        try {
            out.write(line + "\n");
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
}
