//! Free text the contract bounds: names and descriptions (contract section 1).
//!
//! Text must be what it looks like: a character that is not drawn but changes
//! what is drawn (a bidi override, a zero-width space, a byte-order mark), a
//! control character, a line or paragraph separator, or a private-use
//! character (drawn however a font decides) is refused. Which characters those
//! are comes from ICU4X's Unicode tables ([`icu_properties`]), which every
//! function links already for URL parsing; `openapi.yaml` lists the same
//! characters in its patterns, and a test holds the two together.

use super::json::{optional, required, string, JsonObject};
use super::schema_rule::{BeyondSchema, Conformance};
use super::ValidationError;
use icu_casemap::CaseMapper;
use icu_normalizer::ComposingNormalizer;
use icu_properties::props::GeneralCategory;
use icu_properties::CodePointMapData;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A pattern in `openapi.yaml` covers the refused characters up to U+FFFF;
/// those beyond it are listed in `x-refused-beyond-bmp` on every text field
/// ([`TextField`]), which the conformance run keeps out of the bodies it
/// means to be valid (the hook reads the lists from `openapi.yaml`, and
/// `text_tests.rs` holds them to these rules).
pub const RULES: &[BeyondSchema] = &[BeyondSchema {
    field: "every text field of a request body (records::TEXT_FIELDS)",
    rule: "no refused character beyond U+FFFF (listed in x-refused-beyond-bmp)",
    conformance: Conformance::Hook("bodies_without_refused_beyond_bmp"),
}];

/// What a free-text field may hold. Validation, its refusal messages and
/// `openapi.yaml`'s `pattern`, `minLength`, `maxLength` and
/// `x-refused-beyond-bmp` (checked by `text_tests.rs`) all derive from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextRule {
    /// The fewest characters (Unicode code points), counted after trimming
    /// when the rule trims.
    pub min_chars: usize,
    /// The most characters, counted likewise.
    pub max_chars: usize,
    /// Whitespace at either end is removed: the value is stored trimmed.
    pub trimmed: bool,
    /// Tabs and line breaks (LF, or CRLF) are kept; without, they are
    /// refused as every other [`hidden`] character is.
    pub line_breaks: bool,
}

impl TextRule {
    /// A name: 1–100 characters after trimming, on one line.
    pub const NAME: TextRule = TextRule {
        min_chars: 1,
        max_chars: 100,
        trimmed: true,
        line_breaks: false,
    };

    /// Free text of at most `max_chars`, kept as sent, on several lines.
    pub const fn free_text(max_chars: usize) -> TextRule {
        TextRule {
            min_chars: 0,
            max_chars,
            trimmed: false,
            line_breaks: true,
        }
    }

    /// `raw` as stored (trimmed when the rule trims), or the refusal naming
    /// `field`.
    fn check(&self, raw: &str, field: &str) -> Result<String, ValidationError> {
        let text = match self.trimmed {
            true => raw.trim(),
            false => raw,
        };
        let length = text.chars().count();
        if !(self.min_chars..=self.max_chars).contains(&length) {
            let (min, max) = (self.min_chars, self.max_chars);
            let bounds = match min {
                0 => format!("at most {max}"),
                _ => format!("{min} to {max}"),
            };
            let trimming = if self.trimmed { " after trimming" } else { "" };
            return Err(ValidationError::new(format!(
                "{field} must be {bounds} characters{trimming}, got {length}"
            )));
        }
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if !self.allows(c, chars.peek().copied()) {
                let but = if self.line_breaks {
                    " but tab, LF and CRLF"
                } else {
                    ""
                };
                return Err(ValidationError::new(format!(
                    "{field} must not contain control, format, separator or private-use \
                     characters{but}, got U+{:04X}",
                    u32::from(c)
                )));
            }
        }
        Ok(text.to_string())
    }

    /// Whether the rule lets a value hold `c` where `next` follows: no
    /// [`hidden`] character, but tabs and line breaks when it keeps them
    /// (LF, or CR only as part of CRLF, so a bare CR cannot rewrite a line
    /// where a consumer prints the text).
    pub fn allows(&self, c: char, next: Option<char>) -> bool {
        match c {
            '\t' | '\n' if self.line_breaks => true,
            '\r' if self.line_breaks => next == Some('\n'),
            c => !hidden(c),
        }
    }
}

/// A free-text property of a request body and the rule it keeps, declared
/// once, on the body type (its `TEXT`, gathered in `records::TEXT_FIELDS`):
/// the type's `parse` reads the property through it, and the tests hold
/// `openapi.yaml`'s property to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextField {
    /// As the contract names it (`description`).
    pub property: &'static str,
    pub rule: TextRule,
}

impl TextField {
    pub const fn new(property: &'static str, rule: TextRule) -> TextField {
        TextField { property, rule }
    }

    /// The property's value in `raw`, as stored, or the refusal naming it.
    pub fn check(&self, raw: &str) -> Result<String, ValidationError> {
        self.rule.check(raw, self.property)
    }

    /// The property in `body`: absent (or `null`) is `None`; otherwise a
    /// string that keeps the rule.
    pub(crate) fn optional<T: From<Checked>>(
        &self,
        body: &JsonObject,
    ) -> Result<Option<T>, ValidationError> {
        optional(body, self.property)
            .map(|value| self.of(value))
            .transpose()
    }

    /// The property in `body`, which must be there.
    pub(crate) fn required<T: From<Checked>>(
        &self,
        body: &JsonObject,
    ) -> Result<T, ValidationError> {
        self.of(required(body, self.property)?)
    }

    fn of<T: From<Checked>>(&self, value: &Value) -> Result<T, ValidationError> {
        let raw = string(value, self.property)?;
        Ok(T::from(Checked(self.check(raw)?)))
    }
}

/// Text a [`TextField`] accepted: what [`Name`] and [`Description`] are
/// made from.
pub(crate) struct Checked(String);

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

/// A pet's or category's name: text kept by [`TextRule::NAME`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Name(String);

impl Name {
    /// `raw` as a name under [`TextRule::NAME`], refused naming `field`
    /// (for names read outside a body's [`TextField`]).
    pub fn parse(raw: &str, field: &str) -> Result<Name, ValidationError> {
        TextRule::NAME.check(raw, field).map(Name)
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

/// Free text (a category's description): kept as sent, under its field's
/// [`TextRule`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Description(String);

impl Description {
    /// `raw` as `field`'s value, or the refusal naming it.
    pub fn parse(raw: &str, field: &TextField) -> Result<Description, ValidationError> {
        field.check(raw).map(Description)
    }
}

impl From<Checked> for Name {
    fn from(Checked(text): Checked) -> Name {
        Name(text)
    }
}

impl From<Checked> for Description {
    fn from(Checked(text): Checked) -> Description {
        Description(text)
    }
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
