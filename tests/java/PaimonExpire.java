/*
 * Paimon's own snapshot or changelog expiry (FileStoreTable.newExpireSnapshots,
 * newExpireChangelog) on a table, for the append table differential
 * (tests/java/test_java_append_maintenance.py).
 *
 * Usage: PaimonExpire WAREHOUSE DATABASE TABLE (snapshots | changelogs) SNAPSHOT_RETAIN_MIN
 * CHANGELOG_RETAIN_MIN. Both retain at most Integer.MAX_VALUE, no time, at most 1000 deletions
 * a run (a changelog retained longer than snapshots decouples them); prints the number expired.
 */

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.options.ExpireConfig;
import org.apache.paimon.options.Options;
import org.apache.paimon.table.ExpireSnapshots;
import org.apache.paimon.table.FileStoreTable;

import java.time.Duration;

public class PaimonExpire {
    public static void main(String[] args) throws Exception {
        Options options = new Options();
        options.set("warehouse", args[0]);
        Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options));
        FileStoreTable table =
                (FileStoreTable) catalog.getTable(Identifier.create(args[1], args[2]));
        ExpireConfig config =
                ExpireConfig.builder()
                        .snapshotRetainMin(Integer.parseInt(args[4]))
                        .snapshotRetainMax(Integer.MAX_VALUE)
                        .snapshotTimeRetain(Duration.ZERO)
                        .snapshotMaxDeletes(1000)
                        .changelogRetainMin(Integer.parseInt(args[5]))
                        .changelogRetainMax(Integer.MAX_VALUE)
                        .changelogTimeRetain(Duration.ZERO)
                        .changelogMaxDeletes(1000)
                        .build();
        ExpireSnapshots expire =
                args[3].equals("snapshots")
                        ? table.newExpireSnapshots()
                        : table.newExpireChangelog();
        System.out.println(expire.config(config).expire());
    }
}
