//! The `Idempotency-Key` a client sends with a change (contract section 4b).

use super::{BeyondSchema, Conformance, ValidationError};
use std::fmt;

/// The rules on a key that its schema cannot state ([`BeyondSchema`]).
pub const RULES: &[BeyondSchema] = &[BeyondSchema {
    field: "Idempotency-Key (header)",
    rule: "one key names one request: the same key with another request is refused",
    conformance: Conformance::Hook("unique_idempotency_keys"),
}];

/// The longest key accepted.
pub const MAX_IDEMPOTENCY_KEY_LEN: usize = 255;

/// A client's idempotency key: 1–255 printable ASCII characters (space to
/// `~`). It means something only together with the key identity that sent
/// it; the database layer stores it hashed, under that identity.
#[derive(Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// Parses the header's value as it arrived (HTTP has already dropped any
    /// spaces around it).
    pub fn parse(raw: &[u8]) -> Result<IdempotencyKey, ValidationError> {
        let printable = raw.iter().all(|b| (b' '..=b'~').contains(b));
        if raw.is_empty() || raw.len() > MAX_IDEMPOTENCY_KEY_LEN || !printable {
            return Err(ValidationError::new(format!(
                "Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY_LEN} printable ASCII characters"
            )));
        }
        // Every byte is ASCII, so this is the same text.
        Ok(IdempotencyKey(String::from_utf8_lossy(raw).into_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Keys are the client's own secrets of a sort: logs show their length only.
impl fmt::Debug for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IdempotencyKey({} characters)", self.0.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_one_to_255_printable_ascii_characters() {
        assert!(IdempotencyKey::parse(b"a").is_ok());
        assert!(IdempotencyKey::parse(b"order 7: retry ~ {x}").is_ok());
        assert!(IdempotencyKey::parse(&[b'k'; 255]).is_ok());
        for bad in [
            &b""[..],
            &[b'k'; 256],
            b"tab\there",
            b"caf\xc3\xa9",
            b"del\x7f",
        ] {
            let error = IdempotencyKey::parse(bad).err();
            assert!(
                error.is_some_and(|e| e.to_string().contains("Idempotency-Key")),
                "{bad:?}"
            );
        }
        let key = IdempotencyKey::parse(b"abc").map(|k| k.as_str().to_string());
        assert_eq!(key.ok().as_deref(), Some("abc"));
    }
}
