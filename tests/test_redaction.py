"""Which names hold secrets, and the masked form settings show them in."""

from __future__ import annotations

import pytest

from dagster_paimon.redaction import MASK, is_secret, masked, masked_options
from dagster_paimon.storage.s3 import (
    ACCESS_KEY_ID,
    ENDPOINT,
    PATH_STYLE,
    REGION,
    SECRET_ACCESS_KEY,
    SESSION_TOKEN,
)
from dagster_paimon.storage.s3 import _spellings as spellings


@pytest.mark.parametrize("option", [SECRET_ACCESS_KEY, SESSION_TOKEN])
def test_every_spelling_pypaimon_reads_of_a_secret_is_one(option):
    assert all(is_secret(name) for name in spellings(option))


@pytest.mark.parametrize("option", [ENDPOINT, REGION, ACCESS_KEY_ID, PATH_STYLE])
def test_endpoint_region_key_id_and_path_style_are_not(option):
    assert not any(is_secret(name) for name in spellings(option))


def test_other_stores_secrets_and_field_names_are_secrets_too():
    for name in ("dlf.access-key-secret", "token", "jdbc.password", "secret_access_key"):
        assert is_secret(name)


def test_only_set_secrets_are_masked():
    assert masked("secret_access_key", "s3cr3t") == MASK
    assert masked("secret_access_key", None) is None
    assert masked("region", "eu-west-1") == "eu-west-1"
    options = {"fs.s3.region": "r", "fs.s3.securityToken": "t0k3n", "fs.s3.secret-key": "s"}
    assert masked_options(options.items()) == (
        ("fs.s3.region", "r"),
        ("fs.s3.securityToken", MASK),
        ("fs.s3.secret-key", MASK),
    )
