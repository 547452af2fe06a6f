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
mod tests {
    use super::*;

    /// The specification's own example (standard-webhooks.md, "Signature scheme").
    #[test]
    fn signs_the_specification_s_published_example() {
        let header = signature_header(
            &["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            r#"{"test": 2432232314}"#,
        );
        assert_eq!(
            header.as_deref(),
            Ok("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        );
    }

    /// The reference libraries' test vector (libraries/rust/src/lib.rs, `test_sign`).
    #[test]
    fn signs_the_reference_library_s_vector() {
        let header = signature_header(
            &["whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"],
            "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
            1649367553,
            r#"{"email":"test@example.com","username":"test_user"}"#,
        );
        assert_eq!(
            header.as_deref(),
            Ok("v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=")
        );
    }

    #[test]
    fn signs_once_per_secret_space_separated_in_the_order_given() {
        let (new, old) = (new_secret(), new_secret());
        let both = signature_header(&[&new, &old], "id", 1, "{}").unwrap();
        let one = |s: &str| signature_header(&[s], "id", 1, "{}").unwrap();
        assert_eq!(both, format!("{} {}", one(&new), one(&old)));
        assert_ne!(one(&new), one(&old));
    }

    #[test]
    fn a_new_secret_is_the_prefix_and_32_random_bytes() {
        let secret = new_secret();
        let key = BASE64
            .decode(secret.strip_prefix(SECRET_PREFIX).unwrap())
            .unwrap();
        assert_eq!(key.len(), 32);
        assert_ne!(secret, new_secret());
    }

    #[test]
    fn a_damaged_secret_is_an_error_not_a_panic() {
        assert_eq!(signature_header(&["nope"], "id", 1, "{}"), Err(BadSecret));
        assert_eq!(
            signature_header(&["whsec_!!"], "id", 1, "{}"),
            Err(BadSecret)
        );
    }
}
