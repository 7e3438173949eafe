package org.apache.paimon.operation;

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.options.Options;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.table.FileStoreTable;

import java.time.LocalDateTime;
import java.util.List;
import java.util.Map;

/**
 * Paimon's own partition expiry (PartitionExpire, as a commit runs it) of one table at a fixed
 * local time: args warehouse database table now (ISO local date-time). Prints one JSON line,
 * {"expired": [{key: value, ...}, ...], "commitKind": kind of the latest snapshot}; "expired" is
 * null when the table sets no partition.expiration-time. It sits in Paimon's package to reach
 * the clock-taking expire(now, id) that Paimon's own tests use.
 */
public class PartitionExpireRun {
    public static void main(String[] args) throws Exception {
        Options options = new Options();
        options.set("warehouse", args[0]);
        Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options));
        FileStoreTable table =
                (FileStoreTable) catalog.getTable(Identifier.create(args[1], args[2]));
        PartitionExpire expire = table.store().newPartitionExpire("partition-expire-java");
        List<Map<String, String>> expired = null;
        if (expire != null) {
            expire.setLastCheck(LocalDateTime.of(1, 1, 1, 0, 0));
            expired = expire.expire(LocalDateTime.parse(args[3]), Long.MAX_VALUE - 1);
        }
        Map<String, Object> out = new java.util.LinkedHashMap<>();
        out.put("expired", expired);
        out.put(
                "commitKind",
                table.snapshotManager().latestSnapshot() == null
                        ? null
                        : table.snapshotManager().latestSnapshot().commitKind().name());
        System.out.println(new ObjectMapper().writeValueAsString(out));
    }
}
