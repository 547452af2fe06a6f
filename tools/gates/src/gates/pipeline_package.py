"""The release workflow's packaging step, in the build job, which holds no
AWS credentials (.github/workflows/release.yml; docs/releases.md): `sam
build`'s output turned into what the deploy jobs publish and deploy, with no
AWS call.

    pipeline-package.py --bucket BUCKET --prefix builds/COMMIT [--build-dir .aws-sam/build]
                        [--out dist] [--extra FILE ...] [--released contract/released/template.yaml]

Each function's built directory becomes a zip with fixed timestamps and
sorted entries (the same build gives the same bytes), named after its
SHA-256; the template's CodeUri points at s3://BUCKET/PREFIX/<zip>, as
`sam package` would write it, and is written as packaged.json (JSON: a
CloudFormation template YAML reads as well). SHA256SUMS lists every file's
digest, in `sha256sum -c`'s format: the digests recorded at build time,
which the deploy jobs check before they publish, deploy or run anything
(gates.pipeline_artifacts). --extra files (the smoke binary) are
copied in and listed too. released.json is the last release's template
(--released) decoded by cfn-lint, as the layout gate reads it: the dev job's
index rebuild (gates.rebuild_indexes) reads it and packaged.json with
the standard library alone, nothing being installed where credentials are.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import zipfile
from pathlib import Path

from gates.repo import ROOT

EPOCH = (1980, 1, 1, 0, 0, 0)

def zip_directory(source: Path, target: Path) -> None:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(p for p in source.rglob("*") if p.is_file()):
            info = zipfile.ZipInfo(str(path.relative_to(source)), EPOCH)
            info.external_attr = (path.stat().st_mode & 0o777 | 0o100000) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes())


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def package(build_dir: Path, out: Path, bucket: str, prefix: str, extra: list[Path], released: Path) -> list[str]:
    from samtranslator.yaml_helper import yaml_parse

    template = yaml_parse((build_dir / "template.yaml").read_text())
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for name, resource in template["Resources"].items():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        code = build_dir / resource["Properties"]["CodeUri"]
        if not (code / "bootstrap").is_file():
            raise SystemExit(f"pipeline-package: {name}: no bootstrap in {code} (run sam build first)")
        scratch = out / f"{name}.zip"
        zip_directory(code, scratch)
        final = out / f"{name}-{sha256(scratch)[:16]}.zip"
        scratch.rename(final)
        resource["Properties"]["CodeUri"] = f"s3://{bucket}/{prefix}/{final.name}"
        files.append(final.name)
    for path in extra:
        (out / path.name).write_bytes(path.read_bytes())
        (out / path.name).chmod(0o755)
        files.append(path.name)
    (out / "packaged.json").write_text(json.dumps(template, indent=1, sort_keys=True) + "\n")
    files.append("packaged.json")
    from gates import layout_check  # cfn-lint's decoder, as the layout gate reads the baseline

    (out / "released.json").write_text(json.dumps(layout_check.read_template(released), indent=1, sort_keys=True)
                                       + "\n")
    files.append("released.json")
    sums = "".join(f"{sha256(out / f)}  {f}\n" for f in sorted(files))
    (out / "SHA256SUMS").write_text(sums)
    return files


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--build-dir", default=".aws-sam/build")
    parser.add_argument("--out", default="dist")
    parser.add_argument("--extra", type=Path, nargs="*", default=[])
    parser.add_argument("--released", type=Path, default=ROOT / "contract" / "released" / "template.yaml",
                        help="the last release's template (layout_check.BASELINE), written decoded as released.json")
    args = parser.parse_args()
    files = package(Path(args.build_dir), Path(args.out), args.bucket, args.prefix.strip("/"), args.extra,
                    args.released)
    digest = sha256(Path(args.out) / "SHA256SUMS")
    print(f"pipeline-package: {len(files)} files in {args.out}; SHA256SUMS sha256 {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
