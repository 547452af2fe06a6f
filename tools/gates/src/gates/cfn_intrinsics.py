"""CloudFormation's intrinsic functions resolved against one stack, for the
scripts that read template.yaml as deployed: the deploy rehearsal (against
the stack it created in moto) and the IAM check (against the names a
deployment would give). A subclass says what a `Ref` and an `Fn::GetAtt`
are (`ref`, `get_att`) and holds the template's `conditions`.
"""

from __future__ import annotations

import re
from typing import Any

# What `Ref AWS::NoValue` resolves to: dropped from the list or map holding it.
NO_VALUE = object()


class Intrinsics:
    conditions: dict[str, Any] = {}
    # The template's Mappings, for `Fn::FindInMap` (OrderRate's Capacity).
    mappings: dict[str, Any] = {}
    # Refuse an intrinsic this resolver does not know, rather than keep it
    # as a map (the rehearsal must not create a resource from one).
    strict = False

    def ref(self, name: str) -> Any:
        raise NotImplementedError

    def get_att(self, logical: str, attribute: str) -> Any:
        raise NotImplementedError

    def condition(self, name: str) -> bool:
        return bool(self.resolve(self.conditions[name]))

    def resolve(self, node: Any) -> Any:
        if isinstance(node, list):
            items = [self.resolve(item) for item in node]
            return [item for item in items if item is not NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (key, arg), = node.items()
            if key == "Ref":
                return self.ref(arg)
            if key == "Fn::GetAtt":
                logical, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
                return self.get_att(logical, attribute)
            if key == "Fn::Sub":
                return self.sub(arg)
            if key == "Fn::Join":
                separator, parts = arg
                return separator.join(str(part) for part in self.resolve(parts))
            if key == "Fn::Split":
                separator, text = arg
                return str(self.resolve(text)).split(separator)
            if key == "Fn::FindInMap":
                name, top, second = (self.resolve(a) for a in arg)
                return self.mappings[name][str(top)][str(second)]
            if key == "Fn::If":
                name, yes, no = arg
                return self.resolve(yes if self.condition(name) else no)
            if key == "Fn::Equals":
                left, right = (self.resolve(a) for a in arg)
                return str(left) == str(right)
            if key == "Fn::Not":
                return not self.resolve(arg[0])
            if key == "Fn::And":
                return all(self.resolve(a) for a in arg)
            if key == "Fn::Or":
                return any(self.resolve(a) for a in arg)
            if key == "Condition":
                return self.condition(arg)
            if self.strict and key.startswith("Fn::"):
                raise KeyError(f"{key}: not resolved here")
        resolved = {k: self.resolve(v) for k, v in node.items()}
        return {k: v for k, v in resolved.items() if v is not NO_VALUE}

    def sub(self, arg: Any) -> str:
        """`Fn::Sub`, in either form: `${!Literal}` stays `${Literal}`, a
        variable of its own map first, then `Resource.Attribute` (when not a
        dotted parameter or pseudo parameter) as `Fn::GetAtt`, else a `Ref`."""
        text, variables = (arg, {}) if isinstance(arg, str) else arg
        variables = {k: self.resolve(v) for k, v in variables.items()}

        def one(match: re.Match) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                return str(variables[name])
            if "." in name and not name.startswith("AWS::") and not self.is_parameter(name.split(".")[0]):
                return str(self.get_att(*name.split(".", 1)))
            return str(self.ref(name))

        return re.sub(r"\$\{([^}]*)\}", one, text)

    def is_parameter(self, name: str) -> bool:
        return name in getattr(self, "parameters", {})
