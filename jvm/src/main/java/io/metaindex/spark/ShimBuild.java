package io.metaindex.spark;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

/**
 * What this jar was built for ({@value #PROPERTIES}, written by the Maven build: the Spark
 * lines it runs on, the Spark and Scala it was compiled against) and whether it fits the Spark
 * of this JVM. A jar of another line links against members that are not there (Scala 2.12
 * against 2.13 collections, members added or removed between lines), so
 * {@link MetaIndexExtensions} installs nothing when {@link #mismatch()} says so.
 */
public final class ShimBuild {
    static final String PROPERTIES = "META-INF/metaindex-spark.properties";

    private ShimBuild() {
    }

    /** The jar's properties (empty when the entry is missing). */
    static Properties properties() {
        Properties props = new Properties();
        try (InputStream in = ShimBuild.class.getClassLoader().getResourceAsStream(PROPERTIES)) {
            if (in != null) {
                props.load(in);
            }
        } catch (IOException e) {
            // no properties: every line is a mismatch below
        }
        return props;
    }

    /** The Spark lines ({@code major.minor}) this jar runs on. */
    static List<String> lines() {
        List<String> out = new ArrayList<>();
        for (String line : properties().getProperty("spark.lines", "").split(",")) {
            if (!line.trim().isEmpty()) {
                out.add(line.trim());
            }
        }
        return out;
    }

    /** {@code major.minor} of a Spark version ("3.5.9" is "3.5"). */
    static String line(String version) {
        String[] parts = version.split("\\.");
        return parts.length < 2 ? version : parts[0] + "." + parts[1];
    }

    /** The version of the Spark running in this JVM. */
    static String runningSpark() {
        return org.apache.spark.package$.MODULE$.SPARK_VERSION();
    }

    /** Null when this jar fits the running Spark; else one sentence saying what does not fit
     * and what to do. */
    public static String mismatch() {
        String running = runningSpark();
        List<String> lines = lines();
        if (lines.contains(line(running))) {
            return null;
        }
        Properties props = properties();
        return "metaindex: this metaindex jar is for Spark " + String.join(", ", lines)
                + " (compiled against Spark " + props.getProperty("spark.version", "?")
                + ", Scala " + props.getProperty("scala.binary", "?") + "), not Spark "
                + running + "; skipping is off in this application. metaindex ships a jar for "
                + "each supported Spark line (" + props.getProperty("supported.lines", "?")
                + "): put the one `metaindex jar --spark-version " + running
                + "` prints in spark.jars";
    }
}
