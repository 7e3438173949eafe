import com.google.common.hash.Hashing;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import org.apache.hadoop.fs.Path;

/**
 * Paimon's external data file paths, worked out with the libraries Paimon builds them from:
 * Guava's murmur3_32 (EntropyInjectExternalPathProvider.computeHash, Paimon's shaded Guava) and
 * Hadoop's Path (Paimon's org.apache.paimon.fs.Path has the same parsing and toString).
 *
 * <p>Each stdin line is "root TAB relative bucket path TAB file name TAB entropy (true/false)";
 * each stdout line the path Java's provider returns for it, as DataFileMeta records it.
 */
public class ExternalPathOracle {

    static String entropyDirs(String fileName) {
        int hash = Hashing.murmur3_32().hashString(fileName, StandardCharsets.UTF_8).asInt();
        String bits = Integer.toBinaryString(hash | Integer.MIN_VALUE);
        String low = bits.substring(bits.length() - 20);
        return low.substring(0, 4) + "/" + low.substring(4, 8) + "/" + low.substring(8, 12)
                + "/" + low.substring(12);
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split("\t", -1);
            Path root = new Path(f[0].trim());
            Path relative = new Path(f[1]);
            String name = f[2];
            Path path;
            if (Boolean.parseBoolean(f[3])) {
                path = new Path(root, new Path(relative, entropyDirs(name) + "/" + name));
            } else {
                path = new Path(new Path(root, relative), name);
            }
            System.out.println(path);
        }
    }
}
