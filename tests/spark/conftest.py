"""Spark servers for the remote tests, each started once per run and stopped at its end."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.spark.cluster import Cluster, connect_server, standalone_cluster


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory) -> Iterator[Cluster]:
    """A standalone master and two one-core workers on loopback."""
    with standalone_cluster(tmp_path_factory.mktemp("spark-cluster")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def spark_connect(tmp_path_factory) -> Iterator[str]:
    """The sc:// URL of a Spark Connect server on loopback."""
    with connect_server(tmp_path_factory.mktemp("spark-connect")) as url:
        yield url
