//! Free text the contract bounds: names and descriptions (contract section 1).
//!
//! Text must be what it looks like: a character that is not drawn but changes
//! what is drawn (a bidi override, a zero-width space, a byte-order mark), a
//! control character, a line or paragraph separator, or a private-use
//! character (drawn however a font decides) is refused. Which characters those
//! are comes from ICU4X's Unicode tables ([`icu_properties`]), which every
//! function links already for URL parsing; `openapi.yaml` lists the same
//! characters in its patterns, and a test holds the two together.

use super::schema_rule::{BeyondSchema, Conformance};
use super::ValidationError;
use icu_casemap::CaseMapper;
use icu_normalizer::ComposingNormalizer;
use icu_properties::props::GeneralCategory;
use icu_properties::CodePointMapData;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A pattern in `openapi.yaml` covers the refused characters up to U+FFFF;
/// those beyond it are listed in `x-refused-beyond-bmp`, which the
/// conformance run keeps out of the bodies it means to be valid.
pub const RULES: &[BeyondSchema] = &[BeyondSchema {
    field: "NewPet.name, NewCategory.name, NewCategory.description",
    rule: "no refused character beyond U+FFFF (listed in x-refused-beyond-bmp)",
    conformance: Conformance::Hook("bodies_without_refused_beyond_bmp"),
}];

/// Whether `c` is refused in names: a control (Cc), format (Cf), line or
/// paragraph separator (Zl, Zp) or private-use (Co) character.
pub(crate) fn hidden(c: char) -> bool {
    matches!(
        CodePointMapData::<GeneralCategory>::new().get(c),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
            | GeneralCategory::PrivateUse
    )
}

/// The longest name key kept as it is; a longer one is hashed, so the name
/// claim's partition key stays far below DynamoDB's 2,048 bytes (NFKC may
/// expand one character to 18, e.g. U+FDFA).
const MAX_PLAIN_KEY_BYTES: usize = 512;

/// A pet's or category's name: 1–100 characters after trimming, none of them
/// [`hidden`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Name(String);

impl Name {
    pub fn parse(raw: &str, field: &str) -> Result<Name, ValidationError> {
        let trimmed = raw.trim();
        let length = trimmed.chars().count();
        if !(1..=100).contains(&length) {
            return Err(ValidationError::new(format!(
                "{field} must be 1 to 100 characters after trimming, got {length}"
            )));
        }
        if let Some(c) = trimmed.chars().find(|&c| hidden(c)) {
            return Err(ValidationError::new(format!(
                "{field} must not contain control, format, separator or private-use characters, got U+{:04X}",
                u32::from(c)
            )));
        }
        Ok(Name(trimmed.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The form category names are unique in: NFKC, full case folding, NFKC
    /// again (case folding can undo a normalization), so "Dogs", "DOGS" and
    /// full-width "Ｄｏｇｓ" are one name. For ASCII this is the lower case,
    /// the form claims were made in before. Hashed when long (see
    /// [`MAX_PLAIN_KEY_BYTES`]).
    pub fn folded(&self) -> String {
        let nfkc = ComposingNormalizer::new_nfkc();
        let normalized = nfkc.normalize(&self.0);
        let case_folded = CaseMapper::new().fold_string(&normalized);
        let folded = nfkc.normalize(&case_folded).into_owned();
        if folded.len() <= MAX_PLAIN_KEY_BYTES {
            return folded;
        }
        let digest = Sha256::digest(folded.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("sha256:{hex}")
    }

    /// The form claims were made in before names were compared under NFKC:
    /// the lower case. It differs from [`Name::folded`] only for some
    /// non-ASCII names stored before; their claims are found under it.
    pub fn legacy_folded(&self) -> String {
        self.0.to_lowercase()
    }
}

/// Whether `description` may hold `c` where `next` follows: what a name may
/// hold, plus tabs and line breaks (LF, or CR only as part of CRLF, so a bare
/// CR cannot rewrite a line where a consumer prints the text).
fn description_allows(c: char, next: Option<char>) -> bool {
    match c {
        '\t' | '\n' => true,
        '\r' => next == Some('\n'),
        c => !hidden(c),
    }
}

/// A category description: at most 500 characters, none of them [`hidden`]
/// but tabs and line breaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Description(String);

impl Description {
    pub fn parse(raw: &str) -> Result<Description, ValidationError> {
        let length = raw.chars().count();
        if length > 500 {
            return Err(ValidationError::new(format!(
                "description must be at most 500 characters, got {length}"
            )));
        }
        let mut chars = raw.chars().peekable();
        while let Some(c) = chars.next() {
            if !description_allows(c, chars.peek().copied()) {
                return Err(ValidationError::new(format!(
                    "description must not contain control, format, separator or private-use characters \
                     but tab, LF and CRLF, got U+{:04X}",
                    u32::from(c)
                )));
            }
        }
        Ok(Description(raw.to_string()))
    }
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
