"""PaimonWarehouse: keys as EnvVars (plain values still work), masked, never among extra options."""

from __future__ import annotations

import pytest
from dagster import EnvVar

from dagster_paimon.dagster.resources import PaimonWarehouse
from dagster_paimon.errors import InvalidOptionError
from dagster_paimon.storage.s3 import S3Settings

SECRET = "s3cr3t-value"
TOKEN = "t0k3n-value"


def test_env_var_keys_are_read_when_used_outside_a_run(monkeypatch):
    monkeypatch.setenv("TEST_SECRET", SECRET)
    warehouse = PaimonWarehouse(
        uri="s3://b/w", s3_access_key_id="AKIA", s3_secret_access_key=EnvVar("TEST_SECRET")
    )
    assert warehouse.s3_settings() == S3Settings(access_key_id="AKIA", secret_access_key=SECRET)
    assert warehouse.process_config_and_initialize().s3_secret_access_key == SECRET


def test_plain_keys_still_work_and_are_masked_wherever_shown():
    warehouse = PaimonWarehouse(
        uri="s3://b/w",
        s3_access_key_id="AKIA",
        s3_secret_access_key=SECRET,
        s3_session_token=TOKEN,
        catalog_options={"fs.s3.connect-timeout": "5s"},
    )
    assert warehouse.paimon_options()["fs.s3.accessKeySecret"] == SECRET
    for shown in (repr(warehouse), str(warehouse), repr(warehouse.s3_settings())):
        assert SECRET not in shown and TOKEN not in shown and "AKIA" in shown
    assert "s3_secret_access_key='****'" in repr(warehouse)


def test_secrets_among_the_extra_catalog_options_are_refused_by_name_only():
    with pytest.raises(InvalidOptionError) as refused:
        PaimonWarehouse(uri="s3://b/w", catalog_options={"s3.secret-key": SECRET})
    message = str(refused.value)
    assert "s3.secret-key" in message and "EnvVar" in message and SECRET not in message
