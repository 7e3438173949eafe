import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.types.DataField;

import java.util.ArrayList;
import java.util.List;

/** Paimon's own batch read of a table's latest snapshot: one JSON array per row on stdout. */
public class PaimonRead {
    public static void main(String[] args) throws Exception {
        Options options = new Options();
        options.set("warehouse", args[0]);
        Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options));
        Table table = catalog.getTable(Identifier.create(args[1], args[2]));
        List<DataField> fields = table.rowType().getFields();
        InternalRow.FieldGetter[] getters = new InternalRow.FieldGetter[fields.size()];
        for (int i = 0; i < getters.length; i++) {
            getters[i] = InternalRow.createFieldGetter(fields.get(i).type(), i);
        }
        ReadBuilder builder = table.newReadBuilder();
        RecordReader<InternalRow> reader =
                builder.newRead().createReader(builder.newScan().plan().splits());
        ObjectMapper json = new ObjectMapper();
        StringBuilder out = new StringBuilder();
        reader.forEachRemaining(
                row -> {
                    List<Object> values = new ArrayList<>();
                    for (InternalRow.FieldGetter getter : getters) {
                        Object value = getter.getFieldOrNull(row);
                        boolean plain =
                                value == null || value instanceof Number || value instanceof Boolean;
                        values.add(plain ? value : value.toString());
                    }
                    try {
                        out.append(json.writeValueAsString(values)).append('\n');
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                });
        System.out.print(out);
    }
}
