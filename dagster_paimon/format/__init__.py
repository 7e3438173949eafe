"""The one seam to Paimon's format: the only package that imports pypaimon.

Everything else in dagster-paimon takes the names it needs from here (tables, snapshots,
manifest entries, data files, schemas, file I/O, catalogs), so a pypaimon release that moves or
changes a class is absorbed in this package, and `tests/test_layering.py` keeps it that way.
"""
