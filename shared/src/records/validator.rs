//! Validators and preconditions (contract 4c, RFC 9110 sections 8.8.3 and
//! 13): the `ETag` of one record, and the `If-Match` / `If-None-Match` a
//! request names.
//!
//! A record's validator is a hash of its JSON exactly as the API sends it,
//! so it is derived from the attributes the record is served from and from
//! nothing else: whoever changed the stored record (this release, the last
//! one serving beside it, an order moving a stock level, a migration's
//! backfill) changed the validator, with no version attribute that an
//! older writer would fail to bump. A write under `If-Match` is then held
//! on those attributes still being as read (`db::Changes::as_read`).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::Serialize;
use sha2::{Digest, Sha256};

/// How many bytes of the SHA-256 a validator keeps: 96 bits, far beyond any
/// chance of two states of one record meeting, in 16 characters.
const VALIDATOR_BYTES: usize = 12;

/// A strong entity tag, as sent in `ETag`: quoted, opaque to clients.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ETag(String);

impl ETag {
    /// The validator of `record`'s JSON as the API sends it.
    pub fn of<T: Serialize>(record: &T) -> Result<ETag, serde_json::Error> {
        Ok(ETag::of_json(&serde_json::to_vec(record)?))
    }

    /// The validator of a record's JSON body, as sent.
    pub fn of_json(body: &[u8]) -> ETag {
        let hash = Sha256::digest(body);
        ETag(format!(
            "\"{}\"",
            URL_SAFE_NO_PAD.encode(&hash[..VALIDATOR_BYTES])
        ))
    }

    /// The header value, quotes included.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What `If-Match` asks of the record a change is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IfMatch {
    /// `*`: that it exists (which every change asks anyway: 404 otherwise).
    Any,
    /// That its current validator is one of these (strong comparison: a weak
    /// tag `W/"..."`, or a value that is no entity tag, matches nothing).
    Tags(Vec<String>),
}

impl IfMatch {
    /// The precondition of the request's `If-Match` header values (each may
    /// be a comma-separated list); `None` without the header.
    pub fn parse<'a>(values: impl IntoIterator<Item = &'a [u8]>) -> Option<IfMatch> {
        let mut tags = Vec::new();
        let mut seen = false;
        for value in values {
            seen = true;
            let value = String::from_utf8_lossy(value);
            for tag in value.split(',').map(str::trim).filter(|t| !t.is_empty()) {
                if tag == "*" {
                    return Some(IfMatch::Any);
                }
                tags.push(tag.to_string());
            }
        }
        seen.then_some(IfMatch::Tags(tags))
    }

    /// Whether a record whose validator is `current` meets it.
    pub fn matches(&self, current: &ETag) -> bool {
        match self {
            IfMatch::Any => true,
            IfMatch::Tags(tags) => tags.iter().any(|tag| tag == current.as_str()),
        }
    }
}

/// Whether `If-None-Match` (its header values) names `current`, so that a
/// `GET` answers 304: `*`, or any listed tag, compared weakly (RFC 9110,
/// 13.1.2: `W/"x"` names `"x"` too).
pub fn none_match_names<'a>(values: impl IntoIterator<Item = &'a [u8]>, current: &ETag) -> bool {
    values.into_iter().any(|value| {
        String::from_utf8_lossy(value)
            .split(',')
            .map(str::trim)
            .any(|tag| tag == "*" || tag.trim_start_matches("W/") == current.as_str())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_validator_is_the_quoted_hash_of_the_json_sent() -> Result<(), serde_json::Error> {
        let record = serde_json::json!({"id": 1, "name": "Rex"});
        let tag = ETag::of(&record)?;
        assert_eq!(tag, ETag::of_json(br#"{"id":1,"name":"Rex"}"#));
        assert_eq!(tag.as_str().len(), 18);
        assert!(tag.as_str().starts_with('"') && tag.as_str().ends_with('"'));
        assert_ne!(
            tag,
            ETag::of(&serde_json::json!({"id": 1, "name": "Rex2"}))?
        );
        Ok(())
    }

    #[test]
    fn if_match_compares_strongly_and_star_means_any() {
        let tag = ETag::of_json(b"{}");
        let header = format!("\"other\", {}", tag.as_str());
        assert!(IfMatch::parse([header.as_bytes()]).is_some_and(|m| m.matches(&tag)));
        assert_eq!(IfMatch::parse([b"*".as_slice()]), Some(IfMatch::Any));
        let weak = format!("W/{}", tag.as_str());
        assert!(IfMatch::parse([weak.as_bytes()]).is_some_and(|m| !m.matches(&tag)));
        assert!(IfMatch::parse([b"garbage".as_slice()]).is_some_and(|m| !m.matches(&tag)));
        assert_eq!(IfMatch::parse(std::iter::empty()), None);
    }

    #[test]
    fn if_none_match_compares_weakly() {
        let tag = ETag::of_json(b"{}");
        let weak = format!("W/{}", tag.as_str());
        assert!(none_match_names([weak.as_bytes()], &tag));
        assert!(none_match_names([b"*".as_slice()], &tag));
        assert!(!none_match_names([b"\"x\"".as_slice()], &tag));
    }
}
