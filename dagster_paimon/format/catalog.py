"""How a warehouse is opened: pypaimon's catalog, its options and exceptions, and its version."""

from __future__ import annotations

from pypaimon import CatalogFactory, Schema
from pypaimon.build_info import full_version
from pypaimon.catalog.catalog import Catalog
from pypaimon.catalog.catalog_exception import DatabaseNotExistException, TableNotExistException
from pypaimon.common.options import Options, config
from pypaimon.common.options.config_option import ConfigOption

__all__ = [
    "Catalog",
    "CatalogFactory",
    "ConfigOption",
    "DatabaseNotExistException",
    "Options",
    "Schema",
    "TableNotExistException",
    "config",
    "full_version",
]
