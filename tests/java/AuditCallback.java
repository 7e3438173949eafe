import org.apache.paimon.Snapshot;
import org.apache.paimon.manifest.ManifestCommittable;
import org.apache.paimon.manifest.ManifestEntry;
import org.apache.paimon.table.sink.CommitCallback;

import java.util.List;

/** A user's commit callback, as a table's 'commit.callbacks' names one: it does nothing. */
public class AuditCallback implements CommitCallback {
    @Override
    public void call(List<ManifestEntry> committedEntries, Snapshot snapshot) {}

    @Override
    public void retry(ManifestCommittable committable) {}

    @Override
    public void close() {}
}
