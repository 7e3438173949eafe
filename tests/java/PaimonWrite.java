import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.options.Options;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.StreamTableCommit;
import org.apache.paimon.table.sink.StreamTableWrite;
import org.apache.paimon.table.sink.StreamWriteBuilder;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeRoot;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.RowKind;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
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
 * one, with write-only switched off).
 * Prints one line per step: {"step": N, "messages": M}.
 */
public class PaimonWrite {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        Options options = new Options();
        options.set("warehouse", args[0]);
        Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options));
        Identifier id = Identifier.create(args[1], args[2]);
        boolean stream = args[3].equals("stream");
        if (args.length > 4) {
            catalog.createDatabase(args[1], true);
            catalog.createTable(id, schema(JSON.readTree(args[4])), true);
        }
        Table table = catalog.getTable(id);
        Table compacting = table.copy(Collections.singletonMap("write-only", "false"));
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        List<String> steps = new ArrayList<>();
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (!line.isBlank()) {
                steps.add(line);
            }
        }
        if (stream) {
            streamSteps(table, compacting, steps);
        } else {
            batchSteps(table, compacting, steps);
        }
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

    /** Every (partition, bucket) holding files in the latest snapshot. */
    private static Map<String, Object[]> buckets(Table table) {
        Map<String, Object[]> found = new LinkedHashMap<>();
        for (Split split : table.newReadBuilder().newScan().plan().splits()) {
            DataSplit data = (DataSplit) split;
            BinaryRow partition = data.partition();
            found.putIfAbsent(
                    partition.toString() + "/" + data.bucket(),
                    new Object[] {partition, data.bucket()});
        }
        return found;
    }

    private static void streamSteps(Table table, Table compacting, List<String> steps)
            throws Exception {
        boolean writeOnly = table.options().getOrDefault("write-only", "false").equals("true");
        long identifier = 0;
        int step = 0;
        StreamWriteBuilder builder = table.newStreamWriteBuilder();
        StreamTableWrite write = builder.newWrite();
        write.withIOManager(ioManager());
        StreamTableCommit commit = builder.newCommit();
        for (String line : steps) {
            List<CommitMessage> messages;
            boolean compact = line.trim().equals("\"compact\"");
            if (compact && !writeOnly) {
                // The job compacts its own buckets, as a Flink writer without write-only does.
                for (Object[] bucket : buckets(table).values()) {
                    write.compact((BinaryRow) bucket[0], (int) bucket[1], true);
                }
                messages = write.prepareCommit(true, ++identifier);
                commit.commit(identifier, messages);
            } else if (compact) {
                // A dedicated compaction job: its own writer and commit user.
                StreamWriteBuilder compactBuilder = compacting.newStreamWriteBuilder();
                try (StreamTableWrite compactWrite = compactBuilder.newWrite();
                        StreamTableCommit compactCommit = compactBuilder.newCommit()) {
                    compactWrite.withIOManager(ioManager());
                    for (Object[] bucket : buckets(compacting).values()) {
                        compactWrite.compact((BinaryRow) bucket[0], (int) bucket[1], true);
                    }
                    messages = compactWrite.prepareCommit(true, ++identifier);
                    compactCommit.commit(identifier, messages);
                }
            } else {
                for (JsonNode values : JSON.readTree(line)) {
                    write.write(row(table, values));
                }
                messages = write.prepareCommit(false, ++identifier);
                commit.commit(identifier, messages);
            }
            System.out.println("{\"step\":" + step++ + ",\"messages\":" + messages.size() + "}");
        }
        write.close();
        commit.close();
    }

    private static void batchSteps(Table table, Table compacting, List<String> steps)
            throws Exception {
        int step = 0;
        for (String line : steps) {
            boolean compact = line.trim().equals("\"compact\"");
            BatchWriteBuilder builder = (compact ? compacting : table).newBatchWriteBuilder();
            int count;
            try (BatchTableWrite write = builder.newWrite();
                    BatchTableCommit commit = builder.newCommit()) {
                write.withIOManager(ioManager());
                if (compact) {
                    for (Object[] bucket : buckets(compacting).values()) {
                        write.compact((BinaryRow) bucket[0], (int) bucket[1], true);
                    }
                } else {
                    for (JsonNode values : JSON.readTree(line)) {
                        write.write(row(table, values));
                    }
                }
                List<CommitMessage> messages = write.prepareCommit();
                count = messages.size();
                commit.commit(messages);
            }
            System.out.println("{\"step\":" + step++ + ",\"messages\":" + count + "}");
        }
    }
}
