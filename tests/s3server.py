"""A real S3 API on loopback: moto in server mode, with signatures and keys checked like AWS."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import boto3

REGION = "us-east-1"
ALLOW_ALL = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
}
# moto serves these requests unauthenticated, then checks every request's keys and signature:
# create the user, give it a policy, create its access key.
SETUP_REQUESTS = 3


@dataclass(frozen=True)
class S3Server:
    """Where the server listens and the one access key it accepts."""

    endpoint: str
    access_key_id: str
    secret_access_key: str

    def client(self, **overrides: str):
        """A boto3 S3 client with the valid key, unless overridden."""
        kwargs = {
            "endpoint_url": self.endpoint,
            "aws_access_key_id": self.access_key_id,
            "aws_secret_access_key": self.secret_access_key,
            "region_name": REGION,
            **overrides,
        }
        return boto3.client("s3", **kwargs)

    def create_bucket(self, prefix: str = "wh") -> str:
        """A new uniquely named bucket."""
        bucket = f"{prefix}-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=bucket)
        return bucket

    def catalog_options(self) -> dict[str, str]:
        """The pypaimon catalog options that reach this server with the valid key."""
        return {
            "fs.s3.endpoint": self.endpoint,
            "fs.s3.region": REGION,
            "fs.s3.accessKeyId": self.access_key_id,
            "fs.s3.accessKeySecret": self.secret_access_key,
        }

    def new_user(self, name: str, policy: dict = ALLOW_ALL) -> S3Server:
        """The same server as seen by a new IAM user with `policy` and a fresh random key."""
        iam = boto3.client(
            "iam",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
            region_name=REGION,
        )
        iam.create_user(UserName=name)
        iam.put_user_policy(UserName=name, PolicyName="policy", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName=name)["AccessKey"]
        return S3Server(self.endpoint, key["AccessKeyId"], key["SecretAccessKey"])

    def paimon_env(self) -> dict[str, str]:
        """The PAIMON_S3_* variables that reach this server with the valid key (CLI, example)."""
        return {
            "PAIMON_S3_ENDPOINT": self.endpoint,
            "PAIMON_S3_REGION": REGION,
            "PAIMON_S3_ACCESS_KEY_ID": self.access_key_id,
            "PAIMON_S3_SECRET_ACCESS_KEY": self.secret_access_key,
        }

    def keys(self, bucket: str) -> list[str]:
        """Every object key in a bucket, for asserting what was (not) written."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]


def free_port() -> int:
    """A port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_ports(n: int) -> list[int]:
    """`n` distinct ports nobody listens on right now (all bound at once, then released)."""
    with ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]


def listening(port: int) -> bool:
    """Whether a server on loopback accepts connections on `port` now."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def wait_listening(port: int, timeout_s: float = 30) -> None:
    """Block until a server on loopback accepts connections on `port`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if listening(port):
            return
        time.sleep(0.2)
    raise RuntimeError(f"nothing listened on port {port} within {timeout_s}s")


@contextmanager
def moto_server() -> Iterator[S3Server]:
    """Start moto on a free loopback port with authentication on; stop it afterwards."""
    port = free_port()
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": str(SETUP_REQUESTS)}
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(port)
        endpoint = f"http://127.0.0.1:{port}"
        iam = boto3.client(
            "iam",
            endpoint_url=endpoint,
            aws_access_key_id="setup",
            aws_secret_access_key="setup",
            region_name=REGION,
        )
        iam.create_user(UserName="warehouse")
        iam.put_user_policy(
            UserName="warehouse", PolicyName="all", PolicyDocument=json.dumps(ALLOW_ALL)
        )
        key = iam.create_access_key(UserName="warehouse")["AccessKey"]
        yield S3Server(endpoint, key["AccessKeyId"], key["SecretAccessKey"])
    finally:
        process.terminate()
        process.wait(timeout=10)
