/*
 * What Paimon's rescale procedure (Spark's RescaleProcedure in 2.0) does, with Paimon's own
 * classes, for the rescale differential (tests/java/test_java_rescale.py): read the merged rows
 * of the partitions matching any spec (all partitions without one) at the latest snapshot,
 * write them through a copy of the table whose schema's `bucket` option is the new count, and
 * commit them as a batch overwrite of the partitions the rows fall in (dynamic partition
 * overwrite, as the procedure's `withOverwrite()`). The procedure's
 * `commit.strict-mode.last-safe-snapshot` is set too; 0.9 and 1.0 do not know it yet.
 *
 * Usage: PaimonRescale WAREHOUSE DATABASE TABLE BUCKET_NUM [SPECS], SPECS a JSON array of
 * {column: value} objects. Prints {"rows": N, "snapshot": id, "kind": commit kind}.
 */

import org.apache.paimon.Snapshot;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.serializer.InternalRowSerializer;
import org.apache.paimon.options.Options;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.table.source.snapshot.SnapshotReader;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public class PaimonRescale {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        Options options = new Options();
        options.set("warehouse", args[0]);
        Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options));
        FileStoreTable table =
                (FileStoreTable) catalog.getTable(Identifier.create(args[1], args[2]));
        int bucketNum = Integer.parseInt(args[3]);
        Snapshot snapshot = table.snapshotManager().latestSnapshot();
        table =
                table.copy(
                        Collections.singletonMap(
                                "commit.strict-mode.last-safe-snapshot",
                                String.valueOf(snapshot.id())));

        SnapshotReader reader = table.newSnapshotReader();
        if (args.length > 4) {
            List<Map<String, String>> specs = new ArrayList<>();
            for (JsonNode node : JSON.readTree(args[4])) {
                Map<String, String> spec = new LinkedHashMap<>();
                node.fields().forEachRemaining(e -> spec.put(e.getKey(), e.getValue().asText()));
                specs.add(spec);
            }
            reader =
                    reader.withPartitionFilter(
                            PredicateBuilder.partitions(
                                    specs,
                                    table.schema().logicalPartitionType(),
                                    table.coreOptions().partitionDefaultName()));
        }
        List<Split> splits = new ArrayList<>();
        for (DataSplit split : reader.read().dataSplits()) {
            if (split.bucket() >= 0) { // only real buckets, as onlyReadRealBuckets
                splits.add(split);
            }
        }
        InternalRowSerializer serializer = new InternalRowSerializer(table.rowType());
        List<InternalRow> rows = new ArrayList<>();
        try (RecordReader<InternalRow> records =
                table.newReadBuilder().newRead().createReader(splits)) {
            records.forEachRemaining(row -> rows.add(serializer.copy(row)));
        }

        Map<String, String> bucketOptions = new HashMap<>(table.options());
        bucketOptions.put("bucket", String.valueOf(bucketNum));
        FileStoreTable rescaled = table.copy(table.schema().copy(bucketOptions));
        BatchWriteBuilder builder = rescaled.newBatchWriteBuilder().withOverwrite();
        try (BatchTableWrite write = builder.newWrite();
                BatchTableCommit commit = builder.newCommit()) {
            for (InternalRow row : rows) {
                write.write(row);
            }
            commit.commit(write.prepareCommit());
        }
        Snapshot latest = table.snapshotManager().latestSnapshot();
        System.out.println(
                "{\"rows\":"
                        + rows.size()
                        + ",\"snapshot\":"
                        + latest.id()
                        + ",\"kind\":\""
                        + latest.commitKind()
                        + "\"}");
    }
}
