import org.apache.paimon.Snapshot;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.options.Options;
import org.apache.paimon.table.FileStoreTable;

import java.util.List;
import java.util.Map;

/**
 * Paimon's own tag handling on an existing table: args WAREHOUSE DATABASE TABLE [delete NAME].
 * Runs the table's TagAutoManager once (what a writer does after a commit), or with "delete NAME"
 * Java's deleteTag instead, then prints each tag as "NAME\tSNAPSHOT_ID", one a line.
 */
public class TagAuto {
    public static void main(String[] args) throws Exception {
        Options options = new Options();
        options.set("warehouse", args[0]);
        FileStoreTable table =
                (FileStoreTable)
                        CatalogFactory.createCatalog(CatalogContext.create(options))
                                .getTable(Identifier.create(args[1], args[2]));
        if (args.length > 4 && args[3].equals("delete")) {
            table.deleteTag(args[4]);
        } else {
            table.store().newTagCreationManager().run();
        }
        for (Map.Entry<Snapshot, List<String>> e : table.tagManager().tags().entrySet()) {
            for (String name : e.getValue()) {
                System.out.println(name + "\t" + e.getKey().id());
            }
        }
    }
}
