//! Standard Webhooks 1.0 signatures (contract section 9).
//!
//! A receiver verifies with the specification's maintained libraries, so the
//! format is theirs to the byte: `v1,` + base64 of HMAC-SHA256, keyed by the
//! base64-decoded secret after `whsec_`, over `"{id}.{timestamp}.{body}"`;
//! one such signature per active secret, space-separated, so that during a
//! rotation a receiver holding either secret verifies.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use rand::RngCore;

/// Every secret's prefix, as the specification writes them.
pub const SECRET_PREFIX: &str = "whsec_";

/// The headers every attempt carries, named as the specification names them.
pub const HEADER_ID: &str = "webhook-id";
pub const HEADER_TIMESTAMP: &str = "webhook-timestamp";
pub const HEADER_SIGNATURE: &str = "webhook-signature";

/// A stored secret that cannot key a signature (not ours: we only store
/// secrets [`new_secret`] made, so this means a damaged item).
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("a webhook secret is not `whsec_` followed by base64")]
pub struct BadSecret;

/// A new endpoint secret: `whsec_` + base64 of 32 random bytes.
pub fn new_secret() -> String {
    let mut key = [0u8; 32];
    rand::rng().fill_bytes(&mut key);
    format!("{SECRET_PREFIX}{}", BASE64.encode(key))
}

/// The `webhook-signature` header's value: one `v1,<signature>` per secret
/// in `secrets` (the caller passes the active ones, newest first).
pub fn signature_header<S: AsRef<str>>(
    secrets: &[S],
    id: &str,
    timestamp: i64,
    body: &str,
) -> Result<String, BadSecret> {
    let signed = format!("{id}.{timestamp}.{body}");
    let signatures = secrets
        .iter()
        .map(|secret| sign(secret.as_ref(), signed.as_bytes()))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(signatures.join(" "))
}

fn sign(secret: &str, message: &[u8]) -> Result<String, BadSecret> {
    let encoded = secret.strip_prefix(SECRET_PREFIX).ok_or(BadSecret)?;
    let key = BASE64.decode(encoded).map_err(|_| BadSecret)?;
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key);
    let tag = ring::hmac::sign(&key, message);
    Ok(format!("v1,{}", BASE64.encode(tag.as_ref())))
}

#[cfg(test)]
mod tests;
