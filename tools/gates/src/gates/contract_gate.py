"""The gate on breaking changes (`make contract-check`; docs/releases.md).

Compares openapi.yaml and asyncapi.yaml with the last released contract
(contract/released/, moved forward by a release: `make contract-release`) and
fails on a change that can break a client, as the contract's section 6 (the
compatibility policy) defines it, unless the document's `info.version`
declares a new major version:

- OpenAPI: Redocly CLI's `diff` (npm @redocly/cli) rates each change
  major/minor/patch by direction (a request or a response). Its major changes
  fail, except two that section 6 allows in a minor version:
  * a new value of the Error record's `code` (new error codes);
  * a narrower constraint (pattern, length, range, format) on a field or
    parameter that CHANGELOG.md's `## [Unreleased]` section declares under
    `### Security` by its name in backticks (`NewPet.name`): refusing values
    accepted before, to close a security or data-integrity hole.
  And one it rates lower that section 6 forbids: a removed enum value.
- AsyncAPI: @asyncapi/diff (the engine of the AsyncAPI CLI's `diff`, run by
  scripts/asyncapi-diff.mjs) lists every change between the two documents,
  dereferenced by @asyncapi/parser, and rates the document's structure
  (channels, operations, messages); it leaves a message's payload
  "unclassified", so the payload's changes are rated here, for a consumer
  that receives them: a removed field, a changed type or const, a field no
  longer required, an enum value removed or added, a widened constraint fail;
  a new field, a new required field, a narrower constraint pass.

Usage:
  contract_gate.py                 check the documents against the baseline
  contract_gate.py --release vX.Y.Z   also check a release tag: the tag is the
                                   documents' version, CHANGELOG.md has its
                                   heading, the baseline is the documents
  contract_gate.py --move-baseline copy the documents, and template.yaml for
                                   the layout gate, into contract/released/
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from gates.repo import ROOT

BASELINE = ROOT / "contract" / "released"
DOCUMENTS = ("openapi.yaml", "asyncapi.yaml")
# Moved with the contract, read by the layout gate (gates.layout_check).
RELEASED_TOO = ("template.yaml",)
BIN = ROOT / "node_modules" / ".bin"

# What refuses values a request could send before, and nothing else.
NARROWING_KEYWORDS = {
    "pattern", "format", "maxLength", "minLength", "maximum", "minimum",
    "exclusiveMaximum", "exclusiveMinimum", "maxItems", "minItems", "multipleOf",
    "uniqueItems", "maxProperties", "minProperties",
}
ERROR_CODE_ENUM = "#/components/schemas/Error/properties/code/enum"
UPPER_BOUNDS = {"maxLength", "maximum", "maxItems", "maxProperties", "exclusiveMaximum"}
LOWER_BOUNDS = {"minLength", "minimum", "minItems", "minProperties", "exclusiveMinimum"}
SHAPE_KEYWORDS = {"type", "const", "items", "$ref", "oneOf", "anyOf", "allOf", "not"}


def tool_env():
    env = dict(os.environ)
    # Offline and quiet: no usage reports, no update notices.
    env.update(REDOCLY_TELEMETRY="off", REDOCLY_SUPPRESS_NOTIFICATIONS="true", NO_COLOR="1")
    return env


def major(document):
    return int(str(document["info"]["version"]).split(".")[0])


def declared_security_fields(changelog_text):
    """The names in backticks under `### Security` of `## [Unreleased]`."""
    unreleased = re.search(r"^## \[Unreleased\][^\n]*\n(.*?)(?=^## |\Z)", changelog_text, re.M | re.S)
    if not unreleased:
        return set()
    security = re.search(r"^### Security[^\n]*\n(.*?)(?=^### |\Z)", unreleased.group(1), re.M | re.S)
    return set(re.findall(r"`([^`\s]+)`", security.group(1))) if security else set()


def field_name(pointer):
    """What a changelog entry names a field by: `Schema.property` for a
    property of a component schema, `parameters.Name` for a component
    parameter, else the JSON pointer itself."""
    pointer = pointer or ""
    found = re.match(r"#/components/schemas/([^/]+)/properties/([^/]+)", pointer)
    if found:
        return f"{found.group(1)}.{found.group(2)}"
    found = re.match(r"#/components/parameters/([^/]+)", pointer)
    if found:
        return f"parameters.{found.group(1)}"
    return re.sub(r"/(" + "|".join(sorted(NARROWING_KEYWORDS)) + r")$", "", pointer)


def openapi_findings(report, declared):
    """(breaking, allowed) lists of lines from Redocly's JSON report."""
    breaking, allowed = [], []
    for change in report["changes"]:
        where = (change.get("revision") or change.get("base") or {}).get("pointer", "")
        rules = [v["ruleId"] for v in change.get("verdicts", [])]
        messages = "; ".join(v.get("message", "") for v in change.get("verdicts", []))
        if len(messages) > 300:  # a changed pattern is quoted whole, twice
            messages = messages[:300] + "..."
        text = f"{change['path']} ({', '.join(rules) or change['kind']}): {messages or change.get('property')}"
        if change.get("property") == "enum":
            before = set(map(str, (change.get("base") or {}).get("value") or []))
            after = set(map(str, (change.get("revision") or {}).get("value") or []))
            if before - after:
                breaking.append(f"{change['path']}: enum value(s) removed: {', '.join(sorted(before - after))}")
                continue
            if change["impact"] == "major" and rules == ["enum-values-added"] and where == ERROR_CODE_ENUM:
                allowed.append(f"new error code(s): {', '.join(sorted(after - before))}")
                continue
        if change["impact"] != "major":
            continue
        if rules == ["schema-constraint-changed"] and change.get("property") in NARROWING_KEYWORDS:
            name = field_name(where)
            if name in declared:
                allowed.append(f"`{name}`: {change.get('property')} changed, declared under Security in CHANGELOG.md")
                continue
            text += (f"\n      (if this closes a security or data-integrity hole, declare `{name}` under"
                     " `### Security` in CHANGELOG.md's `## [Unreleased]` section)")
        breaking.append(text)
    return breaking, allowed


def net_values(entries):
    before = [e["before"] for e in entries if e["action"] in ("remove", "edit")]
    after = [e["after"] for e in entries if e["action"] in ("add", "edit")]
    as_key = lambda v: json.dumps(v, sort_keys=True)  # noqa: E731
    return ({as_key(v) for v in before} - {as_key(v) for v in after},
            {as_key(v) for v in after} - {as_key(v) for v in before})


def payload_finding(message, rest, change):
    """Why one change inside an event's payload can break a consumer, or None."""
    action, before, after = change["action"], change.get("before"), change.get("after")
    keyword = rest.rsplit("/", 1)[-1]
    parent = rest.rsplit("/", 2)[-2] if rest.count("/") >= 2 else ""
    where = f"{message} payload {rest or '/'}"
    if parent == "properties":
        return f"{where}: event field removed" if action == "remove" else None
    if action == "remove" and isinstance(before, dict) and "properties" in json.dumps(before):
        return f"{where}: removed, with the fields it held"
    if keyword in SHAPE_KEYWORDS and action in ("edit", "remove"):
        return f"{where}: retyped ({json.dumps(before)} -> {json.dumps(after)})"
    if keyword in ("pattern", "format") and action in ("edit", "remove"):
        return f"{where}: {keyword} changed ({before!r} -> {after!r})"
    if keyword in ("enum", "required") and action == "remove":
        return f"{where}: {keyword} removed"
    if keyword in UPPER_BOUNDS and (action == "remove" or (action == "edit" and after > before)):
        return f"{where}: widened ({before} -> {after})"
    if keyword in LOWER_BOUNDS and (action == "remove" or (action == "edit" and after < before)):
        return f"{where}: widened ({before} -> {after})"
    return None


def asyncapi_findings(report):
    """Breaking lines from the AsyncAPI CLI's JSON diff. Each message is read at
    its channel (dereferenced there: the same change also shows at
    components/ and operations/, which are skipped)."""
    breaking: list[str] = []
    lists: dict[tuple[str, str, str], list[dict]] = {}
    for change in report["changes"]:
        path = change["path"]
        if "/x-parser-" in path:
            continue
        found = re.match(r"^/channels/([^/]+)/messages/([^/]+)/payload(/.*)?$", path)
        if not found:
            # info.version's own change is what declares a release, not a break.
            if change.get("type") == "breaking" and not path.startswith(("/components/", "/operations/", "/info/")):
                breaking.append(f"{path}: {change['action']} (breaking, by @asyncapi/diff)")
            continue
        message, rest = found.group(2), found.group(3) or ""
        array = re.match(r"^(.*)/(enum|required)/\d+$", rest)
        if array:
            lists.setdefault((message, array.group(1), array.group(2)), []).append(change)
            continue
        finding = payload_finding(message, rest, change)
        if finding:
            breaking.append(finding)
    for (message, schema, keyword), entries in lists.items():
        removed, added = net_values(entries)
        where = f"{message} payload {schema or '/'}"
        if removed:
            what = "no longer required" if keyword == "required" else "enum value(s) removed"
            breaking.append(f"{where}: {what}: {', '.join(sorted(removed))}")
        if added and keyword == "enum":
            breaking.append(f"{where}: enum value(s) added (a consumer may not know them): {', '.join(sorted(added))}")
    return breaking


def resolved(document, scratch, name):
    """`document` (YAML) written as JSON to `scratch`/`name`, as every client
    reads it: openapi.yaml writes the headers and error answers its
    operations share once, as anchors and merge keys (`<<: *errors`), which
    PyYAML applies; the diff tool is handed the merged document, whatever
    YAML it reads itself."""
    path = Path(scratch) / name
    path.write_text(json.dumps(yaml.safe_load(Path(document).read_text())))
    return path


def redocly_report(base, revision, scratch):
    output = Path(scratch) / f"redocly-{abs(hash((str(base), str(revision))))}.json"
    done = subprocess.run(
        [str(BIN / "redocly"), "diff", str(base), str(revision), "--format", "json", "--fail-on", "none",
         "--lint-config", "off", "-o", str(output)],
        capture_output=True, text=True, env=tool_env(), cwd=ROOT)
    if not output.exists():
        raise SystemExit(f"contract-check: redocly diff gave no report:\n{done.stdout}{done.stderr}")
    return json.loads(output.read_text())


def asyncapi_reports(pairs):
    """@asyncapi/diff's changes for each (base, revision), in one Node process."""
    if not pairs:
        return []
    done = subprocess.run(
        ["node", str(ROOT / "scripts" / "asyncapi-diff.mjs")],
        input=json.dumps({"pairs": [[str(b), str(r)] for b, r in pairs]}),
        capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"contract-check: the AsyncAPI diff failed:\n{done.stderr}")
    return json.loads(done.stdout)


def evaluate(cases):
    """For each (base, revision, changelog text) pair of documents of one
    kind (the file name says which): (breaking, allowed, (old, new version),
    how many changes the tool reported)."""
    asyncapi = [(b, r) for b, r, _ in cases if Path(r).name.startswith("asyncapi")]
    async_reports = iter(asyncapi_reports(asyncapi))
    with tempfile.TemporaryDirectory() as scratch, ThreadPoolExecutor(max_workers=2) as pool:
        openapi = {i: pool.submit(redocly_report, resolved(b, scratch, f"{i}-base.json"),
                                  resolved(r, scratch, f"{i}-revision.json"), scratch)
                   for i, (b, r, _) in enumerate(cases) if not Path(r).name.startswith("asyncapi")}
        results = []
        for i, (base, revision, changelog_text) in enumerate(cases):
            report = openapi[i].result() if i in openapi else next(async_reports)
            if i in openapi:
                breaking, allowed = openapi_findings(report, declared_security_fields(changelog_text))
            else:
                breaking, allowed = asyncapi_findings(report), []
            old, new = (yaml.safe_load(Path(p).read_text()) for p in (base, revision))
            if breaking and major(new) > major(old):
                allowed += [f"{line}  [allowed: declared with major version {new['info']['version']}]"
                            for line in breaking]
                breaking = []
            versions = (old["info"]["version"], new["info"]["version"])
            results.append((breaking, allowed, versions, len(report["changes"])))
    return results


def release_problems(tag, changelog_text):
    problems = [f"contract/released/{name} is not {name}: run `make contract-release` before tagging"
                for name in RELEASED_TOO if (BASELINE / name).read_bytes() != (ROOT / name).read_bytes()]
    for name in DOCUMENTS:
        version = str(yaml.safe_load((ROOT / name).read_text())["info"]["version"])
        if tag != f"v{version}":
            problems.append(f"{name}: info.version is {version}, the tag {tag}")
        if (BASELINE / name).read_bytes() != (ROOT / name).read_bytes():
            problems.append(f"contract/released/{name} is not {name}: run `make contract-release` before tagging")
    if not re.search(rf"^## \[{re.escape(tag.lstrip('v'))}\]", changelog_text, re.M):
        problems.append(f"CHANGELOG.md has no `## [{tag.lstrip('v')}]` heading")
    return problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--release", metavar="TAG")
    parser.add_argument("--move-baseline", action="store_true")
    args = parser.parse_args()
    changelog = (ROOT / "CHANGELOG.md").read_text()

    if args.move_baseline:
        version = yaml.safe_load((ROOT / "openapi.yaml").read_text())["info"]["version"]
        if not re.search(rf"^## \[{re.escape(str(version))}\]", changelog, re.M):
            sys.exit(f"contract-release: CHANGELOG.md has no `## [{version}]` heading: "
                     "move its Unreleased entries under one first")
        for name in DOCUMENTS + RELEASED_TOO:
            shutil.copyfile(ROOT / name, BASELINE / name)
        print(f"contract-release: contract/released/ is now the {version} contract")
        return 0

    failed = breaking_found = False
    results = evaluate([(BASELINE / name, ROOT / name, changelog) for name in DOCUMENTS])
    for name, (breaking, allowed, (old, new), _) in zip(DOCUMENTS, results, strict=True):
        print(f"contract-check: {name} {old} (released) -> {new}: "
              f"{len(breaking)} breaking, {len(allowed)} allowed by the policy")
        for line in allowed:
            print(f"  allowed: {line}")
        for line in breaking:
            print(f"  BREAKING: {line}")
        breaking_found |= bool(breaking)
    failed = breaking_found
    if args.release:
        for problem in release_problems(args.release, changelog):
            print(f"  RELEASE: {problem}")
            failed = True
    if breaking_found:
        print("contract-check: FAILED: a change that can break a client needs a new major version "
              "(info.version), or must be made compatibly (docs/releases.md)")
    elif failed:
        print(f"contract-check: FAILED: {args.release} is not ready to release (docs/releases.md)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
