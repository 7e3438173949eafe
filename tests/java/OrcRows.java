import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.paimon.format.fs.HadoopReadOnlyFileSystem;
import org.apache.paimon.fs.local.LocalFileIO;
import org.apache.paimon.shade.org.apache.hadoop.hive.ql.exec.vector.ColumnVector;
import org.apache.paimon.shade.org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatch;
import org.apache.paimon.shade.org.apache.orc.OrcFile;
import org.apache.paimon.shade.org.apache.orc.Reader;
import org.apache.paimon.shade.org.apache.orc.RecordReader;

/**
 * The ORC reader Paimon bundles, on one local file: every row in order, then the row after
 * seekToRow(r) for each r given (a seek positions every column's streams from the row index).
 * Prints one tab-separated line per row: "all" or "seek", the row number, each value or null.
 */
public class OrcRows {
    static void print(String tag, long row, VectorizedRowBatch batch, int i) {
        StringBuilder line = new StringBuilder(tag).append('\t').append(row);
        for (ColumnVector column : batch.cols) {
            int at = column.isRepeating ? 0 : i;
            line.append('\t');
            if (!column.noNulls && column.isNull[at]) {
                line.append("null");
            } else {
                column.stringifyValue(line, at);
            }
        }
        System.out.println(line);
    }

    public static void main(String[] args) throws Exception {
        OrcFile.ReaderOptions options =
                OrcFile.readerOptions(new Configuration())
                        .filesystem(new HadoopReadOnlyFileSystem(LocalFileIO.create()));
        Reader reader = OrcFile.createReader(new Path("file:" + args[0]), options);
        RecordReader rows = reader.rows(new Reader.Options());
        VectorizedRowBatch batch = reader.getSchema().createRowBatch(1000);
        long row = 0;
        while (rows.nextBatch(batch)) {
            for (int i = 0; i < batch.size; i++) {
                print("all", row++, batch, i);
            }
        }
        VectorizedRowBatch one = reader.getSchema().createRowBatch(1);
        for (int k = 1; k < args.length; k++) {
            long at = Long.parseLong(args[k]);
            rows.seekToRow(at);
            if (rows.nextBatch(one)) {
                print("seek", at, one, 0);
            }
        }
        rows.close();
    }
}
