"""Checks what cfn-lint cannot see: the dashboard bodies in template.yaml.

A dashboard body is a JSON string inside `!Sub` (either form: a string, or
a string and its variables); CloudFormation would only reject a broken one at
deploy time. Each `${...}` must name one of the `!Sub`'s variables, a
parameter, a resource (`${Res}`, `${Res.Attr}`) or a pseudo parameter; then, with every
`${...}` replaced by a number, the body must be JSON with widgets whose metric
widgets name a region and metrics; and every alarm the template creates must
be on an alarm widget (`${Alarm.Arn}`), so an operator who opens the
dashboard during a release sees the alarms that may roll it back. Run by
scripts/lint-template.sh.

    petstore-check-dashboard template.yaml
"""

import json
import re
import sys

from gates import template_check

VARIABLE = re.compile(r"\$\{([^}!][^}]*)\}")
TOKEN_BASE = 900_000


def bodies(template):
    for name, resource in template.get("Resources", {}).items():
        if resource.get("Type") == "AWS::CloudWatch::Dashboard":
            body, variables = resource.get("Properties", {}).get("DashboardBody"), {}
            if isinstance(body, dict) and "Fn::Sub" in body:
                body = body["Fn::Sub"]
                if isinstance(body, list) and len(body) == 2 and isinstance(body[1], dict):
                    body, variables = body
            yield name, body, variables


def alarms(template):
    """The alarms every stack has (a conditional one may not exist to show)."""
    for name, resource in template.get("Resources", {}).items():
        if resource.get("Type") == "AWS::CloudWatch::Alarm" and "Condition" not in resource:
            yield name


def problems(template):
    known = set(template.get("Parameters", {})) | set(template.get("Resources", {}))
    for name, body, variables in bodies(template):
        if not isinstance(body, str):
            yield f"{name}: DashboardBody is not a string or a !Sub of one"
            continue
        for variable in sorted(set(VARIABLE.findall(body))):
            if variable not in variables and not variable.startswith("AWS::") and variable.split(".")[0] not in known:
                yield f"{name}: ${{{variable}}} names no parameter or resource"
        # Each `${...}` becomes a number, valid JSON in a string and out of
        # one, that names it again: an alarm widget's "${Alarm.Arn}" is read
        # back as that.
        named: list[str] = []

        def token(match, named=named):
            named.append("${" + match.group(1) + "}")
            return str(TOKEN_BASE + len(named) - 1)

        try:
            document = json.loads(VARIABLE.sub(token, body))
        except json.JSONDecodeError as error:
            yield f"{name}: DashboardBody is not JSON: {error}"
            continue
        shown = {
            alarm
            for widget in document.get("widgets") or []
            if isinstance(widget, dict) and widget.get("type") == "alarm"
            for alarm in widget.get("properties", {}).get("alarms", [])
            if str(alarm).isdigit() and 0 <= int(alarm) - TOKEN_BASE < len(named)
            for alarm in [named[int(alarm) - TOKEN_BASE]]
        }
        for alarm in alarms(template):
            if f"${{{alarm}.Arn}}" not in shown:
                yield f"{name}: the alarm {alarm} is on no alarm widget"
        for index, widget in enumerate(document.get("widgets") or [None]):
            if not isinstance(widget, dict):
                yield f"{name}: widget {index} is missing or not an object"
            elif widget.get("type") == "metric":
                properties = widget.get("properties", {})
                if not properties.get("region") or not properties.get("metrics"):
                    yield f"{name}: metric widget {index} ({properties.get('title')}) lacks region or metrics"


def main() -> int:
    return template_check.run("check-dashboard", problems, sys.argv[1])


if __name__ == "__main__":
    sys.exit(main())
