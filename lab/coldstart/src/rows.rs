//! The rows the harness measures: each function's bootstrap with the
//! request it is sent and the variables template.yaml gives it, and the
//! floor's three.

use crate::figures::FLOOR;
use crate::lambda_env::{Event, Function};

/// The functions measured, each from `target/release/<name>`: a new function
/// is an entry here.
pub const FUNCTIONS: [Function; 5] = [
    Function {
        name: "pets",
        label: "pets",
        event: Event::Http {
            method: "GET",
            path: "/pets",
            query: "limit=20",
        },
        keyed: true,
        env: &[],
    },
    Function {
        name: "store",
        label: "store",
        event: Event::Http {
            method: "GET",
            path: "/store/inventory",
            query: "limit=20",
        },
        keyed: true,
        env: &[],
    },
    // Its HTTP side, with the template's variables: where Lambda runs it
    // (LAMBDA_TASK_ROOT set) it refuses to start without its KMS key, which
    // a list never calls (a secret is sealed or opened on a write or an
    // attempt); with the queue's URL it builds its queue side (the SQS
    // client and the attempts' HTTP client) at init, as deployed.
    Function {
        name: "webhooks",
        label: "webhooks",
        event: Event::Http {
            method: "GET",
            path: "/webhooks",
            query: "limit=20",
        },
        keyed: true,
        env: &[
            (
                "WEBHOOK_QUEUE_URL",
                "https://sqs.us-east-1.amazonaws.com/000000000000/petstore-bench-deliveries",
            ),
            (
                "WEBHOOK_SECRETS_KEY",
                "arn:aws:kms:us-east-1:000000000000:key/00000000-0000-0000-0000-000000000000",
            ),
        ],
    },
    // The same pets binary with no key: its first invocation makes one
    // DynamoDB call (the source's count) as the floor's does, where a keyed
    // list makes three in two round trips (the key's look-up, then its count
    // beside the read: contract section 4): so this row shows what init and
    // the wrapper cost beside the floor, apart from those calls.
    Function {
        name: "pets",
        label: "pets-keyless",
        event: Event::Http {
            method: "GET",
            path: "/pets",
            query: "limit=20",
        },
        keyed: false,
        env: &[],
    },
    Function {
        name: "events",
        label: "events",
        event: Event::EmptyStreamBatch,
        keyed: false,
        // It fans out to the webhooks' deliveries queue too (no call for an
        // empty batch, but the queue's URL is required at start).
        env: &[
            ("EVENT_BUS_NAME", "petstore-bench"),
            (
                "WEBHOOK_QUEUE_URL",
                "https://sqs.us-east-1.amazonaws.com/000000000000/petstore-bench-deliveries",
            ),
            ("ORIGIN_SECRET", ""),
        ],
    },
];

/// The floor's one GetItem, whatever the request.
pub const FLOOR_REQUEST: Function = Function {
    name: FLOOR,
    label: FLOOR,
    keyed: false,
    event: Event::Http {
        method: "GET",
        path: "/floor",
        query: "",
    },
    env: &[],
};

/// The same floor writing a count (one `UpdateItem`) where the floor reads:
/// what a first response that must count costs at least, DynamoDB's write
/// included (DynamoDB Local writes more slowly than it reads, beyond the
/// 0.3 ms or so DynamoDB itself takes).
pub const FLOOR_WRITE_REQUEST: Function = Function {
    name: FLOOR,
    label: "floor-write",
    env: &[("FLOOR_CALL", "update")],
    ..FLOOR_REQUEST
};

/// The floor making a keyed page's DynamoDB calls, as contract section 4
/// leaves them: the key's look-up on the first request, then the count
/// beside the page's query (a warm request: those two alone). The least
/// `pets` can do for its request: `pets` over this row is the pet store's
/// own code, this row over the floor is DynamoDB's part (DynamoDB Local's
/// here).
pub const FLOOR_KEYED_REQUEST: Function = Function {
    name: FLOOR,
    label: "floor-keyed",
    env: &[("FLOOR_CALL", "keyed")],
    ..FLOOR_REQUEST
};
