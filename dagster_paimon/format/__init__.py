"""The one seam to Paimon's format: the only package that imports pypaimon.

Everything else in dagster-paimon takes the names it needs from here (tables, snapshots,
manifest entries, data files, schemas, file I/O, catalogs), so a pypaimon release that moves or
changes a class is absorbed in this package, and `tests/test_layering.py` keeps it that way.

Supported pypaimon: `>=2.1.0,<2.2` (pyproject.toml), locked and tested at 2.1.0. A difference
between two supported releases is absorbed here, in a compat function or a guarded import whose
comment names the releases; none is needed while 2.1.0 is the only one. pypaimon 2.0 (and so 1.4
and older) is below the floor: beyond moved names, it has neither Java's partition directories
(`canonical_partition`) nor bucket-local index paths, sized manifest reads or the snapshot's
`writerVersion`, which callers of this package use on pypaimon's own objects, and its writer
ignores `rowkind.field` (pyproject.toml's comment has what was tried). `tests/format/` checks the
range, the lock and the installed version, and that every name exported here resolves; `make test`
reruns it with the seam's selection under the range's floor whenever the floor is not the locked
version (CONTRIBUTING.md, "Supported pypaimon versions").
"""
