"""The warehouse as a Dagster resource: where tables live and how to reach them."""

from __future__ import annotations

from dagster import ConfigurableResource
from pydantic import Field
from pypaimon.catalog.catalog import Catalog
from pypaimon.table.file_store_table import FileStoreTable

from dagster_paimon.storage.s3 import S3Settings
from dagster_paimon.table import TableRef, TableSpec, create_table, open_catalog, open_table


class PaimonWarehouse(ConfigurableResource):
    """A local or S3 Paimon warehouse; S3 credentials default to boto3's credential chain."""

    uri: str = Field(description="Warehouse location: a local path or s3://bucket/prefix.")
    s3_endpoint: str | None = Field(
        default=None, description="Endpoint of an S3-compatible store (MinIO, moto, ...)."
    )
    s3_region: str | None = Field(default=None, description="S3 region.")
    s3_access_key_id: str | None = Field(default=None, description="Explicit access key id.")
    s3_secret_access_key: str | None = Field(default=None, description="Explicit secret key.")
    s3_session_token: str | None = Field(default=None, description="Explicit session token.")
    s3_path_style: bool = Field(
        default=False,
        description="Address buckets by path (endpoint/bucket/key), as MinIO and most "
        "self-hosted stores need; AWS uses virtual-hosted buckets.",
    )
    catalog_options: dict[str, str] = Field(
        default_factory=dict, description="Extra pypaimon catalog options, passed through."
    )

    def s3_settings(self) -> S3Settings:
        """The S3 settings this resource was given; unset ones fall back to boto3's chain."""
        return S3Settings(
            endpoint=self.s3_endpoint,
            region=self.s3_region,
            access_key_id=self.s3_access_key_id,
            secret_access_key=self.s3_secret_access_key,
            session_token=self.s3_session_token,
            path_style=self.s3_path_style,
        )

    def paimon_options(self) -> dict[str, str]:
        """Catalog options for pypaimon: the S3 settings that are set, then the extras."""
        return {**self.s3_settings().catalog_options(), **self.catalog_options}

    def open_table(self, identifier: str) -> FileStoreTable:
        """An existing table, or a typed error naming what is missing."""
        return open_table(self.uri, identifier, self.paimon_options())

    def open_catalog(self) -> Catalog:
        """The warehouse's catalog, checked once: open many tables through it with get_table."""
        return open_catalog(self.uri, self.paimon_options())

    def create_table(self, spec: TableSpec) -> FileStoreTable:
        """Create the table if absent; an existing one must match the spec."""
        return create_table(self.uri, spec, self.paimon_options())

    def table_ref(self, identifier: str) -> TableRef:
        """A picklable handle executors use to reopen the table."""
        return TableRef.of(self.uri, identifier, self.paimon_options())
