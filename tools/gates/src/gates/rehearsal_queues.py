"""The deploy rehearsal's queues (gates.deploy_rehearsal): the stand-in
for a queue policy, which moto's CloudFormation cannot create, and the check
of the webhooks delivery path as the stack made it (docs/webhooks.md,
"Operating"): each queue's timeouts, retention and dead-letter queue,
each queue policy, each bus rule's pattern and targets, and that every queue
a function reads has a visibility timeout of at least 6 times the function's
timeout (AWS's advice: a batch still running when its messages reappear
would be handled twice at once).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

# AWS's advice for a queue a Lambda function reads.
VISIBILITY_PER_TIMEOUT = 6
QUEUE_ATTRIBUTES = ("VisibilityTimeout", "MessageRetentionPeriod", "SqsManagedSseEnabled")


def queue_policy_maker(emulator: Any, resolver: Any, created: dict) -> Callable[[str, dict], None]:
    """AWS::SQS::QueuePolicy through SQS's API: the policy on each queue."""
    sqs = emulator.client("sqs")

    def queue_policy(name: str, props: dict) -> None:
        document = json.dumps(props["PolicyDocument"])
        for url in props["Queues"]:
            sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": document})
        # CloudFormation's physical id of a queue policy is its own, one per stack.
        resolver.physical[name] = f"{resolver.pseudo['AWS::StackName']}-{name}"
        created[name] = props

    return queue_policy


def check_queues(emulator: Any, resolver: Any, translated: dict, checks: Any) -> None:
    sqs, lam, events = (emulator.client(s) for s in ("sqs", "lambda", "events"))
    resources = translated["Resources"]
    for name, resource in resources.items():
        if resource["Type"] != "AWS::SQS::Queue":
            continue
        want = resolver.resolve(resource.get("Properties", {}))
        url = resolver.physical[name]
        got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        for field in QUEUE_ATTRIBUTES:
            if field in want:
                checks.equal(str(got.get(field)).lower(), str(want[field]).lower(), f"{name} {field}")
        if "RedrivePolicy" in want:
            redrive = json.loads(got.get("RedrivePolicy", "{}"))
            checks.equal(redrive.get("deadLetterTargetArn"), want["RedrivePolicy"]["deadLetterTargetArn"],
                         f"{name} dead-letter queue")
            checks.equal(int(redrive.get("maxReceiveCount", 0)), int(want["RedrivePolicy"]["maxReceiveCount"]),
                         f"{name} maxReceiveCount")
    for name, resource in resources.items():
        if resource["Type"] != "AWS::SQS::QueuePolicy":
            continue
        want = resolver.resolve(resource["Properties"])
        for url in want["Queues"]:
            policy = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"])["Attributes"].get("Policy")
            checks.equal(json.loads(policy or "{}"), want["PolicyDocument"], f"{name} on {url.rsplit('/', 1)[-1]}")
    check_rules(events, resolver, resources, checks)
    check_visibility(sqs, lam, resolver, resources, checks)


def check_rules(events: Any, resolver: Any, resources: dict, checks: Any) -> None:
    """Each rule on a bus (not a schedule): its bus, pattern and targets."""
    for name, resource in resources.items():
        props = resource.get("Properties", {})
        if resource["Type"] != "AWS::Events::Rule" or "EventPattern" not in props:
            continue
        want = resolver.resolve(props)
        bus = want.get("EventBusName", "default")
        rule = events.describe_rule(Name=resolver.physical[name], EventBusName=bus)
        checks.equal(json.loads(rule["EventPattern"]), want["EventPattern"], f"{name} pattern on {bus}")
        targets = events.list_targets_by_rule(Rule=resolver.physical[name], EventBusName=bus)["Targets"]
        checks.equal(
            sorted((t["Arn"], t.get("DeadLetterConfig", {}).get("Arn")) for t in targets),
            sorted((t["Arn"], t.get("DeadLetterConfig", {}).get("Arn")) for t in want["Targets"]),
            f"{name} targets (and their dead-letter queue)",
        )


def check_visibility(sqs: Any, lam: Any, resolver: Any, resources: dict, checks: Any) -> None:
    """A queue a function reads hides a message at least 6 of its timeouts."""
    for name, resource in resources.items():
        if resource["Type"] != "AWS::Lambda::EventSourceMapping":
            continue
        want = resolver.resolve(resource["Properties"])
        if ":sqs:" not in want["EventSourceArn"]:
            continue
        queue = want["EventSourceArn"].rsplit(":", 1)[-1]
        url = sqs.get_queue_url(QueueName=queue)["QueueUrl"]
        visibility = int(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["VisibilityTimeout"])
                         ["Attributes"]["VisibilityTimeout"])
        timeout = int(lam.get_function(FunctionName=want["FunctionName"])["Configuration"]["Timeout"])
        checks.check(visibility >= VISIBILITY_PER_TIMEOUT * timeout,
                     f"{name}: {queue}'s visibility timeout ({visibility} s) is at least "
                     f"{VISIBILITY_PER_TIMEOUT} x its function's timeout ({timeout} s)")
