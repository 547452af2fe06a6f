"""`make run-lambda`'s AWS beyond DynamoDB: the parts that carry a committed
change to a webhook receiver, so the real `events` and `webhooks` binaries
run that path as they do in Lambda.

    run-lambda-aws.py --invoke-port PORT --dynamodb-port PORT --env-file FILE

- EventBridge and SQS: moto in server mode (the deploy rehearsal's offline
  AWS), on a free port of 127.0.0.1: the bus and the two webhook queues
  with template.yaml's visibility timeouts. The `events` function fans
  events out to the deliveries queue itself; the events queue, which the
  release before's bus rule fed, is kept (and read) as the template keeps it.
- The event source mappings, which moto does not run: the data table's
  stream (DynamoDB Local's, read with the Streams API from its start, shard
  by shard, in order) in batches to the `events` function, a batch read
  again from the first record it reports failed; each queue's messages in
  batches of up to 10 to the `webhooks` function, deleting the ones it does
  not report failed (`ReportBatchItemFailures`); a failed one comes back
  when its visibility ends, which the function sets to the retry's wait.
  Two pollers per queue, as a mapping runs several batches at once, so an
  endpoint that hangs holds one batch and not the queue.
- The hold sweep's schedule: a `Scheduled Event` to `events` every
  HOLD_SWEEP_SECONDS (60 unless set, as `make run` sweeps; hourly in AWS).
- Each invocation goes to `cargo lambda watch`'s invoke API on
  --invoke-port, as `make invoke` sends one.

Before it polls, it writes the variables the functions need to reach these
(NAME=value lines: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_EVENTBRIDGE,
EVENT_BUS_NAME, WEBHOOK_QUEUE_URL) to --env-file, for scripts/run-lambda.sh
to export before it starts `cargo lambda watch`. Not emulated: the queues'
dead-letter queues (a message is received at most maxReceiveCount times in
AWS; here it keeps coming back).
"""

from __future__ import annotations

import argparse
import base64
import datetime
import json
import logging
import os
import signal
import socket
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import boto3
import yaml
from moto.server import ThreadedMotoServer

from gates.repo import ROOT

ACCOUNT = "123456789012"
REGION = "us-east-1"
BUS = "petstore-local"
EVENTS_QUEUE = "petstore-webhook-events"
DELIVERIES_QUEUE = "petstore-webhook-deliveries"
POLLERS_PER_QUEUE = 2
STREAM_POLL_EVERY = 0.25
stopping = threading.Event()


def log(message: str) -> None:
    print(f"run-lambda-aws: {message}", file=sys.stderr, flush=True)


def template_resources() -> dict[str, Any]:
    """template.yaml's resources, its intrinsic functions read as None
    (only literal properties are used here)."""

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    return yaml.load((ROOT / "template.yaml").read_text(), Loader=Loader)["Resources"]


def clients(endpoint: str) -> dict[str, Any]:
    settings: dict[str, Any] = dict(
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    return {"sqs": boto3.client("sqs", **settings), "events": boto3.client("events", **settings)}


def create_resources(aws: dict[str, Any]) -> dict[str, str]:
    """The bus and the queues, as the template declares them; returns the
    queues' URLs by name."""
    resources = template_resources()
    urls = {}
    for name, logical in ((EVENTS_QUEUE, "WebhookEventsQueue"), (DELIVERIES_QUEUE, "WebhookDeliveriesQueue")):
        visibility = resources[logical]["Properties"]["VisibilityTimeout"]
        urls[name] = aws["sqs"].create_queue(
            QueueName=name, Attributes={"VisibilityTimeout": str(visibility)}
        )["QueueUrl"]
    aws["events"].create_event_bus(Name=BUS)
    return urls


def invoke(port: int, function: str, event: dict) -> dict | None:
    """One invocation through cargo lambda watch; None when the function
    failed as a whole (an error answer, or none)."""
    body = json.dumps(event, default=json_default).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/2015-03-31/functions/{function}/invocations",
        data=body,
        headers={"content-type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            answer = json.loads(response.read() or b"null")
    except (urllib.error.URLError, OSError, ValueError) as error:
        log(f"invoking {function} failed: {error}")
        return None
    if not isinstance(answer, dict) or "errorType" in answer or "errorMessage" in answer:
        log(f"{function} failed: {str(answer)[:300]}")
        return None
    return answer


def json_default(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        return value.timestamp()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    raise TypeError(f"not JSON: {type(value)}")


class StreamMapping:
    """The data table's stream to the `events` function, as Lambda's event
    source mapping runs it: in order per shard, a shard after its parent, a
    batch that reports a record failed read again from that record."""

    def __init__(self, port: int, dynamodb_endpoint: str, table: str) -> None:
        settings: dict[str, Any] = dict(
            endpoint_url=dynamodb_endpoint,
            region_name=REGION,
            aws_access_key_id="local",
            aws_secret_access_key="local",
        )
        self.port = port
        self.dynamodb = boto3.client("dynamodb", **settings)
        self.streams = boto3.client("dynamodbstreams", **settings)
        self.table = table
        # shard id -> {"iterator", "after" (last sequence number handled), "at", "done", "parent"}
        self.shards: dict[str, dict[str, Any]] = {}

    def run(self) -> None:
        arn = self.dynamodb.describe_table(TableName=self.table)["Table"]["LatestStreamArn"]
        while not stopping.is_set():
            try:
                busy = self.poll(arn)
            except Exception as error:  # noqa: BLE001 - the stream or DynamoDB Local: try again
                log(f"reading the stream: {error}")
                for shard in self.shards.values():
                    shard["iterator"] = None
                busy = False
            if not busy:
                stopping.wait(STREAM_POLL_EVERY)

    def poll(self, arn: str) -> bool:
        description = self.streams.describe_stream(StreamArn=arn)["StreamDescription"]
        for shard in description["Shards"]:
            self.shards.setdefault(
                shard["ShardId"],
                {"iterator": None, "after": None, "at": None, "done": False, "parent": shard.get("ParentShardId")},
            )
        busy = False
        for shard_id, shard in self.shards.items():
            parent = self.shards.get(shard["parent"] or "")
            if shard["done"] or (parent is not None and not parent["done"]):
                continue
            busy |= self.read(arn, shard_id, shard)
        return busy

    def read(self, arn: str, shard_id: str, shard: dict[str, Any]) -> bool:
        if shard["iterator"] is None:
            where: dict[str, str] = {"ShardIteratorType": "TRIM_HORIZON"}
            if shard["at"]:
                where = {"ShardIteratorType": "AT_SEQUENCE_NUMBER", "SequenceNumber": shard["at"]}
            elif shard["after"]:
                where = {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": shard["after"]}
            shard["iterator"] = self.streams.get_shard_iterator(StreamArn=arn, ShardId=shard_id, **where)[
                "ShardIterator"
            ]
        page = self.streams.get_records(ShardIterator=shard["iterator"], Limit=100)
        records = page.get("Records", [])
        shard["iterator"] = page.get("NextShardIterator")
        if records:
            for record in records:
                record["eventSourceARN"] = arn
            answer = invoke(self.port, "events", {"Records": records})
            failed = None if answer is None else [f["itemIdentifier"] for f in answer.get("batchItemFailures", [])]
            if failed is None or failed:
                # Read again from the first record not published (the whole
                # batch when the function failed), after a pause.
                shard["at"] = failed[0] if failed else records[0]["dynamodb"]["SequenceNumber"]
                shard["iterator"] = None
                stopping.wait(1)
                return False
            shard["at"] = None
            shard["after"] = records[-1]["dynamodb"]["SequenceNumber"]
        if shard["iterator"] is None:
            shard["done"] = True
        return bool(records)


class QueueMapping:
    """One queue's messages to the `webhooks` function, as an SQS event source
    mapping with ReportBatchItemFailures runs it."""

    def __init__(self, port: int, sqs: Any, name: str, url: str) -> None:
        self.port, self.sqs, self.url = port, sqs, url
        self.arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"

    def run(self) -> None:
        while not stopping.is_set():
            try:
                self.poll()
            except Exception as error:  # noqa: BLE001 - moto went away (stopping) or a hiccup
                if not stopping.is_set():
                    log(f"polling {self.arn}: {error}")
                    stopping.wait(1)

    def poll(self) -> None:
        messages = self.sqs.receive_message(
            QueueUrl=self.url, MaxNumberOfMessages=10, WaitTimeSeconds=1, AttributeNames=["All"]
        ).get("Messages", [])
        if not messages:
            return
        records = [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m.get("Attributes", {}),
                "messageAttributes": {},
                "md5OfBody": m["MD5OfBody"],
                "eventSource": "aws:sqs",
                "eventSourceARN": self.arn,
                "awsRegion": REGION,
            }
            for m in messages
        ]
        answer = invoke(self.port, "webhooks", {"Records": records})
        if answer is None:
            return  # every message comes back when its visibility ends
        failed = {f["itemIdentifier"] for f in answer.get("batchItemFailures", [])}
        done = [
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
            for i, m in enumerate(messages)
            if m["MessageId"] not in failed
        ]
        if done:
            self.sqs.delete_message_batch(QueueUrl=self.url, Entries=done)


def sweep_holds(port: int) -> None:
    """The hold sweep's schedule, as EventBridge Scheduler invokes `events`."""
    every = max(float(os.environ.get("HOLD_SWEEP_SECONDS", "60")), 1)
    while not stopping.wait(every):
        invoke(
            port,
            "events",
            {"version": "0", "source": "aws.events", "detail-type": "Scheduled Event", "detail": {}},
        )


def wait_for_port(port: int) -> None:
    while not stopping.is_set():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            stopping.wait(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--invoke-port", type=int, required=True)
    parser.add_argument("--dynamodb-port", type=int, required=True)
    parser.add_argument("--env-file", required=True)
    parser.add_argument("--table", default=os.environ.get("TABLE_NAME", "petstore"))
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    logging.getLogger("werkzeug").setLevel(logging.ERROR)

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, moto_port = server.get_host_and_port()
    endpoint = f"http://{host}:{moto_port}"
    aws = clients(endpoint)
    urls = create_resources(aws)
    variables = {
        "AWS_ENDPOINT_URL_SQS": endpoint,
        "AWS_ENDPOINT_URL_EVENTBRIDGE": endpoint,
        "EVENT_BUS_NAME": BUS,
        "WEBHOOK_QUEUE_URL": urls[DELIVERIES_QUEUE],
    }
    Path(args.env_file).write_text("".join(f"{k}={v}\n" for k, v in variables.items()))
    log(f"EventBridge and SQS (moto) on {endpoint}: bus {BUS}, queues {', '.join(urls)}")

    wait_for_port(args.invoke_port)
    mappings = [
        StreamMapping(args.invoke_port, f"http://127.0.0.1:{args.dynamodb_port}", args.table).run,
        lambda: sweep_holds(args.invoke_port),
    ]
    for name, url in urls.items():
        mappings += [QueueMapping(args.invoke_port, aws["sqs"], name, url).run] * POLLERS_PER_QUEUE
    threads = [threading.Thread(target=run, daemon=True) for run in mappings]
    for thread in threads:
        thread.start()
    log(f"the stream and the hold sweep to events, both queues to webhooks, through 127.0.0.1:{args.invoke_port}")
    stopping.wait()
    server.stop()


if __name__ == "__main__":
    main()
