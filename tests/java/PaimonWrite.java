import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.index.HashBucketAssigner;
import org.apache.paimon.manifest.ManifestEntry;
import org.apache.paimon.options.Options;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.KeyAndBucketExtractor;
import org.apache.paimon.table.sink.StreamTableCommit;
import org.apache.paimon.table.sink.StreamTableWrite;
import org.apache.paimon.table.sink.StreamWriteBuilder;
import org.apache.paimon.table.sink.TableWrite;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeRoot;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.RowKind;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Paimon's own writer, as a Flink or Spark job drives it.
 *
 * <p>Arguments: WAREHOUSE DB TABLE MODE [SPEC]. MODE is "stream" (one StreamTableWrite across
 * commits with increasing commit identifiers, as a Flink job commits per checkpoint) or "batch"
 * (one BatchWriteBuilder commit per step). SPEC, when given, is a JSON object creating the table
 * if absent: {"columns": [[name, "INT"|"BIGINT"|"STRING"|"DOUBLE"], ...], "primaryKeys": [...],
 * "partitionKeys": [...], "options": {...}}.
 *
 * <p>Each stdin line is one step: a JSON array of rows, each [rowKind, value, ...] with rowKind
 * one of +I, -U, +U, -D, committed as one commit; or the string "compact", Paimon's own full
 * compaction of every bucket (of a write-only table by a dedicated compaction job, as Flink runs
 * one, with write-only switched off); or {"addColumn": [name, type]}, a schema change through the
 * catalog (the writer then restarts on the new schema); or {"tag": name}, a tag of the latest
 * snapshot; or {"await": dir}, a pause that creates dir/ready and waits for dir/go (another
 * process changes the table meanwhile, the writer keeping its state). A stream job waits for its compaction at each commit where Flink's sink does
 * (lookup-based tables). Dynamic-bucket primary-key tables (bucket -1) get their buckets from
 * Paimon's HashBucketAssigner (an append table with bucket -1 is unaware-bucket: written as is),
 * as Flink's dynamic-bucket sink assigns them.
 * Prints one line per step: {"step": N, "messages": M, "snapshot": latest snapshot id or null,
 * "commitUser": the stream job's commit user, or null in batch mode}.
 *
 * <p>With the single argument --jobs, each stdin line is one table's job instead, {"warehouse":
 * ..., "database": ..., "table": ..., "mode": ..., "spec": {...} or absent, "steps": [...]}, run
 * one after another in this JVM; every output line then starts with "job": its index, and a job
 * that fails prints {"job": N, "error": ...} and the next job runs.
 */
public class PaimonWrite {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        List<String> lines = new ArrayList<>();
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (!line.isBlank()) {
                lines.add(line);
            }
        }
        if (args.length == 1 && args[0].equals("--jobs")) {
            for (int job = 0; job < lines.size(); job++) {
                JsonNode spec = JSON.readTree(lines.get(job));
                List<String> steps = new ArrayList<>();
                spec.get("steps").forEach(step -> steps.add(step.toString()));
                String prefix = "{\"job\":" + job + ",";
                try {
                    run(
                            spec.get("warehouse").asText(),
                            spec.get("database").asText(),
                            spec.get("table").asText(),
                            spec.get("mode").asText().equals("stream"),
                            spec.hasNonNull("spec") ? spec.get("spec") : null,
                            steps,
                            prefix);
                } catch (Throwable e) {
                    StringWriter trace = new StringWriter();
                    e.printStackTrace(new PrintWriter(trace));
                    System.out.println(
                            prefix + "\"error\":" + JSON.writeValueAsString(trace.toString()) + "}");
                }
            }
            return;
        }
        JsonNode spec = args.length > 4 ? JSON.readTree(args[4]) : null;
        run(args[0], args[1], args[2], args[3].equals("stream"), spec, lines, "{");
    }

    private static void run(
            String warehouse,
            String database,
            String name,
            boolean stream,
            JsonNode spec,
            List<String> steps,
            String prefix)
            throws Exception {
        Options options = new Options();
        options.set("warehouse", warehouse);
        Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options));
        Identifier id = Identifier.create(database, name);
        if (spec != null) {
            catalog.createDatabase(database, true);
            catalog.createTable(id, schema(spec), true);
        }
        Writer writer = new Writer(catalog, id, stream);
        int step = 0;
        try {
            for (String line : steps) {
                JsonNode parsed = JSON.readTree(line);
                int messages = 0;
                if (parsed.isObject() && parsed.has("addColumn")) {
                    JsonNode column = parsed.get("addColumn");
                    writer.close();
                    catalog.alterTable(
                            id,
                            SchemaChange.addColumn(
                                    column.get(0).asText(), type(column.get(1).asText())),
                            false);
                    writer = new Writer(catalog, id, stream);
                } else if (parsed.isObject() && parsed.has("tag")) {
                    writer.table.createTag(parsed.get("tag").asText());
                } else if (parsed.isObject() && parsed.has("await")) {
                    await(Paths.get(parsed.get("await").asText()));
                } else if (parsed.isTextual() && parsed.asText().equals("compact")) {
                    messages = writer.compact();
                } else {
                    messages = writer.write(parsed);
                }
                Long latest = writer.table.snapshotManager().latestSnapshotId();
                String user =
                        stream ? JSON.writeValueAsString(writer.builder.commitUser()) : "null";
                System.out.println(
                        prefix
                                + "\"step\":"
                                + step++
                                + ",\"messages\":"
                                + messages
                                + ",\"snapshot\":"
                                + latest
                                + ",\"commitUser\":"
                                + user
                                + "}");
            }
        } finally {
            writer.close();
        }
    }

    /** Signal dir/ready, then wait until another process creates dir/go. */
    private static void await(Path dir) throws Exception {
        Files.createFile(dir.resolve("ready"));
        while (!Files.exists(dir.resolve("go"))) {
            Thread.sleep(20);
        }
    }

    /** One table's writer: a long-lived stream job, or a batch job per step. */
    private static class Writer {
        final FileStoreTable table;
        final Table compacting;
        final boolean stream;
        final boolean writeOnly;
        final boolean dynamic;
        final boolean waitCompaction;
        StreamWriteBuilder builder;
        StreamTableWrite write;
        StreamTableCommit commit;
        HashBucketAssigner assigner;
        long identifier = 0;

        Writer(Catalog catalog, Identifier id, boolean stream) throws Exception {
            this.table = (FileStoreTable) catalog.getTable(id);
            this.compacting = table.copy(Collections.singletonMap("write-only", "false"));
            this.stream = stream;
            this.writeOnly = table.options().getOrDefault("write-only", "false").equals("true");
            this.dynamic =
                    !table.primaryKeys().isEmpty()
                            && table.options().getOrDefault("bucket", "-1").equals("-1");
            this.waitCompaction = !writeOnly && needLookup(table.options());
            if (stream) {
                builder = table.newStreamWriteBuilder();
                write = builder.newWrite();
                write.withIOManager(ioManager());
                commit = builder.newCommit();
                assigner = dynamic ? assigner(table, builder.commitUser()) : null;
            }
        }

        int write(JsonNode rows) throws Exception {
            if (!stream) {
                BatchWriteBuilder batch = table.newBatchWriteBuilder();
                try (BatchTableWrite batchWrite = batch.newWrite();
                        BatchTableCommit batchCommit = batch.newCommit()) {
                    batchWrite.withIOManager(ioManager());
                    HashBucketAssigner batchAssigner =
                            dynamic ? assigner(table, "batch-" + System.nanoTime()) : null;
                    writeRows(batchWrite, batchAssigner, rows);
                    List<CommitMessage> messages = batchWrite.prepareCommit();
                    batchCommit.commit(messages);
                    return messages.size();
                }
            }
            writeRows(write, assigner, rows);
            List<CommitMessage> messages = write.prepareCommit(waitCompaction, ++identifier);
            if (assigner != null) {
                assigner.prepareCommit(identifier);
            }
            commit.commit(identifier, messages);
            return messages.size();
        }

        private void writeRows(TableWrite target, HashBucketAssigner bucketAssigner, JsonNode rows)
                throws Exception {
            KeyAndBucketExtractor<org.apache.paimon.data.InternalRow> extractor =
                    table.createRowKeyExtractor();
            for (JsonNode values : rows) {
                GenericRow row = row(table, values);
                if (bucketAssigner == null) {
                    target.write(row);
                } else {
                    extractor.setRecord(row);
                    int bucket =
                            bucketAssigner.assign(
                                    extractor.partition(), extractor.trimmedPrimaryKey().hashCode());
                    target.write(row, bucket);
                }
            }
        }

        int compact() throws Exception {
            if (!stream) {
                BatchWriteBuilder batch = compacting.newBatchWriteBuilder();
                try (BatchTableWrite batchWrite = batch.newWrite();
                        BatchTableCommit batchCommit = batch.newCommit()) {
                    batchWrite.withIOManager(ioManager());
                    for (Object[] bucket : buckets(compacting).values()) {
                        batchWrite.compact((BinaryRow) bucket[0], (int) bucket[1], true);
                    }
                    List<CommitMessage> messages = batchWrite.prepareCommit();
                    batchCommit.commit(messages);
                    return messages.size();
                }
            }
            if (!writeOnly) {
                // The job compacts its own buckets, as a Flink writer without write-only does.
                for (Object[] bucket : buckets(table).values()) {
                    write.compact((BinaryRow) bucket[0], (int) bucket[1], true);
                }
                List<CommitMessage> messages = write.prepareCommit(true, ++identifier);
                commit.commit(identifier, messages);
                return messages.size();
            }
            // A dedicated compaction job: its own writer and commit user.
            StreamWriteBuilder compactBuilder = compacting.newStreamWriteBuilder();
            try (StreamTableWrite compactWrite = compactBuilder.newWrite();
                    StreamTableCommit compactCommit = compactBuilder.newCommit()) {
                compactWrite.withIOManager(ioManager());
                for (Object[] bucket : buckets(compacting).values()) {
                    compactWrite.compact((BinaryRow) bucket[0], (int) bucket[1], true);
                }
                List<CommitMessage> messages = compactWrite.prepareCommit(true, ++identifier);
                compactCommit.commit(identifier, messages);
                return messages.size();
            }
        }

        void close() throws Exception {
            if (write != null) {
                write.close();
                commit.close();
                write = null;
            }
        }
    }

    /**
     * Whether Flink's sink waits for the writer's compaction at each checkpoint: lookup-based
     * tables (lookup changelog, deletion vectors, first-row) with changelog-producer.lookup-wait
     * (CoreOptions.prepareCommitWaitCompaction), so every commit leaves no level-0 file behind.
     */
    private static boolean needLookup(Map<String, String> options) {
        boolean lookup =
                options.getOrDefault("changelog-producer", "none").equals("lookup")
                        || options.getOrDefault("deletion-vectors.enabled", "false").equals("true")
                        || options.getOrDefault("merge-engine", "deduplicate").equals("first-row");
        return lookup
                && options.getOrDefault("changelog-producer.lookup-wait", "true").equals("true");
    }

    /** Paimon's assigner for one writer of a dynamic-bucket table: it alone assigns. */
    private static HashBucketAssigner assigner(FileStoreTable table, String commitUser) {
        long target =
                Long.parseLong(
                        table.options().getOrDefault("dynamic-bucket.target-row-num", "2000000"));
        return new HashBucketAssigner(
                table.snapshotManager(),
                commitUser,
                table.store().newIndexFileHandler(),
                1,
                1,
                0,
                target);
    }

    private static Schema schema(JsonNode spec) {
        Schema.Builder builder = Schema.newBuilder();
        for (JsonNode column : spec.get("columns")) {
            builder.column(column.get(0).asText(), type(column.get(1).asText()));
        }
        builder.primaryKey(strings(spec.get("primaryKeys")));
        builder.partitionKeys(strings(spec.get("partitionKeys")));
        Map<String, String> opts = new LinkedHashMap<>();
        Iterator<Map.Entry<String, JsonNode>> fields = spec.get("options").fields();
        while (fields.hasNext()) {
            Map.Entry<String, JsonNode> field = fields.next();
            opts.put(field.getKey(), field.getValue().asText());
        }
        builder.options(opts);
        return builder.build();
    }

    private static DataType type(String name) {
        switch (name) {
            case "INT":
                return DataTypes.INT();
            case "BIGINT":
                return DataTypes.BIGINT();
            case "STRING":
                return DataTypes.STRING();
            case "DOUBLE":
                return DataTypes.DOUBLE();
            default:
                throw new IllegalArgumentException("unsupported column type " + name);
        }
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        if (array != null) {
            array.forEach(node -> out.add(node.asText()));
        }
        return out;
    }

    private static GenericRow row(Table table, JsonNode values) {
        List<DataType> types = table.rowType().getFieldTypes();
        GenericRow row = new GenericRow(RowKind.fromShortString(values.get(0).asText()), types.size());
        for (int i = 0; i < types.size(); i++) {
            JsonNode value = values.get(i + 1);
            if (value == null || value.isNull()) {
                continue;
            }
            DataTypeRoot root = types.get(i).getTypeRoot();
            if (root == DataTypeRoot.INTEGER) {
                row.setField(i, value.asInt());
            } else if (root == DataTypeRoot.BIGINT) {
                row.setField(i, value.asLong());
            } else if (root == DataTypeRoot.DOUBLE) {
                row.setField(i, value.asDouble());
            } else {
                row.setField(i, BinaryString.fromString(value.asText()));
            }
        }
        return row;
    }

    /** Spill and lookup files (deletion vectors, lookup changelog) under the JVM's temp dir. */
    private static IOManager ioManager() {
        return IOManager.create(System.getProperty("java.io.tmpdir"));
    }

    /** Every (partition, bucket) holding files in the latest snapshot, level 0 included (a
     * batch scan of a deletion-vector or first-row table skips level 0). */
    private static Map<List<Object>, Object[]> buckets(Table table) {
        Map<List<Object>, Object[]> found = new LinkedHashMap<>();
        for (ManifestEntry entry : ((FileStoreTable) table).store().newScan().plan().files()) {
            BinaryRow partition = entry.partition();
            found.putIfAbsent(
                    List.of(partition, entry.bucket()), new Object[] {partition, entry.bucket()});
        }
        return found;
    }
}
