/*
 * Paimon's own FileStoreTable.rollbackTo on a table, for the rollback differential
 * (tests/maintenance/test_rollback_java.py).
 *
 * Usage: PaimonRollback WAREHOUSE DATABASE TABLE (snapshot ID | tag NAME)
 */

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.options.Options;
import org.apache.paimon.table.FileStoreTable;

public class PaimonRollback {
    public static void main(String[] args) throws Exception {
        Options options = new Options();
        options.set("warehouse", args[0]);
        Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options));
        FileStoreTable table =
                (FileStoreTable) catalog.getTable(Identifier.create(args[1], args[2]));
        if (args[3].equals("snapshot")) {
            table.rollbackTo(Long.parseLong(args[4]));
        } else {
            table.rollbackTo(args[4]);
        }
        System.out.println("ok");
    }
}
