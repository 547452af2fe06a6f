#!/usr/bin/env python3
"""Every pointer from the code to a page of the docs names a page and a
heading that exist (`make check-docs`, step 3; docs/contributing.md,
"Pointing at the docs").

A comment or a template's description points a reader at a page in one
form, which this script holds exact:

    docs/deploy.md, "Releases"
    README, "Layout"                (README.md, "Layout" too)
    docs/partitions.md, "One capacity knob", "Flash sale: one pet bought by thousands"

the page (README, README.md, a folder's README.md such as bench/README.md,
or docs/<page>.md, backticks around it allowed), then, after a comma, one
or more headings of that page
in double quotes (escaped as \\" inside a string literal is the same). A
heading is named by its text as the page shows it (inline backticks left
out), or by its words before a colon ("Releases" for "Releases: canaries
that roll themselves back"). A page named alone (docs/upgrade.md) must exist.
A pointer may wrap onto the next comment line.

Each pointer to a page or heading that does not exist fails the run. The
looser forms this script can recognise, which it cannot hold to a heading,
are reported beside (and fail nothing): a heading not in double quotes
(`README, Performance`, `docs/x.md, 'Heading'`), an `#anchor`, a page
named without its folder (`security.md`).

The maps stay whole too: the layout block (the fenced block under
"Layout") of README.md and of docs/architecture.md has a line for every
tracked top-level folder and every function under functions/, so a new
one fails the run until the maps list it.

Searched: every tracked .rs, .toml, .yaml, .yml, .sh, .py, .mjs file, the
Makefiles and the tracked scripts with a `#!` line, except contract/released/
(the last release's documents, kept as released) and this script.

Usage: python3 -m gates.check_doc_pointers [--root DIR] [--self-test]
"""

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from gates.repo import ROOT

EXTENSIONS = {".rs", ".toml", ".yaml", ".yml", ".sh", ".py", ".mjs"}
EXCLUDED = ("contract/released/", "tools/gates/src/gates/check_doc_pointers.py")

PAGE = r"(?:README(?:\.md)?|(?:[A-Za-z0-9_-]+/)+README\.md|docs/[A-Za-z0-9_-]+\.md)"
# The page, backticks allowed, then the quoted headings: `"..."` or, inside a
# string literal, `\"...\"`.
POINTER = re.compile(
    r"(?<![A-Za-z0-9_/.-])`?(?P<page>" + PAGE + r")`?"
    r"(?P<headings>(?:,\s*\\?\"[^\"\\]+\\?\")*)"
    r"(?P<after>#[A-Za-z0-9_-]+|,\s*\S[^,;)]*)?"
)
HEADING = re.compile(r"\\?\"(?P<text>[^\"\\]+)\\?\"")
COMMENT_LEADER = re.compile(r"^\s*(?://[/!]?|#|\*|--)?\s*")


def tracked_files(root):
    names = subprocess.run(["git", "ls-files", "-z"], cwd=root, check=True,
                           capture_output=True, text=True).stdout.split("\0")
    for name in filter(None, names):
        if name.startswith(EXCLUDED):
            continue
        path = root / name
        if not path.is_file():
            continue
        if path.suffix in EXTENSIONS or path.name == "Makefile" or _has_shebang(path):
            yield name, path


def _has_shebang(path):
    if path.suffix:
        return False
    with path.open("rb") as file:
        return file.read(2) == b"#!"


def headings_of(page):
    """A page's headings as a reader names them: the text (inline backticks
    left out) and its words before a colon. Fenced code is not a heading."""
    names = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if fenced or not match:
            continue
        text = match.group(1).replace("`", "")
        names.add(text)
        if ":" in text:
            names.add(text.split(":", 1)[0].strip())
    return names


def page_path(root, page):
    return root / ("README.md" if page == "README" else page)


def joined(lines, index):
    """The line and the two after it, comment leaders dropped, as one line:
    a heading in quotes may wrap."""
    rest = [COMMENT_LEADER.sub("", line, count=1) for line in lines[index + 1:index + 3]]
    return " ".join([lines[index].rstrip()] + [part.strip() for part in rest])


def check(root):
    dead, loose = [], []
    known = {}
    pages = {p.name for p in (root / "docs").glob("*.md")}
    # Not after a quote: "performance.md" in code is a file name, not a pointer.
    bare = re.compile(r"(?<![A-Za-z0-9_/.\"'-])(" + "|".join(map(re.escape, sorted(pages))) + r")\b") if pages else None
    for name, path in tracked_files(root):
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError:
            continue
        for index, line in enumerate(lines):
            where = f"{name}:{index + 1}"
            text = joined(lines, index)
            for match in POINTER.finditer(text):
                if match.start() >= len(line.rstrip()):
                    break  # found on a following line: reported from there
                page = match.group("page")
                target = page_path(root, page)
                if not target.is_file():
                    dead.append(f"{where}: {page}: no such page")
                    continue
                if target not in known:
                    known[target] = headings_of(target)
                for heading in HEADING.finditer(match.group("headings")):
                    if heading.group("text") not in known[target]:
                        dead.append(f"{where}: {page}, \"{heading.group('text')}\": no such heading")
                after = match.group("after")
                if after and not match.group("headings"):
                    word = after.lstrip(",").split()[0] if after.startswith(",") else ""
                    if after.startswith("#"):
                        loose.append(f"{where}: {page}{after}: an anchor; write {page}, \"Heading\"")
                    elif (word[:1].isupper() or word[:1] == "'") and "/" not in word:
                        # Headings start with a capital; prose after the comma
                        # ("docs/x.md, run by name") does not.
                        shown = text[match.start():min(match.end(), len(line.rstrip()))].strip("` ")
                        loose.append(f"{where}: {shown}: a heading not in double quotes?")
            if bare:
                for match in bare.finditer(line):
                    loose.append(f"{where}: {match.group(1)}: a page without its folder; write docs/{match.group(1)}")
    return dead, loose


LAYOUT_PAGES = ("README.md", "docs/architecture.md")


def layout_block(page):
    """The lines of the first fenced block after a "Layout" heading."""
    lines = page.read_text(encoding="utf-8").splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if re.match(r"^#{2,6}\s+Layout\s*$", line))
    except StopIteration:
        return None
    block: list[str] = []
    fenced = False
    for line in lines[start + 1:]:
        if line.startswith("```"):
            if fenced:
                return block
            fenced = True
        elif fenced:
            block.append(line)
    return block


def unlisted(root):
    """Each tracked top-level folder and each function a layout block lacks."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=root, check=True,
                           capture_output=True, text=True).stdout.split("\0")
    folders = sorted({name.split("/")[0] for name in names if "/" in name})
    functions = sorted({"/".join(name.split("/")[:2]) for name in names
                        if name.startswith("functions/") and name.count("/") >= 2})
    missing = []
    for page in LAYOUT_PAGES:
        if not (root / page).is_file():
            continue
        block = layout_block(root / page)
        if block is None:
            missing.append(f"{page}: no Layout heading with a block under it")
            continue
        starts = [line.strip().split()[0] for line in block if line.strip()]
        for folder in folders:
            if not any(start.startswith(folder + "/") for start in starts):
                missing.append(f"{page}, \"Layout\": no line for {folder}/")
        for function in functions:
            if not any(start.rstrip("/") == function for start in starts):
                missing.append(f"{page}, \"Layout\": no line for {function}")
    return missing


def self_test():
    """A dead page, a dead heading and each loose form fail or are reported;
    a good pointer, a wrapped one and an escaped one pass."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "docs").mkdir()
        (root / "README.md").write_text("# Title\n\n## Layout\n\n```\n# not a heading\n```\n")
        (root / "docs/deploy.md").write_text("# Deploying\n\n## Releases: canaries that roll back\n\n## `data check`\n")
        (root / "good.rs").write_text(
            "// README, \"Layout\"; docs/deploy.md, \"Releases\", \"data check\"\n"
            "// (`docs/deploy.md`, \"Releases: canaries\n"
            "// that roll back\")\n"
            "msg = \"see docs/deploy.md, \\\"Releases\\\"\"\n")
        (root / "dead.yaml").write_text(
            "# README, \"Deploy to AWS\"\n"
            "# docs/gone.md\n"
            "# README, \"not a heading\"\n"
            "# (see tools/README.md)\n")
        (root / "loose.sh").write_text(
            "#!/bin/sh\n# README, Performance\n# docs/deploy.md#releases\n# deploy.md, \"Releases\"\n")
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        (root / "functions/pets").mkdir(parents=True)
        (root / "functions/pets/main.rs").write_text("fn main() {}\n")
        (root / "functions/webhooks").mkdir(parents=True)
        (root / "functions/webhooks/main.rs").write_text("fn main() {}\n")
        (root / "docs/architecture.md").write_text(
            "# A\n\n## Layout\n\n```\nfunctions/pets  x\nfunctions/webhooks  y\ndocs/  z\n```\n")
        subprocess.run(["git", "add", "."], cwd=root, check=True)
        dead, loose = check(root)
        missing = unlisted(root)
    want_dead = ["dead.yaml:1: README, \"Deploy to AWS\": no such heading",
                 "dead.yaml:2: docs/gone.md: no such page",
                 "dead.yaml:3: README, \"not a heading\": no such heading",
                 "dead.yaml:4: tools/README.md: no such page"]
    want_loose = ["loose.sh:2: README, Performance", "loose.sh:3: docs/deploy.md#releases", "loose.sh:4: deploy.md"]
    # README.md's block is under "Layout" but lists only `# not a heading`.
    want_missing = ['README.md, "Layout": no line for docs/',
                    'README.md, "Layout": no line for functions/',
                    'README.md, "Layout": no line for functions/pets',
                    'README.md, "Layout": no line for functions/webhooks']
    problems = []
    if sorted(missing) != want_missing:
        problems.append(f"unlisted folders found {sorted(missing)}, want {want_missing}")
    if sorted(dead) != want_dead:
        problems.append(f"dead pointers found {sorted(dead)}, want {want_dead}")
    for want in want_loose:
        if not any(found.startswith(want) for found in loose):
            problems.append(f"loose form not reported: {want} (reported {loose})")
    if len(loose) != len(want_loose):
        problems.append(f"reported {len(loose)} loose forms, want {len(want_loose)}: {loose}")
    for problem in problems:
        print(f"check-doc-pointers: self-test: {problem}", file=sys.stderr)
    if not problems:
        print(f"check-doc-pointers: self-test: {len(dead)} dead pointers and {len(missing)} unlisted"
              f" folders fail, {len(loose)} loose forms are reported, as made")
    return not problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--self-test", action="store_true",
                        help="check this script on pointers made to fail, then stop")
    args = parser.parse_args()
    if args.self_test:
        sys.exit(0 if self_test() else 1)
    dead, loose = check(args.root)
    missing = unlisted(args.root)
    for found in missing:
        print(f"check-doc-pointers: the map is behind: {found}", file=sys.stderr)
    for found in loose:
        print(f"check-doc-pointers: loose (not checked): {found}", file=sys.stderr)
    for found in dead:
        print(f"check-doc-pointers: dead pointer: {found}", file=sys.stderr)
    if dead or missing:
        sys.exit(f"check-doc-pointers: {len(dead)} pointer(s) to a page or heading that does not exist,"
                 f" {len(missing)} folder(s) a layout does not list")
    print(f"check-doc-pointers: every pointer from the code to the docs resolves, and both layouts list"
          f" every folder and function"
          f"{f' ({len(loose)} loose, reported above)' if loose else ''}")


if __name__ == "__main__":
    main()
