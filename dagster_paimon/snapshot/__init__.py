"""Reading a table's snapshots: resolving them, their live entries and sorted runs, and the
metadata graph (snapshots, tags, branches, changelogs, consumers) maintenance walks. Commit, lsm
and maintenance all read through here."""
