"""The warehouse as a Dagster resource: where tables live and how to reach them."""

from __future__ import annotations

from typing import Any

from dagster import ConfigurableResource, EnvVar
from pydantic import Field, field_validator

from dagster_paimon.errors import InvalidOptionError
from dagster_paimon.format.catalog import Catalog
from dagster_paimon.format.table import FileStoreTable
from dagster_paimon.paimon_table import PaimonTable
from dagster_paimon.redaction import is_secret, masked, masked_options
from dagster_paimon.storage.s3 import S3Settings
from dagster_paimon.table import TableRef, TableSpec, create_table, open_catalog, open_table


def _resolved(value: str | None) -> str | None:
    """A field's value; an EnvVar is read here when the resource is used outside a run."""
    return value.get_value() if isinstance(value, EnvVar) else value


class PaimonWarehouse(ConfigurableResource):
    """A local or S3 Paimon warehouse; S3 credentials default to boto3's credential chain.

    Give explicit keys as `dagster.EnvVar("...")`: Dagster reads the variable when a run starts
    and its UI shows the variable's name, where a plain string would be shown in clear.

    Raises InvalidOptionError (a secret among catalog_options).
    """

    uri: str = Field(description="Warehouse location: a local path or s3://bucket/prefix.")
    s3_endpoint: str | None = Field(
        default=None, description="Endpoint of an S3-compatible store (MinIO, moto, ...)."
    )
    s3_region: str | None = Field(default=None, description="S3 region.")
    s3_access_key_id: str | None = Field(
        default=None, description='Explicit access key id, as EnvVar("...").'
    )
    s3_secret_access_key: str | None = Field(
        default=None,
        description='Explicit secret key: always EnvVar("..."), a plain string shows in the UI.',
    )
    s3_session_token: str | None = Field(
        default=None,
        description='Explicit session token: always EnvVar("..."), a plain string shows in the UI.',
    )
    s3_path_style: bool = Field(
        default=False,
        description="Address buckets by path (endpoint/bucket/key), as MinIO and most "
        "self-hosted stores need; AWS uses virtual-hosted buckets.",
    )
    catalog_options: dict[str, str] = Field(
        default_factory=dict,
        description="Extra pypaimon catalog options, passed through; no secrets (they would "
        "show in the UI): keys go in the s3_* fields as EnvVar.",
    )

    @field_validator("catalog_options")
    @classmethod
    def _no_secret_options(cls, options: dict[str, str]) -> dict[str, str]:
        """Secrets among the pass-through options would be shown in the UI in clear."""
        secret = sorted(name for name in options if is_secret(name))
        if secret:
            raise InvalidOptionError(
                f"catalog options {secret} hold secrets, which the Dagster UI would show in "
                "clear: give keys as s3_access_key_id, s3_secret_access_key and s3_session_token "
                "= dagster.EnvVar(...), or leave them to boto3's credential chain"
            )
        return options

    def __repr_args__(self) -> Any:
        """Fields as pydantic shows them, secrets masked."""
        for name, value in super().__repr_args__():
            if name == "catalog_options":
                yield name, dict(masked_options(value.items()))
            else:
                yield name, masked(name or "", value)

    def s3_settings(self) -> S3Settings:
        """The S3 settings this resource was given; unset ones fall back to boto3's chain."""
        return S3Settings(
            endpoint=_resolved(self.s3_endpoint),
            region=_resolved(self.s3_region),
            access_key_id=_resolved(self.s3_access_key_id),
            secret_access_key=_resolved(self.s3_secret_access_key),
            session_token=_resolved(self.s3_session_token),
            path_style=self.s3_path_style,
        )

    def paimon_options(self) -> dict[str, str]:
        """Catalog options for pypaimon: the S3 settings that are set, then the extras."""
        return {**self.s3_settings().catalog_options(), **self.catalog_options}

    def open_table(self, identifier: str) -> FileStoreTable:
        """An existing table, or a typed error naming what is missing."""
        return open_table(self.uri, identifier, self.paimon_options())

    def table(self, identifier: str) -> PaimonTable:
        """An existing table behind the library's front door, for the operations' ops."""
        return PaimonTable.open(self.uri, identifier, self.paimon_options())

    def open_catalog(self) -> Catalog:
        """The warehouse's catalog, checked once: open many tables through it with get_table."""
        return open_catalog(self.uri, self.paimon_options())

    def create_table(self, spec: TableSpec) -> FileStoreTable:
        """Create the table if absent; an existing one must match the spec."""
        return create_table(self.uri, spec, self.paimon_options())

    def table_ref(self, identifier: str) -> TableRef:
        """A picklable handle executors use to reopen the table."""
        return TableRef.of(self.uri, identifier, self.paimon_options())
