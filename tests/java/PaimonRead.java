import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.table.source.StreamTableScan;
import org.apache.paimon.types.DataField;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Paimon's own batch read of a table's latest snapshot: one JSON array per row on stdout.
 *
 * <p>With the single argument --jobs, each stdin line is one read instead, {"warehouse": ...,
 * "database": ..., "table": ..., "snapshot": id (optional), "tag": name (optional)}, all in this
 * JVM; each prints one line {"job": N, "fields": [...], "rows": [[...], ...]} or, when the read
 * fails, {"job": N, "error": ...}. A job with "changelogFrom": id is a streaming read instead,
 * as a Flink source from that snapshot on reads it (changelog files where the table produces
 * them, long-lived changelogs of expired snapshots included) up to the latest snapshot; each of
 * its rows starts with its row kind.
 */
public class PaimonRead {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("--jobs")) {
            readJobs();
            return;
        }
        Table table = catalog(args[0]).getTable(Identifier.create(args[1], args[2]));
        StringBuilder out = new StringBuilder();
        for (List<Object> values : rows(table)) {
            out.append(JSON.writeValueAsString(values)).append('\n');
        }
        System.out.print(out);
    }

    private static Catalog catalog(String warehouse) {
        Options options = new Options();
        options.set("warehouse", warehouse);
        return CatalogFactory.createCatalog(CatalogContext.create(options));
    }

    private static void readJobs() throws Exception {
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Map<String, Catalog> catalogs = new HashMap<>();
        int job = 0;
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (line.isBlank()) {
                continue;
            }
            String prefix = "{\"job\":" + job++ + ",";
            try {
                JsonNode spec = JSON.readTree(line);
                String warehouse = spec.get("warehouse").asText();
                Catalog catalog = catalogs.computeIfAbsent(warehouse, PaimonRead::catalog);
                Table table =
                        catalog.getTable(
                                Identifier.create(
                                        spec.get("database").asText(), spec.get("table").asText()));
                Map<String, String> travel = new HashMap<>();
                if (spec.hasNonNull("snapshot")) {
                    travel.put("scan.snapshot-id", spec.get("snapshot").asText());
                }
                if (spec.hasNonNull("tag")) {
                    travel.put("scan.tag-name", spec.get("tag").asText());
                }
                if (!travel.isEmpty()) {
                    table = table.copy(travel);
                }
                List<String> names = new ArrayList<>();
                table.rowType().getFields().forEach(field -> names.add(field.name()));
                List<List<Object>> rows =
                        spec.hasNonNull("changelogFrom")
                                ? changelog((FileStoreTable) table, spec.get("changelogFrom").asLong())
                                : rows(table);
                System.out.println(
                        prefix
                                + "\"fields\":"
                                + JSON.writeValueAsString(names)
                                + ",\"rows\":"
                                + JSON.writeValueAsString(rows)
                                + "}");
            } catch (Throwable e) {
                StringWriter trace = new StringWriter();
                e.printStackTrace(new PrintWriter(trace));
                System.out.println(
                        prefix + "\"error\":" + JSON.writeValueAsString(trace.toString()) + "}");
            }
        }
    }

    /** Every row of the table's scan, in field order, as JSON-friendly values. */
    private static List<List<Object>> rows(Table table) throws Exception {
        ReadBuilder builder = table.newReadBuilder();
        return rows(table, builder, builder.newScan().plan().splits(), false);
    }

    /** A streaming read from snapshot `from` to the latest, one snapshot per plan. */
    private static List<List<Object>> changelog(FileStoreTable table, long from) throws Exception {
        Map<String, String> start = new HashMap<>();
        start.put("scan.mode", "from-snapshot");
        start.put("scan.snapshot-id", Long.toString(from));
        FileStoreTable streaming = table.copy(start);
        Long latest = streaming.snapshotManager().latestSnapshotId();
        ReadBuilder builder = streaming.newReadBuilder();
        StreamTableScan scan = builder.newStreamScan();
        List<List<Object>> out = new ArrayList<>();
        for (int plans = 0; plans < 10_000; plans++) {
            Long next = scan.checkpoint();
            if (latest == null || (next != null && next > latest)) {
                return out;
            }
            out.addAll(rows(streaming, builder, scan.plan().splits(), true));
        }
        throw new IllegalStateException("the streaming read never caught up with " + latest);
    }

    /** The rows the splits read, in field order (AppendTables reads per bucket through it). */
    static List<List<Object>> rows(
            Table table, ReadBuilder builder, List<Split> splits, boolean kinds) throws Exception {
        List<DataField> fields = table.rowType().getFields();
        InternalRow.FieldGetter[] getters = new InternalRow.FieldGetter[fields.size()];
        for (int i = 0; i < getters.length; i++) {
            getters[i] = InternalRow.createFieldGetter(fields.get(i).type(), i);
        }
        RecordReader<InternalRow> reader = builder.newRead().createReader(splits);
        List<List<Object>> out = new ArrayList<>();
        try {
            reader.forEachRemaining(
                    row -> {
                        List<Object> values = new ArrayList<>();
                        if (kinds) {
                            values.add(row.getRowKind().shortString());
                        }
                        for (InternalRow.FieldGetter getter : getters) {
                            Object value = getter.getFieldOrNull(row);
                            boolean plain =
                                    value == null
                                            || value instanceof Number
                                            || value instanceof Boolean;
                            values.add(plain ? value : value.toString());
                        }
                        out.add(values);
                    });
        } finally {
            reader.close();
        }
        return out;
    }
}
