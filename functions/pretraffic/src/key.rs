//! The key the keyed checks send: made by the check itself for each run, a
//! free customer key that is in no key list and expires within the hour
//! ([`petstore::ratelimit::keys::NewApiKey::short_lived`]).
//!
//! Why not a stored secret: a key kept for the hook would be a long-lived
//! secret to rotate and to leak. This one exists only while a check runs;
//! the hook's IAM lets it put only a customer key of exactly this shape
//! (template.yaml's PreTrafficFunction), and the key's `expiresAt` ends it
//! twice over: the service's look-up refuses it from then on, and the
//! table's TTL deletes it.

use chrono::{Duration, Utc};
use petstore::ratelimit::keys::{KeyStore, NewApiKey};

/// How long a check's key lives: far longer than any run of the checks.
pub const LIFETIME: Duration = Duration::hours(1);

/// The `name` the key is stored with, so whoever reads the table knows it.
pub const NAME: &str = "pre-traffic check (short-lived; expires by itself)";

/// A fresh key in `table`, or why none was made.
pub async fn mint(client: aws_sdk_dynamodb::Client, table: &str) -> Result<String, String> {
    let now = Utc::now();
    KeyStore::new(client, table)
        .create(NewApiKey::short_lived(NAME, now + LIFETIME), now)
        .await
        .map(|issued| issued.key)
        .map_err(|e| format!("making the check's key in {table}: {e}"))
}
