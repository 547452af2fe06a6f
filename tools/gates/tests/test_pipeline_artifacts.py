"""Offline test of the release's artifacts (gates.pipeline_package,
gates.pipeline_artifacts) against moto's S3, through the AWS CLI as the
workflow runs them: the same build packages to the same bytes; a build is
published once, a second publish of other bytes under the same commit fails;
a fetch passes only when every file matches the digests recorded at build
time (an object changed in the bucket, a SHA256SUMS other than the one
recorded, a template whose code lies elsewhere: each fails); with
--ancestor-of main, a build published for a commit main does not have is
refused before it is read. moto does not enforce bucket policies: that
builds/ refuses a put without If-None-Match, and any put but the publish
role's (so dev's credentials cannot write a build, or its sums, for a commit
main has not built), is proven by `make deploy-role-check` with the IAM
simulator.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gates.repo import ROOT

pytestmark = pytest.mark.lint_workflows

VENV = Path(os.environ.get("VENV", ROOT / ".venv"))
BUCKET = "petstore-artifacts-test"
PREFIX = "builds/0123abcd"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(list(args), capture_output=True, text=True, cwd=ROOT)
    if ok and done.returncode != 0:
        pytest.fail(f"test-pipeline-artifacts: {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    if not ok and done.returncode == 0:
        pytest.fail(f"test-pipeline-artifacts: {' '.join(args)} passed, and must not:\n{done.stdout}")
    return done


def fake_build(directory: Path) -> Path:
    build = directory / "build"
    for name in ("PetsFunction", "StoreFunction"):
        (build / name).mkdir(parents=True)
        (build / name / "bootstrap").write_bytes(f"binary of {name}".encode())
        (build / name / "bootstrap").chmod(0o755)
    template = {"Transform": "AWS::Serverless-2016-10-31", "Resources": {
        name: {"Type": "AWS::Serverless::Function", "Properties": {"CodeUri": name}}
        for name in ("PetsFunction", "StoreFunction")}}
    (build / "template.yaml").write_text(json.dumps(template))
    (directory / "petstore-smoke").write_bytes(b"smoke binary")
    return build


def package(build: Path, out: Path) -> None:
    run(str(VENV / "bin" / "python"), "-m", "gates.pipeline_package", "--bucket", BUCKET, "--prefix", PREFIX,
        "--build-dir", str(build), "--out", str(out), "--extra", str(build.parent / "petstore-smoke"))


def artifacts(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
    return run(sys.executable, "-m", "gates.pipeline_artifacts", *args, ok=ok)


def test_pipeline_artifacts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    server = subprocess.Popen([str(VENV / "bin" / "moto_server"), "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for name, value in dict(AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_DEFAULT_REGION="us-east-1",
                            AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}").items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    try:
        for _ in range(50):
            if subprocess.run(["aws", "s3api", "list-buckets"], capture_output=True).returncode == 0:
                break
            time.sleep(0.2)
        run("aws", "s3api", "create-bucket", "--bucket", BUCKET)
        check(tmp_path)
    finally:
        server.terminate()
        server.wait()


def check(scratch: Path) -> None:
    build = fake_build(scratch)
    first, second = scratch / "first", scratch / "second"
    package(build, first)
    package(build, second)
    names = sorted(p.name for p in first.iterdir())
    assert {"packaged.json", "released.json"} <= set(names), names
    assert "released.json" in (first / "SHA256SUMS").read_text()
    assert names == sorted(p.name for p in second.iterdir()), names
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes(), f"{name} differs between two packagings"
    url = f"s3://{BUCKET}/{PREFIX}"
    artifacts("publish", str(first), url)
    artifacts("publish", str(first), url)  # a re-run of the same commit: the same bytes, nothing written
    (build / "PetsFunction" / "bootstrap").write_bytes(b"other code")
    other = scratch / "other"
    package(build, other)
    assert "exists with other bytes" in artifacts("publish", str(other), url, ok=False).stderr

    recorded = hashlib.sha256((first / "SHA256SUMS").read_bytes()).hexdigest()
    artifacts("fetch", url, str(scratch / "fetched"), "--sums-sha256", recorded)
    # The digest a job without credentials checks the smoke binary against: the recorded one, once all match.
    smoke = hashlib.sha256((build.parent / "petstore-smoke").read_bytes()).hexdigest()
    assert artifacts("digest", str(scratch / "fetched"), "petstore-smoke").stdout.strip() == smoke
    (scratch / "fetched" / "petstore-smoke").write_bytes(b"another binary")
    assert "not the one SHA256SUMS recorded" in artifacts("digest", str(scratch / "fetched"), "petstore-smoke",
                                                          ok=False).stderr
    artifacts("fetch", url, str(scratch / "wrong-sums"), "--sums-sha256", "0" * 64, ok=False)
    # What the bucket policy refuses, done anyway (moto enforces no policy): the fetch still catches it.
    zip_name = next(n for n in names if n.startswith("PetsFunction-"))
    run("aws", "s3api", "put-object", "--bucket", BUCKET, "--key", f"{PREFIX}/{zip_name}",
        "--body", str(other / next(n for n in os.listdir(other) if n.startswith("PetsFunction-"))))
    assert "not the one SHA256SUMS recorded" in artifacts("fetch", url, str(scratch / "tampered"), ok=False).stderr
    # A template whose code is not the build's.
    elsewhere = json.loads((first / "packaged.json").read_text())
    elsewhere["Resources"]["StoreFunction"]["Properties"]["CodeUri"] = f"s3://{BUCKET}/builds/other/x.zip"
    (first / "packaged.json").write_text(json.dumps(elsewhere))
    sums = (first / "SHA256SUMS").read_text().splitlines()
    digest = hashlib.sha256((first / "packaged.json").read_bytes()).hexdigest()
    (first / "SHA256SUMS").write_text("".join(
        (f"{digest}  packaged.json" if line.endswith("  packaged.json") else line) + "\n" for line in sums))
    assert "StoreFunction's code" in artifacts("publish", str(first), url, ok=False).stderr
    on_main_only(scratch, build)


def git(repository: Path, *args: str) -> str:
    return run("git", "-C", str(repository), "-c", "user.name=t", "-c", "user.email=t@example.com", *args).stdout


def on_main_only(scratch: Path, build: Path) -> None:
    """A build published for a commit main does not have (a branch's, pushed
    by anyone) is refused by prod's fetch before anything is read."""
    repository = scratch / "repository"
    repository.mkdir()
    git(repository, "init", "-q", "-b", "main")
    git(repository, "commit", "-q", "--allow-empty", "-m", "on main")
    on_main = git(repository, "rev-parse", "HEAD").strip()
    git(repository, "checkout", "-q", "-b", "side")
    git(repository, "commit", "-q", "--allow-empty", "-m", "never merged")
    side = git(repository, "rev-parse", "HEAD").strip()
    git(repository, "checkout", "-q", "main")
    check_main = ("--ancestor-of", "main", "--repository", str(repository))
    for commit in (on_main, side):
        out = scratch / f"dist-{commit}"
        run(str(VENV / "bin" / "python"), "-m", "gates.pipeline_package", "--bucket", BUCKET, "--prefix",
            f"builds/{commit}", "--build-dir", str(build), "--out", str(out))
        artifacts("publish", str(out), f"s3://{BUCKET}/builds/{commit}")
    artifacts("fetch", f"s3://{BUCKET}/builds/{on_main}", str(scratch / "main-build"), *check_main)
    refused = artifacts("fetch", f"s3://{BUCKET}/builds/{side}", str(scratch / "side-build"), *check_main, ok=False)
    assert f"commit {side} is not on main" in refused.stderr, refused.stderr
    assert not (scratch / "side-build").exists(), "the fetch read a build before checking its commit"
    assert "not a full commit id" in artifacts("fetch", f"s3://{BUCKET}/{PREFIX}", str(scratch / "short"),
                                               *check_main, ok=False).stderr

