"""What the template checks share (check-dashboard.py, check-versions.py):
read a template as cfn-lint does, and report each problem a check finds."""

import sys
from collections.abc import Callable, Iterable

from cfnlint.decode import decode  # the same YAML loader cfn-lint uses


def run(name: str, problems: Callable[[dict], Iterable[str]], path: str) -> int:
    """Prints each of `problems(template)` as `name: problem`; 1 when any, or the template is unreadable."""
    template, matches = decode(path)
    if matches or template is None:
        print(f"{name}: cannot read {path}", file=sys.stderr)
        return 1
    found = list(problems(template))
    for problem in found:
        print(f"{name}: {problem}", file=sys.stderr)
    return 1 if found else 0
