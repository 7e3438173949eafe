import org.apache.paimon.append.UnawareAppendCompactionTask;
import org.apache.paimon.append.UnawareAppendTableCompactionCoordinator;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.deletionvectors.BitmapDeletionVector;
import org.apache.paimon.deletionvectors.append.AppendDeletionFileMaintainer;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.index.IndexFileHandler;
import org.apache.paimon.index.IndexFileMeta;
import org.apache.paimon.io.CompactIncrement;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.io.DataIncrement;
import org.apache.paimon.io.IndexIncrement;
import org.apache.paimon.manifest.FileKind;
import org.apache.paimon.manifest.IndexManifestEntry;
import org.apache.paimon.manifest.ManifestEntry;
import org.apache.paimon.operation.AppendOnlyFileStoreWrite;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.CommitMessageImpl;
import org.apache.paimon.table.sink.TableCommitImpl;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.EndOfScanException;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.DataTypeRoot;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * Paimon's own handling of append tables (no primary key), as its Spark and Flink jobs do it.
 *
 * <p>Arguments: COMMAND WAREHOUSE DB TABLE [ARGS]. Each command prints one JSON line.
 *
 * <ul>
 *   <li>{@code compact full|auto}: the dedicated compaction job of a batch run. An unaware-bucket
 *       table (bucket -1) goes through UnawareAppendTableCompactionCoordinator (batch mode, one
 *       scan) and each UnawareAppendCompactionTask, committed together, as Spark's compact
 *       procedure and Flink's batch compact action run them (neither has a full mode for these
 *       tables: the argument is ignored). A bucketed table gets BatchTableWrite.compact(partition,
 *       bucket, full) for every bucket (BucketedAppendCompactManager), as Spark's procedure and
 *       Flink's batch compact job do with full = true. Prints {"tasks": [files per task], "ms":
 *       milliseconds of planning, rewriting and committing, "peakRssKb": the JVM's peak resident
 *       set, "snapshot": latest id}.
 *   <li>{@code delete COLUMN VALUES}: Spark's DELETE of a deletion-vector table: every live row
 *       whose integer COLUMN is in the JSON array VALUES gets a deletion vector bit, through
 *       AppendDeletionFileMaintainer (per partition for unaware buckets, per bucket otherwise),
 *       one commit. Prints {"files": data files given a deletion vector, "snapshot": id}.
 *   <li>{@code layout}: the latest snapshot as Paimon's batch read plans it: {"buckets":
 *       [{"partition": [values as text], "bucket": N, "files": data files, "rows": [[...]]}]},
 *       the rows of each bucket in the order its splits read them.
 * </ul>
 */
public class AppendTables {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        Options options = new Options();
        options.set("warehouse", args[1]);
        Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options));
        FileStoreTable table =
                (FileStoreTable) catalog.getTable(Identifier.create(args[2], args[3]));
        Map<String, Object> out;
        switch (args[0]) {
            case "compact":
                out = compact(table.copy(Collections.singletonMap("write-only", "false")), args[4]);
                break;
            case "delete":
                out = delete(table, args[4], JSON.readTree(args[5]));
                break;
            case "layout":
                out = layout(table);
                break;
            default:
                throw new IllegalArgumentException("unknown command " + args[0]);
        }
        out.put("snapshot", table.snapshotManager().latestSnapshotId());
        System.out.println(JSON.writeValueAsString(out));
    }

    private static Map<String, Object> compact(FileStoreTable table, String mode)
            throws Exception {
        long start = System.nanoTime();
        List<Integer> tasks = new ArrayList<>();
        List<CommitMessage> messages = new ArrayList<>();
        boolean unaware = table.options().getOrDefault("bucket", "-1").equals("-1");
        if (unaware) {
            List<UnawareAppendCompactionTask> planned;
            try {
                planned = new UnawareAppendTableCompactionCoordinator(table, false).run();
            } catch (EndOfScanException e) { // 1.0's coordinator when nothing is small
                planned = Collections.emptyList();
            }
            String commitUser = UUID.randomUUID().toString();
            AppendOnlyFileStoreWrite write =
                    (AppendOnlyFileStoreWrite) table.store().newWrite(commitUser);
            try {
                for (UnawareAppendCompactionTask task : planned) {
                    tasks.add(task.compactBefore().size());
                    messages.add(task.doCompact(table, write));
                }
            } finally {
                write.close();
            }
            if (!messages.isEmpty()) {
                try (TableCommitImpl commit = table.newCommit(commitUser)) {
                    commit.commit(messages);
                }
            }
        } else {
            boolean full = mode.equals("full");
            BatchWriteBuilder builder = table.newBatchWriteBuilder();
            try (BatchTableWrite write = builder.newWrite();
                    BatchTableCommit commit = builder.newCommit()) {
                write.withIOManager(IOManager.create(System.getProperty("java.io.tmpdir")));
                for (Object[] bucket : buckets(table).values()) {
                    write.compact((BinaryRow) bucket[0], (int) bucket[1], full);
                }
                messages = write.prepareCommit();
                for (CommitMessage message : messages) {
                    CompactIncrement increment = ((CommitMessageImpl) message).compactIncrement();
                    if (!increment.compactBefore().isEmpty()) {
                        tasks.add(increment.compactBefore().size());
                    }
                }
                commit.commit(messages);
            }
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("tasks", tasks);
        out.put("ms", (System.nanoTime() - start) / 1_000_000);
        out.put("peakRssKb", peakRssKb());
        return out;
    }

    /** This JVM's own peak resident set (Linux's VmHWM), or null elsewhere. */
    private static Long peakRssKb() {
        try {
            for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
                if (line.startsWith("VmHWM:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", ""));
                }
            }
        } catch (IOException e) {
            return null;
        }
        return null;
    }

    private static Map<String, Object> delete(FileStoreTable table, String column, JsonNode values)
            throws Exception {
        Set<Long> doomed = new HashSet<>();
        values.forEach(v -> doomed.add(v.asLong()));
        int field = table.rowType().getFieldIndex(column);
        boolean isInt = table.rowType().getTypeAt(field).getTypeRoot() == DataTypeRoot.INTEGER;
        Long snapshot = table.snapshotManager().latestSnapshotId();
        IndexFileHandler handler = table.store().newIndexFileHandler();
        boolean unaware = table.options().getOrDefault("bucket", "-1").equals("-1");
        Map<List<Object>, AppendDeletionFileMaintainer> maintainers = new LinkedHashMap<>();
        ReadBuilder reader = table.newReadBuilder();
        int touched = 0;
        for (DataSplit split : table.newSnapshotReader().read().dataSplits()) {
            for (DataFileMeta file : split.dataFiles()) {
                DataSplit alone =
                        DataSplit.builder()
                                .withSnapshot(split.snapshotId())
                                .withPartition(split.partition())
                                .withBucket(split.bucket())
                                .withBucketPath(split.bucketPath())
                                .withDataFiles(Collections.singletonList(file))
                                .rawConvertible(true)
                                .build();
                BitmapDeletionVector dv = new BitmapDeletionVector();
                long[] position = {0};
                try (RecordReader<InternalRow> rows = reader.newRead().createReader(alone)) {
                    rows.forEachRemaining(
                            row -> {
                                long value = isInt ? row.getInt(field) : row.getLong(field);
                                if (!row.isNullAt(field) && doomed.contains(value)) {
                                    dv.delete(position[0]);
                                }
                                position[0]++;
                            });
                }
                if (dv.isEmpty()) {
                    continue;
                }
                touched++;
                AppendDeletionFileMaintainer maintainer =
                        maintainers.computeIfAbsent(
                                List.of(split.partition(), split.bucket()),
                                k ->
                                        unaware
                                                ? AppendDeletionFileMaintainer.forUnawareAppend(
                                                        handler, snapshot, split.partition())
                                                : AppendDeletionFileMaintainer.forBucketedAppend(
                                                        handler,
                                                        snapshot,
                                                        split.partition(),
                                                        split.bucket()));
                maintainer.notifyNewDeletionVector(file.fileName(), dv);
            }
        }
        List<CommitMessage> messages = new ArrayList<>();
        for (AppendDeletionFileMaintainer maintainer : maintainers.values()) {
            List<IndexFileMeta> added = new ArrayList<>();
            List<IndexFileMeta> deleted = new ArrayList<>();
            for (IndexManifestEntry entry : maintainer.persist()) {
                (entry.kind() == FileKind.ADD ? added : deleted).add(entry.indexFile());
            }
            messages.add(
                    new CommitMessageImpl(
                            maintainer.getPartition(),
                            maintainer.getBucket(),
                            DataIncrement.emptyIncrement(),
                            CompactIncrement.emptyIncrement(),
                            new IndexIncrement(added, deleted)));
        }
        try (BatchTableCommit commit = table.newBatchWriteBuilder().newCommit()) {
            commit.commit(messages);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("files", touched);
        return out;
    }

    private static Map<String, Object> layout(FileStoreTable table) throws Exception {
        Map<List<Object>, List<DataSplit>> grouped = new LinkedHashMap<>();
        ReadBuilder builder = table.newReadBuilder();
        for (Split split : builder.newScan().plan().splits()) {
            DataSplit data = (DataSplit) split;
            grouped.computeIfAbsent(List.of(data.partition(), data.bucket()), k -> new ArrayList<>())
                    .add(data);
        }
        List<String> keys = table.partitionKeys();
        List<Map<String, Object>> buckets = new ArrayList<>();
        for (List<DataSplit> splits : grouped.values()) {
            DataSplit first = splits.get(0);
            List<String> partition = new ArrayList<>();
            InternalRow.FieldGetter[] getters = partitionGetters(table);
            for (int i = 0; i < keys.size(); i++) {
                Object value = getters[i].getFieldOrNull(first.partition());
                partition.add(value == null ? null : value.toString());
            }
            int files = 0;
            for (DataSplit split : splits) {
                files += split.dataFiles().size();
            }
            Map<String, Object> bucket = new LinkedHashMap<>();
            bucket.put("partition", partition);
            bucket.put("bucket", first.bucket());
            bucket.put("files", files);
            bucket.put("rows", PaimonRead.rows(table, builder, new ArrayList<>(splits), false));
            buckets.add(bucket);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("buckets", buckets);
        return out;
    }

    private static InternalRow.FieldGetter[] partitionGetters(FileStoreTable table) {
        List<String> keys = table.partitionKeys();
        InternalRow.FieldGetter[] getters = new InternalRow.FieldGetter[keys.size()];
        for (int i = 0; i < keys.size(); i++) {
            getters[i] =
                    InternalRow.createFieldGetter(
                            table.rowType().getTypeAt(table.rowType().getFieldIndex(keys.get(i))),
                            i);
        }
        return getters;
    }

    /** Every (partition, bucket) holding files in the latest snapshot. */
    private static Map<List<Object>, Object[]> buckets(FileStoreTable table) {
        Map<List<Object>, Object[]> found = new LinkedHashMap<>();
        for (ManifestEntry entry : table.store().newScan().plan().files()) {
            found.putIfAbsent(
                    List.of(entry.partition(), entry.bucket()),
                    new Object[] {entry.partition(), entry.bucket()});
        }
        return found;
    }
}
