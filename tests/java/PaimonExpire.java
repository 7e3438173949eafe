/*
 * Paimon's own snapshot expiry (FileStoreTable.newExpireSnapshots) on a table, for the append
 * table differential (tests/java/test_java_append.py).
 *
 * Usage: PaimonExpire WAREHOUSE DATABASE TABLE RETAIN_MIN RETAIN_MAX
 * Expires with snapshot.time-retained 0 and at most 1000 deletions; prints the number expired.
 */

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.options.ExpireConfig;
import org.apache.paimon.options.Options;
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
                        .snapshotRetainMin(Integer.parseInt(args[3]))
                        .snapshotRetainMax(Integer.parseInt(args[4]))
                        .snapshotTimeRetain(Duration.ZERO)
                        .snapshotMaxDeletes(1000)
                        .build();
        System.out.println(table.newExpireSnapshots().config(config).expire());
    }
}
