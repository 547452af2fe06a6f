"""Checks that a parameter change reaches the `live` alias.

SAM names an aliased function's version by a hash of its code and of its
environment and memory as written in the template, not as resolved, so a
change of a parameter alone (a table adopted, a new SunsetAt, more memory)
updates $LATEST but publishes no version, and `live` goes on as before. A
new VersionDescription does replace the version; so every parameter a
version carries (in the function's properties or the Globals, directly or
through a condition) must appear in that function's VersionDescription. A
NoEcho parameter must not (a description is readable by anyone who may list
the versions): its `<Name>Serial` parameter stands for it. Run by
scripts/lint-template.sh.

    petstore-check-versions template.yaml
"""

import re
import sys

from gates import template_check

SUB_VARIABLE = re.compile(r"\$\{([^}!.]+)\}")
# Lambda's limit on a version's description, and the longest DataTableName
# the template accepts (the restored table a description names).
DESCRIPTION_MAX = 256
TABLE_NAME_MAX = 64
# Properties that are not part of a published version: the release itself,
# the function's concurrency, the triggers, the role's policies.
NOT_IN_A_VERSION = {
    "AutoPublishAlias",
    "VersionDescription",
    "DeploymentPreference",
    "ReservedConcurrentExecutions",
    "ProvisionedConcurrencyConfig",
    "Events",
    "Policies",
}


def parameters(node, template):
    """The parameters `node` depends on: by Ref, in a Sub, or through an If's condition."""
    known = template.get("Parameters", {})
    found = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "Ref" and value in known:
                found.add(value)
            elif key == "Fn::Sub":
                text, variables = (value, {}) if isinstance(value, str) else (value[0], value[1])
                found |= {name for name in SUB_VARIABLE.findall(text) if name in known}
                found |= parameters(variables, template)
            elif key == "Fn::If":
                condition = template.get("Conditions", {}).get(value[0])
                found |= parameters(condition, template) | parameters(value[1:], template)
            elif key == "Condition" and isinstance(value, str):
                found |= parameters(template.get("Conditions", {}).get(value), template)
            else:
                found |= parameters(value, template)
    elif isinstance(node, list):
        for value in node:
            found |= parameters(value, template)
    return found


def rendered(description, template):
    """The description at the parameters' defaults, a table named at DataTableName's longest."""
    if not isinstance(description, dict) or "Fn::Sub" not in description:
        return str(description or "")
    text = description["Fn::Sub"]
    text = text if isinstance(text, str) else text[0]
    defaults = {name: str(p.get("Default", "")) for name, p in template.get("Parameters", {}).items()}

    def value(match):
        name = match.group(1)
        return "t" * TABLE_NAME_MAX if name == "Table" else defaults.get(name, match.group(0))

    return SUB_VARIABLE.sub(value, text)


def problems(template):
    secret = {name for name, p in template.get("Parameters", {}).items() if str(p.get("NoEcho")).lower() == "true"}
    shared = {k: v for k, v in template.get("Globals", {}).get("Function", {}).items() if k not in NOT_IN_A_VERSION}
    for name, resource in template.get("Resources", {}).items():
        properties = resource.get("Properties", {})
        if resource.get("Type") != "AWS::Serverless::Function" or "AutoPublishAlias" not in properties:
            continue
        own = {k: v for k, v in properties.items() if k not in NOT_IN_A_VERSION}
        carried = parameters(own, template) | parameters(shared, template)
        described = parameters(properties.get("VersionDescription"), template)
        for parameter in sorted(carried):
            wanted = f"{parameter}Serial" if parameter in secret else parameter
            if wanted not in described:
                yield f"{name}: its VersionDescription names no {wanted}, so changing {parameter} alone would leave `live` on the old version"
        for parameter in sorted(described & secret):
            yield f"{name}: its VersionDescription shows the NoEcho parameter {parameter}"
        length = len(rendered(properties.get("VersionDescription"), template))
        if length > DESCRIPTION_MAX:
            yield f"{name}: its VersionDescription is {length} characters at the defaults with a {TABLE_NAME_MAX}-character table, over Lambda's {DESCRIPTION_MAX}"


def main() -> int:
    return template_check.run("check-versions", problems, sys.argv[1])


if __name__ == "__main__":
    sys.exit(main())
