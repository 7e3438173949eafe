import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.fileindex.FileIndexPredicate;
import org.apache.paimon.fs.Path;
import org.apache.paimon.fs.local.LocalFileIO;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.options.Options;
import org.apache.paimon.predicate.Equal;
import org.apache.paimon.predicate.In;
import org.apache.paimon.predicate.IsNotNull;
import org.apache.paimon.predicate.IsNull;
import org.apache.paimon.predicate.LeafFunction;
import org.apache.paimon.predicate.LeafPredicate;
import org.apache.paimon.predicate.NotEqual;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.RowType;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Paimon's own data-file indexes (file-index.*): tables its writer indexes, and its index reader's
 * verdicts on index blobs.
 *
 * <p>"write WAREHOUSE": each stdin line {"table": T, "columns": [[name, SQL type], ...],
 * "options": {...}, "rows": [[value, ...], ...]} creates append table db.T and commits the rows in
 * one batch commit; prints one line per data file: {"table", "bucket", "file", "embedded" (hex or
 * null), "extra": [...]}.
 *
 * <p>"test": each stdin line {"columns": [...], "index": hex, or "path": file, "predicates":
 * [[column, "eq"|"notEq"|"isNull"|"isNotNull"|"in", value], ...]} prints a JSON array: whether
 * FileIndexPredicate.testPredicate keeps the file for each predicate. A column "m[k]" names the
 * index of key k of map column m: its predicate is on the map's value type, named "m[k]".
 *
 * <p>Values: numbers and strings as JSON; FLOAT/DOUBLE also "NaN", "Infinity", "-0.0"; DATE days,
 * TIME millis of day; TIMESTAMP [epoch millis, nanos of milli]; DECIMAL the unscaled long;
 * BINARY/VARBINARY hex; MAP&lt;K, V&gt; a list of [key, value] pairs.
 */
public class FileIndexJava {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        List<JsonNode> lines = new ArrayList<>();
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (!line.isBlank()) {
                lines.add(JSON.readTree(line));
            }
        }
        if (args[0].equals("write")) {
            Options options = new Options();
            options.set("warehouse", args[1]);
            Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options));
            catalog.createDatabase("db", true);
            for (JsonNode spec : lines) {
                write(catalog, spec);
            }
        } else {
            for (JsonNode spec : lines) {
                test(spec);
            }
        }
    }

    private static RowType rowType(JsonNode columns) {
        List<DataField> fields = new ArrayList<>();
        int id = 0;
        for (JsonNode column : columns) {
            fields.add(new DataField(id++, column.get(0).asText(), type(column.get(1).asText())));
        }
        return new RowType(fields);
    }

    /** An atomic SQL type, or MAP<K, V> of two. */
    private static DataType type(String text) {
        if (text.startsWith("MAP<") && text.endsWith(">")) {
            String inner = text.substring(4, text.length() - 1);
            int comma = inner.indexOf(',');
            return DataTypes.MAP(
                    type(inner.substring(0, comma).trim()), type(inner.substring(comma + 1).trim()));
        }
        return DataTypeJsonParser.parseAtomicTypeSQLString(text);
    }

    private static void write(Catalog catalog, JsonNode spec) throws Exception {
        RowType type = rowType(spec.get("columns"));
        Schema.Builder builder = Schema.newBuilder();
        type.getFields().forEach(f -> builder.column(f.name(), f.type()));
        Map<String, String> opts = new LinkedHashMap<>();
        spec.get("options").fields().forEachRemaining(e -> opts.put(e.getKey(), e.getValue().asText()));
        builder.options(opts);
        String name = spec.get("table").asText();
        Identifier id = Identifier.create("db", name);
        catalog.createTable(id, builder.build(), false);
        Table table = catalog.getTable(id);
        BatchWriteBuilder writeBuilder = table.newBatchWriteBuilder();
        try (BatchTableWrite write = writeBuilder.newWrite();
                BatchTableCommit commit = writeBuilder.newCommit()) {
            for (JsonNode values : spec.get("rows")) {
                GenericRow row = new GenericRow(type.getFieldCount());
                for (int i = 0; i < type.getFieldCount(); i++) {
                    row.setField(i, value(type.getTypeAt(i), values.get(i)));
                }
                write.write(row);
            }
            commit.commit(write.prepareCommit());
        }
        for (Split split : table.newReadBuilder().newScan().plan().splits()) {
            DataSplit data = (DataSplit) split;
            for (DataFileMeta file : data.dataFiles()) {
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("table", name);
                out.put("bucket", data.bucket());
                out.put("file", file.fileName());
                byte[] embedded = file.embeddedIndex();
                out.put("embedded", embedded == null ? null : HexFormat.of().formatHex(embedded));
                out.put("extra", file.extraFiles());
                System.out.println(JSON.writeValueAsString(out));
            }
        }
    }

    private static Object value(DataType type, JsonNode value) {
        if (value == null || value.isNull()) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case TINYINT:
                return (byte) value.asInt();
            case SMALLINT:
                return (short) value.asInt();
            case INTEGER:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
                return value.asInt();
            case BIGINT:
                return value.asLong();
            case FLOAT:
                return (float) number(value);
            case DOUBLE:
                return number(value);
            case BOOLEAN:
                return value.asBoolean();
            case DECIMAL:
                DecimalType decimal = (DecimalType) type;
                return Decimal.fromUnscaledLong(
                        value.asLong(), decimal.getPrecision(), decimal.getScale());
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return Timestamp.fromEpochMillis(value.get(0).asLong(), value.get(1).asInt());
            case BINARY:
            case VARBINARY:
                return HexFormat.of().parseHex(value.asText());
            case MAP:
                MapType map = (MapType) type;
                Map<Object, Object> entries = new LinkedHashMap<>();
                for (JsonNode entry : value) {
                    entries.put(
                            value(map.getKeyType(), entry.get(0)),
                            value(map.getValueType(), entry.get(1)));
                }
                return new GenericMap(entries);
            default:
                return BinaryString.fromString(value.asText());
        }
    }

    private static double number(JsonNode value) {
        return value.isTextual() ? Double.parseDouble(value.asText()) : value.asDouble();
    }

    private static void test(JsonNode spec) throws Exception {
        RowType type = rowType(spec.get("columns"));
        PredicateBuilder builder = new PredicateBuilder(type);
        List<Boolean> kept = new ArrayList<>();
        FileIndexPredicate index =
                spec.has("index")
                        ? new FileIndexPredicate(
                                HexFormat.of().parseHex(spec.get("index").asText()), type)
                        : new FileIndexPredicate(
                                new Path(spec.get("path").asText()), LocalFileIO.create(), type);
        try (FileIndexPredicate closing = index) {
            for (JsonNode p : spec.get("predicates")) {
                String name = p.get(0).asText();
                String op = p.get(1).asText();
                if (builder.indexOf(name) < 0) {
                    kept.add(closing.testPredicate(mapKeyPredicate(builder, type, name, op, p)));
                    continue;
                }
                int field = builder.indexOf(name);
                DataType fieldType = type.getTypeAt(field);
                Predicate predicate;
                switch (op) {
                    case "isNull":
                        predicate = builder.isNull(field);
                        break;
                    case "isNotNull":
                        predicate = builder.isNotNull(field);
                        break;
                    case "notEq":
                        predicate = builder.notEqual(field, value(fieldType, p.get(2)));
                        break;
                    case "in":
                        List<Object> literals = new ArrayList<>();
                        p.get(2).forEach(v -> literals.add(value(fieldType, v)));
                        predicate = builder.in(field, literals);
                        break;
                    default:
                        predicate = builder.equal(field, value(fieldType, p.get(2)));
                }
                kept.add(closing.testPredicate(predicate));
            }
        }
        System.out.println(JSON.writeValueAsString(kept));
    }

    /** A predicate on the index of key k of map column m, named "m[k]" as the index is. */
    private static Predicate mapKeyPredicate(
            PredicateBuilder builder, RowType type, String name, String op, JsonNode p) {
        int field = builder.indexOf(name.substring(0, name.indexOf('[')));
        DataType valueType = ((MapType) type.getTypeAt(field)).getValueType();
        LeafFunction function;
        List<Object> literals = new ArrayList<>();
        switch (op) {
            case "isNull":
                function = IsNull.INSTANCE;
                break;
            case "isNotNull":
                function = IsNotNull.INSTANCE;
                break;
            case "notEq":
                function = NotEqual.INSTANCE;
                literals.add(value(valueType, p.get(2)));
                break;
            case "in":
                function = In.INSTANCE;
                p.get(2).forEach(v -> literals.add(value(valueType, v)));
                break;
            default:
                function = Equal.INSTANCE;
                literals.add(value(valueType, p.get(2)));
        }
        return new LeafPredicate(function, valueType, field, name, literals);
    }
}
