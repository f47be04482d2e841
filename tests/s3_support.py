"""A real S3-protocol server for the tests: moto's standalone server in a subprocess.

Started once per test session on a free port (only when a test asks for it) and
stopped at the end. Each test gets its own fresh bucket and the settings (and a
worker environment) pointing the storage layer at it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid

import boto3
import pytest

KEY, SECRET, REGION = "testing", "testing", "us-east-1"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """The endpoint URL of a running moto server (stopped when the session ends)."""
    port = _free_port()
    log = open(tmp_path_factory.mktemp("moto") / "moto.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(endpoint + "/moto-api/", timeout=1)  # noqa: S310
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("the moto S3 server did not start")
            time.sleep(0.2)
    yield endpoint
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=20)
    log.close()


def s3_client(endpoint: str):
    return boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=KEY,
        aws_secret_access_key=SECRET, region_name=REGION,
    )  # fmt: skip


def bucket_keys(endpoint: str, bucket: str) -> list[str]:
    listed = s3_client(endpoint).list_objects_v2(Bucket=bucket)
    return sorted(item["Key"] for item in listed.get("Contents", []))


@pytest.fixture
def s3_storage(settings, s3_server):
    """Storage set to a fresh bucket; yields the environment a worker needs for it."""
    bucket = f"dp-{uuid.uuid4().hex[:12]}"
    s3_client(s3_server).create_bucket(Bucket=bucket)
    env = {
        "DPPORTAL_STORAGE": "s3",
        "DPPORTAL_S3_ENDPOINT_URL": s3_server,
        "DPPORTAL_S3_BUCKET": bucket,
        "DPPORTAL_S3_REGION": REGION,
        "DPPORTAL_S3_ACCESS_KEY_ID": KEY,
        "DPPORTAL_S3_SECRET_ACCESS_KEY": SECRET,
    }
    for name, value in env.items():
        setattr(settings, name, value)
    settings.DPPORTAL_S3_PREFIX = ""
    return env
