"""The layout gate's command (`make layout-check`): the comparison with the
last release (gates.layout_check, whose docstring says what it proves), then
the one with the dev stage (gates.layout_dev, which builds on it).

    petstore-layout-check [--root DIR] [--dev-baseline REV | --dev-template FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from gates import layout_check, layout_dev
from gates.repo import ROOT


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--dev-baseline", default=os.environ.get("LAYOUT_DEV_BASELINE"),
                        help="the git revision the dev stage was last deployed from (the last main)")
    parser.add_argument("--dev-template", type=Path, help="the dev stage's template, as a file")
    args = parser.parse_args()
    passes, lines = layout_check.check(args.root)
    if args.dev_template:
        dev_text, label = args.dev_template.read_text(), str(args.dev_template)
    else:
        dev_text, label = layout_dev.last_main(args.dev_baseline)
    if dev_text is None:
        lines.append(f"FAILED: no last main to compare the dev stage with ({label}): fetch two commits "
                     "(fetch-depth: 2) or set LAYOUT_DEV_BASELINE")
        passes = False
    else:
        released, _ = layout_check.decode(str(args.root / layout_check.BASELINE))
        current, _ = layout_check.decode(str(args.root / "template.yaml"))
        dev_passes, dev_lines = layout_dev.dev_check(layout_dev.decode_text(dev_text), current, released, label)
        passes &= dev_passes
        lines += dev_lines
    for line in lines:
        print(f"layout-check: {line}")
    print(f"layout-check: {'passed' if passes else 'FAILED'}")
    return 0 if passes else 1


if __name__ == "__main__":
    sys.exit(main())
