"""The release workflow's artifacts in the bucket (docs/releases.md), with
the AWS CLI and the standard library only: the deploy jobs install nothing.

    pipeline-artifacts.py publish DIR s3://BUCKET/builds/COMMIT
        check DIR against its SHA256SUMS (written by gates.pipeline_package
        in the build job), then put each file once: with If-None-Match: *,
        which the bucket policy requires under builds/. A file already there
        (a re-run of the same commit) must have the digest recorded now, or
        the publish fails: a build, once written, is never replaced.
    pipeline-artifacts.py fetch s3://BUCKET/builds/COMMIT DIR [--sums-sha256 HEX]
                                [--ancestor-of REF [--repository PATH]]
        with --ancestor-of, first refuse a COMMIT that is not REF or one of
        its ancestors (git merge-base --is-ancestor, in PATH's repository):
        prod deploys only a commit of main's. Then download SHA256SUMS
        (checked against HEX when given) and every file it lists, check each
        digest, and that the template's code is only those files: what the
        deploy then deploys is what was built. builds/ is written only by
        the publish job's role (deploy/github-deploy-role.yaml), so the sums
        are the ones main's build recorded, not another writer's.
    pipeline-artifacts.py digest DIR NAME
        the digest SHA256SUMS records for NAME, every file of DIR checked
        first: what a job without credentials checks the smoke binary
        against before it runs it (the deploy jobs never run it).

Exit 1, saying which file, on any mismatch.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

SUMS = "SHA256SUMS"
TEMPLATE = "packaged.json"


def fail(message: str) -> None:
    raise SystemExit(f"::error::pipeline-artifacts: {message}")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def split(url: str) -> tuple[str, str]:
    if not url.startswith("s3://") or "/" not in url[5:]:
        fail(f"{url} is not s3://BUCKET/PREFIX")
    bucket, prefix = url[5:].split("/", 1)
    return bucket, prefix.strip("/")


def aws(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["aws", *args], capture_output=True, text=True)


def recorded(directory: Path) -> dict[str, str]:
    """{file: sha256} as SHA256SUMS records them; each file checked."""
    sums = {}
    for line in (directory / SUMS).read_text().splitlines():
        digest, name = line.split("  ", 1)
        if "/" in name or name.startswith("."):
            fail(f"{SUMS} names {name!r}, not a file of the build")
        path = directory / name
        if not path.is_file() or sha256(path) != digest:
            fail(f"{name}: its digest is not the one {SUMS} recorded at build time")
        sums[name] = digest
    if TEMPLATE not in sums:
        fail(f"{SUMS} lists no {TEMPLATE}")
    return sums


def code_only_from(directory: Path, sums: dict[str, str], bucket: str, prefix: str) -> None:
    """Every function's code is a file of this build, in this build's place."""
    template = json.loads((directory / TEMPLATE).read_text())
    for name, resource in template["Resources"].items():
        uri = resource.get("Properties", {}).get("CodeUri") if isinstance(resource, dict) else None
        if uri is None:
            continue
        base = f"s3://{bucket}/{prefix}/"
        if not isinstance(uri, str) or not uri.startswith(base) or uri[len(base):] not in sums:
            fail(f"{name}'s code {uri} is not a file of the build at {base}")


def publish(directory: Path, url: str) -> None:
    bucket, prefix = split(url)
    sums = recorded(directory)
    code_only_from(directory, sums, bucket, prefix)
    # SHA256SUMS last: once it is there, every file it names is.
    for name in [*sorted(sums), SUMS]:
        key = f"{prefix}/{name}"
        put = aws("s3api", "put-object", "--bucket", bucket, "--key", key, "--body", str(directory / name),
                  "--if-none-match", "*", "--checksum-algorithm", "SHA256", "--output", "json")
        if put.returncode == 0:
            print(f"pipeline-artifacts: wrote s3://{bucket}/{key}")
            continue
        if "PreconditionFailed" not in put.stderr:
            fail(f"putting s3://{bucket}/{key}: {put.stderr.strip()}")
        with tempfile.TemporaryDirectory() as scratch:
            there = Path(scratch) / name
            get = aws("s3api", "get-object", "--bucket", bucket, "--key", key, str(there))
            if get.returncode != 0 or sha256(there) != sha256(directory / name):
                fail(f"s3://{bucket}/{key} exists with other bytes: a build is written once")
        print(f"pipeline-artifacts: s3://{bucket}/{key} was there already, the same bytes")


def on_branch(commit: str, ref: str, repository: Path) -> None:
    """The commit is ref or an ancestor of it (a commit of main's, for prod)."""
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        fail(f"{commit!r} is not a full commit id: builds are published under builds/<commit>/")
    done = subprocess.run(["git", "-C", str(repository), "merge-base", "--is-ancestor", commit, ref],
                          capture_output=True, text=True)
    if done.returncode == 1:
        fail(f"commit {commit} is not on {ref}: a release deploys only a commit main built")
    if done.returncode != 0:
        fail(f"cannot tell whether {commit} is on {ref}: {done.stderr.strip()}")
    print(f"pipeline-artifacts: {commit} is on {ref}")


def fetch(url: str, directory: Path, sums_sha256: str | None, ancestor_of: str | None = None,
          repository: Path = Path(".")) -> None:
    bucket, prefix = split(url)
    if ancestor_of:
        on_branch(prefix.rsplit("/", 1)[-1], ancestor_of, repository)
    directory.mkdir(parents=True, exist_ok=True)

    def get(name: str) -> None:
        done = aws("s3api", "get-object", "--bucket", bucket, "--key", f"{prefix}/{name}", str(directory / name))
        if done.returncode != 0:
            fail(f"no s3://{bucket}/{prefix}/{name}: a release must name a commit main built "
                 f"({done.stderr.strip()})")

    get(SUMS)
    if sums_sha256 and sha256(directory / SUMS) != sums_sha256:
        fail(f"{SUMS} is not the one recorded at build time (sha256 {sums_sha256})")
    for line in (directory / SUMS).read_text().splitlines():
        name = line.split("  ", 1)[1]
        if "/" in name or name.startswith("."):
            fail(f"{SUMS} names {name!r}, not a file of the build")
        get(name)
    sums = recorded(directory)
    code_only_from(directory, sums, bucket, prefix)
    print(f"pipeline-artifacts: {len(sums)} files of s3://{bucket}/{prefix} match the digests recorded at build "
          f"time ({SUMS} sha256 {sha256(directory / SUMS)})")


def main() -> int:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("publish")
    up.add_argument("directory", type=Path)
    up.add_argument("url")
    down = commands.add_parser("fetch")
    down.add_argument("url")
    down.add_argument("directory", type=Path)
    down.add_argument("--sums-sha256")
    down.add_argument("--ancestor-of", help="refuse a commit that is not this ref or one of its ancestors")
    down.add_argument("--repository", type=Path, default=Path("."))
    digest = commands.add_parser("digest")
    digest.add_argument("directory", type=Path)
    digest.add_argument("name")
    args = parser.parse_args()
    if args.command == "publish":
        publish(args.directory, args.url)
    elif args.command == "digest":
        sums = recorded(args.directory)
        if args.name not in sums:
            fail(f"{SUMS} lists no {args.name}")
        print(sums[args.name])
    else:
        fetch(args.url, args.directory, args.sums_sha256, args.ancestor_of, args.repository)
    return 0


if __name__ == "__main__":
    sys.exit(main())
