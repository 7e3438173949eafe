"""Spark servers for the remote tests, each started once per run and stopped at its end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.spark.cluster import Cluster, connect_server, standalone_cluster


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory) -> Iterator[Cluster]:
    """A standalone master and two one-core workers on loopback."""
    with standalone_cluster(tmp_path_factory.mktemp("spark-cluster")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def spark_connect_event_log(tmp_path_factory) -> Path:
    """Where the Connect server writes its event log (what its UI and history server show)."""
    return tmp_path_factory.mktemp("spark-connect-events")


@pytest.fixture(scope="session")
def spark_connect(tmp_path_factory, spark_connect_event_log) -> Iterator[str]:
    """The sc:// URL of a Spark Connect server on loopback."""
    root = tmp_path_factory.mktemp("spark-connect")
    with connect_server(root, spark_connect_event_log) as url:
        yield url
