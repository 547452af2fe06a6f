"""Rehearse template.yaml's optional front (CloudFront and AWS WAF before the
HTTP API) offline in moto, as far as moto goes.

    .venv/bin/petstore-front-rehearsal      (make front-rehearsal)

It reuses gates.deploy_rehearsal (imported, not copied): the stack is
translated and created as there, with stand-ins for the front's resource types
that moto's CloudFormation lacks (AWS::WAFv2::WebACL, AWS::CloudFront::Distribution,
AWS::Route53::RecordSetGroup), created through moto's wafv2, cloudfront and
route53 APIs. Three stacks, each in a fresh moto:

1. us-east-1, Front=on: the stack makes its web ACL, the distribution uses it;
2. eu-west-1, Front=on: no web ACL can be made there, the stack deploys
   without one and says so in its FrontWebAcl output;
3. eu-west-1, Front=on, a domain and FrontWebAclArn (a web ACL made in moto's
   us-east-1 from edge/web-acl.yaml's rules): the distribution answers on the
   domain and uses the given web ACL, and Route 53 points the domain at it.

Each checks the distribution (the API as its only origin, the secret as a
custom origin header, nothing cached, every method and viewer header but
Host passed), the functions' ORIGIN_SECRET (the HTTP functions' and the
pre-traffic hook's, which sends it as the front does; not the events
function's), and the web ACL's rules. It also
holds edge/web-acl.yaml's web ACL equal to the one template.yaml makes.
docs/deploy.md, "Deploying the front", lists what moto cannot do.
"""

from __future__ import annotations

import copy
import sys
import traceback
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec

from samtranslator.yaml_helper import yaml_parse

from gates import deploy_rehearsal as rehearsal
from gates.repo import ROOT

P = ParamSpec("P")
SECRET = "rehearsal-secret-0123456789abcdef0123456789"
CACHING_DISABLED = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"
ALL_VIEWER_EXCEPT_HOST = "b689b0a8-53d0-40ab-baf2-68738e2966ac"
CLOUDFRONT_ZONE = "Z2FDTNDATAQYW2"
DOMAIN = "api.pets.example.com"
MOTO_GAPS = [
    "moto's CloudFormation has no AWS::WAFv2::WebACL, AWS::CloudFront::Distribution or AWS::Route53::RecordSetGroup: created through moto's wafv2, cloudfront and route53 APIs",
    "moto does not evaluate the template's Rules (Front on without FrontOriginSecret, a domain without a certificate): cfn-lint checks their syntax only",
    "moto's CloudFront does not check that WebACLId names an existing CLOUDFRONT web ACL, nor that the certificate is in us-east-1 and covers the alias",
    "moto's WAF does not evaluate rules (rate limits, managed rule groups): no request is sent through the front",
    "no CloudFront edge forwards a request: CloudFront-Viewer-Address and the origin header are tested on the real router in tests/front.rs",
]


# --- Stand-ins for the front's resources ------------------------------------


def items(values: list) -> dict:
    return {"Quantity": len(values), "Items": values}


def distribution_config(name: str, config: dict) -> dict:
    """CloudFormation's DistributionConfig in the CloudFront API's shape (the
    parts the template uses)."""
    behavior = config["DefaultCacheBehavior"]
    api: dict[str, Any] = {
        "CallerReference": name,
        "Comment": config.get("Comment", ""),
        "Enabled": bool(config["Enabled"]),
        "HttpVersion": config.get("HttpVersion", "http2"),
        "IsIPV6Enabled": bool(config.get("IPV6Enabled", False)),
        "Origins": items([
            {
                "Id": origin["Id"],
                "DomainName": origin["DomainName"],
                "CustomOriginConfig": {
                    "HTTPPort": 80,
                    "HTTPSPort": 443,
                    "OriginProtocolPolicy": origin["CustomOriginConfig"]["OriginProtocolPolicy"],
                    "OriginSslProtocols": items(origin["CustomOriginConfig"]["OriginSSLProtocols"]),
                },
                "CustomHeaders": items(origin.get("OriginCustomHeaders", [])),
            }
            for origin in config["Origins"]
        ]),
        "DefaultCacheBehavior": {
            "TargetOriginId": behavior["TargetOriginId"],
            "ViewerProtocolPolicy": behavior["ViewerProtocolPolicy"],
            "CachePolicyId": behavior["CachePolicyId"],
            "OriginRequestPolicyId": behavior["OriginRequestPolicyId"],
            "AllowedMethods": {
                **items(behavior["AllowedMethods"]),
                "CachedMethods": items(behavior["CachedMethods"]),
            },
        },
    }
    if config.get("Aliases"):
        api["Aliases"] = items(config["Aliases"])
    if config.get("WebACLId"):
        api["WebACLId"] = config["WebACLId"]
    certificate = config.get("ViewerCertificate", {})
    api["ViewerCertificate"] = (
        {"ACMCertificateArn": certificate["AcmCertificateArn"], "SSLSupportMethod": certificate["SslSupportMethod"],
         "MinimumProtocolVersion": certificate["MinimumProtocolVersion"]}
        if "AcmCertificateArn" in certificate else {"CloudFrontDefaultCertificate": True}
    )
    return api


def numbers(rules: list) -> list:
    """The rate limit as WAF's API takes it: a number, not a parameter's string."""
    rules = copy.deepcopy(rules)
    for rule in rules:
        rate = rule["Statement"].get("RateBasedStatement")
        if rate:
            rate["Limit"] = int(rate["Limit"])
            rate["EvaluationWindowSec"] = int(rate["EvaluationWindowSec"])
        rule["Priority"] = int(rule["Priority"])
    return rules


def create_web_acl(wafv2: Any, props: dict) -> dict:
    return wafv2.create_web_acl(
        Name=props["Name"], Scope=props["Scope"], DefaultAction=props["DefaultAction"],
        Description=props.get("Description", ""), Rules=numbers(props["Rules"]),
        VisibilityConfig=props["VisibilityConfig"], CustomResponseBodies=props.get("CustomResponseBodies", {}),
    )["Summary"]


def web_acl_maker(emulator: Any, resolver: Any, created: dict) -> Callable[[str, dict], None]:
    def make(name: str, props: dict) -> None:
        made = create_web_acl(emulator.client("wafv2"), props)
        resolver.physical[name] = f"{made['Name']}|{made['Id']}|{props['Scope']}"
        resolver.attributes[(name, "Arn")] = lambda: made["ARN"]
        created[name] = made
    return make


def distribution_maker(emulator: Any, resolver: Any, created: dict) -> Callable[[str, dict], None]:
    def make(name: str, props: dict) -> None:
        made = emulator.client("cloudfront").create_distribution(
            DistributionConfig=distribution_config(name, props["DistributionConfig"]))["Distribution"]
        resolver.physical[name] = made["Id"]
        resolver.attributes[(name, "DomainName")] = lambda: made["DomainName"]
        created[name] = made
    return make


def records_maker(emulator: Any, resolver: Any, created: dict) -> Callable[[str, dict], None]:
    def make(name: str, props: dict) -> None:
        changes = [
            {"Action": "CREATE", "ResourceRecordSet": {
                "Name": record["Name"], "Type": record["Type"],
                "AliasTarget": {**record["AliasTarget"], "EvaluateTargetHealth": False},
            }}
            for record in props["RecordSets"]
        ]
        emulator.client("route53").change_resource_record_sets(
            HostedZoneId=props["HostedZoneId"], ChangeBatch={"Changes": changes})
        resolver.physical[name] = name
        created[name] = props
    return make


def upload_in_us_east_1(upload: Callable[P, None]) -> Callable[P, None]:
    """The artifact bucket in us-east-1 whatever the stack's region: moto's S3
    wants a LocationConstraint elsewhere, which deploy-rehearsal.py (written
    for us-east-1) does not give."""
    def wrapped(*args: P.args, **kwargs: P.kwargs) -> None:
        region, rehearsal.REGION = rehearsal.REGION, "us-east-1"
        try:
            upload(*args, **kwargs)
        finally:
            rehearsal.REGION = region
    return wrapped


rehearsal.upload_code = upload_in_us_east_1(rehearsal.upload_code)
rehearsal.EXTRA_MAKERS.update({
    "AWS::WAFv2::WebACL": web_acl_maker,
    "AWS::CloudFront::Distribution": distribution_maker,
    "AWS::Route53::RecordSetGroup": records_maker,
})


# --- Checks -----------------------------------------------------------------


def web_acl_properties(template: Path) -> dict:
    return yaml_parse(template.read_text())["Resources"]["FrontWebAcl"]["Properties"]


def check_same_web_acl(checks: Any) -> None:
    """edge/web-acl.yaml makes the web ACL a us-east-1 stack makes itself."""
    inline = web_acl_properties(ROOT / "template.yaml")
    companion = web_acl_properties(ROOT / "edge" / "web-acl.yaml")
    checks.equal(inline, companion, "template.yaml's FrontWebAcl and edge/web-acl.yaml's")


def the_distribution(emulator: Any, checks: Any) -> dict | None:
    cloudfront = emulator.client("cloudfront")
    listed = cloudfront.list_distributions()["DistributionList"].get("Items", [])
    if not checks.equal(len(listed), 1, "distributions"):
        return None
    return cloudfront.get_distribution_config(Id=listed[0]["Id"])["DistributionConfig"]


def check_distribution(emulator: Any, checks: Any, web_acl: str | None, domain: str | None) -> None:
    config = the_distribution(emulator, checks)
    if config is None:
        return
    api_id = emulator.client("apigatewayv2").get_apis()["Items"][0]["ApiId"]
    origins = config["Origins"]["Items"]
    checks.equal([o["DomainName"] for o in origins], [f"{api_id}.execute-api.{rehearsal.REGION}.amazonaws.com"],
                 "the front's one origin is the HTTP API")
    checks.equal(origins[0]["CustomOriginConfig"]["OriginProtocolPolicy"], "https-only", "the origin is reached over HTTPS")
    checks.equal(origins[0]["CustomHeaders"].get("Items"), [{"HeaderName": "X-Origin-Verify", "HeaderValue": SECRET}],
                 "CloudFront sends the secret as a custom origin header")
    behavior = config["DefaultCacheBehavior"]
    checks.equal(behavior["CachePolicyId"], CACHING_DISABLED, "nothing cached (Managed-CachingDisabled)")
    checks.equal(behavior["OriginRequestPolicyId"], ALL_VIEWER_EXCEPT_HOST,
                 "the key, the query and every header but Host pass (Managed-AllViewerExceptHostHeader)")
    checks.equal(sorted(behavior["AllowedMethods"]["Items"]), sorted(["GET", "HEAD", "OPTIONS", "PUT", "PATCH", "POST", "DELETE"]),
                 "every method passes")
    checks.equal(behavior["ViewerProtocolPolicy"], "https-only", "viewers use HTTPS")
    checks.equal(config.get("WebACLId") or None, web_acl, "the distribution's web ACL")
    checks.equal((config.get("Aliases") or {}).get("Items"), [domain] if domain else None, "the domain names the front")


def check_functions_have_the_secret(emulator: Any, checks: Any) -> None:
    """The functions that answer HTTP requests and the pre-traffic hook, which
    sends them what the front sends, have the secret; the events function,
    which serves no request, has none."""
    lam = emulator.client("lambda")
    functions = lam.list_functions()["Functions"]
    checks.check(any(f["FunctionName"].startswith("CodeDeployHook_") for f in functions), "the hook is rehearsed")
    for function in functions:
        variables = function.get("Environment", {}).get("Variables", {})
        want = "" if "-EventsFunction-" in function["FunctionName"] else SECRET
        checks.equal(variables.get("ORIGIN_SECRET"), want, f"{function['FunctionName']}'s ORIGIN_SECRET")


def check_web_acl(emulator: Any, checks: Any) -> str | None:
    wafv2 = emulator.client("wafv2")
    acls = wafv2.list_web_acls(Scope="CLOUDFRONT")["WebACLs"]
    if not checks.equal(len(acls), 1, "CLOUDFRONT web ACLs made in us-east-1"):
        return None
    acl = wafv2.get_web_acl(Name=acls[0]["Name"], Scope="CLOUDFRONT", Id=acls[0]["Id"])["WebACL"]
    rules = {rule["Name"]: rule["Statement"] for rule in acl["Rules"]}
    rate = rules.get("per-ip-rate", {}).get("RateBasedStatement", {})
    checks.equal((rate.get("AggregateKeyType"), rate.get("Limit")), ("IP", 6000), "a per-IP rate-based rule at FrontRateLimit")
    managed = sorted(s["ManagedRuleGroupStatement"]["Name"] for s in rules.values() if "ManagedRuleGroupStatement" in s)
    checks.equal(managed, ["AWSManagedRulesAmazonIpReputationList", "AWSManagedRulesCommonRuleSet",
                           "AWSManagedRulesKnownBadInputsRuleSet"], "AWS's managed rule groups")
    return acls[0]["ARN"]


# --- The three stacks -------------------------------------------------------


def run(region: str, overrides: dict[str, str], checks: Any, verify: Callable[[Any], None],
        before: Callable[[Any], dict[str, str]] | None = None) -> None:
    rehearsal.REGION = region
    emulator = rehearsal.Emulator(0)
    # moto's state lives in this process, not in one server: start afresh.
    urllib.request.urlopen(urllib.request.Request(f"{emulator.endpoint}/moto-api/reset", method="POST")).close()
    try:
        if before:
            overrides = {**overrides, **before(emulator)}
        print(f"front-rehearsal: {region}, {' '.join(f'{k}={v}' for k, v in overrides.items() if k != 'FrontOriginSecret')}")
        # Not at_defaults (it is not): that check's `cargo lambda deploy --env-var`
        # replaces the pets function's environment, ORIGIN_SECRET with it.
        rehearsal.rehearse(emulator, ROOT / "template.yaml", overrides, checks, at_defaults=False)
        verify(emulator)
    except Exception as error:  # noqa: BLE001 - one failure, with what was checked so far
        traceback.print_exc()
        checks.check(False, f"the rehearsal in {region} stopped: {type(error).__name__}: {error}")
    finally:
        emulator.stop()


def main() -> int:
    checks = rehearsal.Checks()
    on = {"Front": "on", "FrontOriginSecret": SECRET}
    check_same_web_acl(checks)

    def in_us_east_1(emulator: Any) -> None:
        acl = check_web_acl(emulator, checks)
        check_distribution(emulator, checks, acl, None)
        check_functions_have_the_secret(emulator, checks)
    run("us-east-1", on, checks, in_us_east_1)

    def elsewhere(emulator: Any) -> None:
        checks.equal(emulator.client("wafv2").list_web_acls(Scope="CLOUDFRONT")["WebACLs"], [],
                     "no CLOUDFRONT web ACL is made outside us-east-1")
        check_distribution(emulator, checks, None, None)
        check_functions_have_the_secret(emulator, checks)
    run("eu-west-1", on, checks, elsewhere)

    made: dict[str, str] = {}

    def companion_and_zone(emulator: Any) -> dict[str, str]:
        """edge/web-acl.yaml's web ACL, made in moto's us-east-1, and a hosted zone."""
        props = web_acl_properties(ROOT / "edge" / "web-acl.yaml")
        props = rehearsal.Resolver({"Parameters": {}}, {"FrontRateLimit": "6000"}, "companion").resolve(
            {**props, "Name": "companion-front"})
        wafv2 = rehearsal.boto3.client("wafv2", endpoint_url=emulator.endpoint, region_name="us-east-1")
        made["acl"] = create_web_acl(wafv2, props)["ARN"]
        zone = emulator.client("route53").create_hosted_zone(Name="pets.example.com", CallerReference="rehearsal")
        made["zone"] = zone["HostedZone"]["Id"].split("/")[-1]
        return {
            "FrontWebAclArn": made["acl"],
            "DomainName": DOMAIN,
            "FrontCertificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/00000000-0000-0000-0000-000000000000",
            "HostedZoneId": made["zone"],
        }

    def with_domain(emulator: Any) -> None:
        check_distribution(emulator, checks, made["acl"], DOMAIN)
        records = emulator.client("route53").list_resource_record_sets(HostedZoneId=made["zone"])["ResourceRecordSets"]
        aliases = sorted((r["Type"], r["AliasTarget"]["HostedZoneId"]) for r in records if r["Name"].rstrip(".") == DOMAIN)
        checks.equal(aliases, [("A", CLOUDFRONT_ZONE), ("AAAA", CLOUDFRONT_ZONE)], "the domain's records alias the front")
    run("eu-west-1", on, checks, with_domain, before=companion_and_zone)

    print("front-rehearsal: where moto falls short:")
    for gap in MOTO_GAPS:
        print(f"  - {gap}")
    print(f"front-rehearsal: {checks.passed} passed, {len(checks.failed)} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
