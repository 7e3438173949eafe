/*
 * Paimon's own ConsumerManager on a table, for the consumer differential
 * (tests/java/test_java_consumers.py): expire by a cutoff (epoch milliseconds, turned into the
 * LocalDateTime Java's commit path compares file modification times with), or reset one
 * consumer; then prints every consumer as {"id": nextSnapshot}.
 *
 * Usage: PaimonConsumers WAREHOUSE DATABASE TABLE (expire CUTOFF_MS | reset ID NEXT | list)
 */

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.consumer.Consumer;
import org.apache.paimon.consumer.ConsumerManager;
import org.apache.paimon.options.Options;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.utils.DateTimeUtils;

import java.util.TreeMap;

public class PaimonConsumers {
    public static void main(String[] args) throws Exception {
        Options options = new Options();
        options.set("warehouse", args[0]);
        Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options));
        FileStoreTable table =
                (FileStoreTable) catalog.getTable(Identifier.create(args[1], args[2]));
        ConsumerManager manager = new ConsumerManager(table.fileIO(), table.location());
        String action = args.length > 3 ? args[3] : "list";
        if (action.equals("expire")) {
            manager.expire(DateTimeUtils.toLocalDateTime(Long.parseLong(args[4])));
        } else if (action.equals("reset")) {
            manager.resetConsumer(args[4], new Consumer(Long.parseLong(args[5])));
        }
        TreeMap<String, Long> all = new TreeMap<>(manager.consumers());
        System.out.println(new ObjectMapper().writeValueAsString(all));
    }
}
