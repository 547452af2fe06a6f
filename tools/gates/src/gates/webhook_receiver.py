"""A webhook receiver that verifies every attempt with the Standard Webhooks
specification's own Python library (PyPI `standardwebhooks`), as a caller's
code would: never with the pet store's signing code.

    webhook-receiver.py --secret whsec_... [--secret ...] [--answers 500,500,200]

Listens on 127.0.0.1 (an ephemeral port unless --port), prints
`listening <port>` first, then one JSON line per request received:
{"webhookId", "verified": [one bool per --secret], "status", "body"}.
Answers each request with the next of --answers (the last one repeated).
The tests (tests/webhooks_delivery) and `make run`'s "try it" use it.
"""

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--secret", action="append", required=True)
    parser.add_argument("--answers", default="200")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    verifiers = [Webhook(secret) for secret in args.secret]
    answers = [int(a) for a in args.answers.split(",")]

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = self.rfile.read(length)
            headers = {name.lower(): value for name, value in self.headers.items()}
            verified = []
            for verifier in verifiers:
                try:
                    verifier.verify(body, headers)
                    verified.append(True)
                except WebhookVerificationError:
                    verified.append(False)
            status = answers.pop(0) if len(answers) > 1 else answers[0]
            line = {
                "webhookId": headers.get("webhook-id"),
                "verified": verified,
                "status": status,
                "body": body.decode("utf-8", "replace"),
            }
            print(json.dumps(line), flush=True)
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass  # stdout is the record of deliveries only

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Receiver)
    print(f"listening {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
