use super::*;
use crate::records::TEXT_FIELDS;
use serde_json::Value;
use std::collections::BTreeSet;

/// The contract as the build writes it from `openapi.yaml` (the document
/// `http::openapi` serves), read here without the edge's layer.
const OPENAPI_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/openapi.json"));

const DESCRIPTION: TextField = TextField::new("description", TextRule::free_text(500));

#[test]
fn names_are_trimmed_and_bounded() -> Result<(), ValidationError> {
    assert_eq!(Name::parse("  Rex ", "name")?.as_str(), "Rex");
    assert!(Name::parse("   ", "name").is_err());
    assert!(Name::parse(&"x".repeat(100), "name").is_ok());
    assert!(Name::parse(&"x".repeat(101), "name").is_err());
    assert!(Name::parse("a\u{7}b", "name").is_err());
    // Characters, not bytes, are counted.
    assert!(Name::parse(&"é".repeat(100), "name").is_ok());
    // Separators at either end are whitespace, trimmed like a space.
    assert_eq!(Name::parse("\u{2028}Rex\u{2029}", "name")?.as_str(), "Rex");
    Ok(())
}

#[test]
fn names_refuse_what_is_not_seen() {
    let refused = [
        "\u{0}",     // NUL (Cc)
        "\u{1b}[2J", // ESC (Cc)
        "\u{85}",    // NEXT LINE (Cc)
        "\u{202e}",  // RIGHT-TO-LEFT OVERRIDE (Cf)
        "\u{2066}",  // LEFT-TO-RIGHT ISOLATE (Cf)
        "\u{2069}",  // POP DIRECTIONAL ISOLATE (Cf)
        "\u{200b}",  // ZERO WIDTH SPACE (Cf)
        "\u{200d}",  // ZERO WIDTH JOINER (Cf)
        "\u{feff}",  // BYTE ORDER MARK (Cf)
        "\u{ad}",    // SOFT HYPHEN (Cf)
        "\u{e0041}", // TAG LATIN CAPITAL LETTER A (Cf, outside the BMP)
        "\u{2028}",  // LINE SEPARATOR (Zl)
        "\u{2029}",  // PARAGRAPH SEPARATOR (Zp)
        "\u{e000}",  // private use (Co)
        "\u{f0000}", // private use, plane 15 (Co)
    ];
    for hidden in refused {
        let name = format!("Dogs{hidden}x");
        assert!(Name::parse(&name, "name").is_err(), "{name:?} was accepted");
    }
    for seen in ["Dogs", "Ｄｏｇｓ", "Straße", "Hunde 🐶", "كلاب", "犬"] {
        assert!(Name::parse(seen, "name").is_ok(), "{seen:?} was refused");
    }
}

#[test]
fn descriptions_keep_tabs_and_line_breaks_only() {
    for kept in ["", "a\tb", "a\nb", "a\r\nb", "Ｆｕｌｌ width", "\n\n"] {
        assert!(
            Description::parse(kept, &DESCRIPTION).is_ok(),
            "{kept:?} was refused"
        );
    }
    let refused = [
        "a\0b", "a\u{1b}b", "a\rb", "a\r", "\u{202e}", "\u{200b}", "\u{2028}", "\u{e000}",
    ];
    for text in refused {
        assert!(
            Description::parse(text, &DESCRIPTION).is_err(),
            "{text:?} was accepted"
        );
    }
}

fn folded(raw: &str) -> String {
    Name::parse(raw, "name")
        .map(|n| n.folded())
        .unwrap_or_default()
}

#[test]
fn names_fold_under_nfkc_and_case() {
    assert_eq!(folded("Dogs"), "dogs");
    assert_eq!(folded("DOGS"), "dogs");
    assert_eq!(folded("Ｄｏｇｓ"), "dogs");
    assert_eq!(folded("Straße"), folded("STRASSE"));
    assert_eq!(folded("ﬁsh"), "fish");
    assert_eq!(folded("Ǆ"), folded("ǆ"));
    assert_ne!(folded("Dogs"), folded("Dog"));
}

#[test]
fn ascii_names_keep_the_claims_made_before() -> Result<(), ValidationError> {
    let ascii: String = (' '..='~').collect();
    let name = Name::parse(&ascii[1..], "name")?;
    assert_eq!(name.folded(), name.legacy_folded());
    Ok(())
}

#[test]
fn long_folded_names_are_hashed_to_a_bounded_key() -> Result<(), ValidationError> {
    // U+FDFA is one character that NFKC makes 18.
    let long = Name::parse(&"\u{fdfa}".repeat(100), "name")?;
    let key = long.folded();
    assert!(key.starts_with("sha256:") && key.len() == 71, "{key}");
    let other = Name::parse(&"\u{fdfa}".repeat(99), "name")?;
    assert_ne!(key, other.folded());
    Ok(())
}

fn every_char() -> impl Iterator<Item = char> {
    (0..=0x10ffff).filter_map(char::from_u32)
}

/// The runs of code points for which `is` holds.
fn runs(is: impl Fn(char) -> bool) -> Vec<(u32, u32)> {
    let mut found: Vec<(u32, u32)> = Vec::new();
    for c in every_char().filter(|&c| is(c)).map(u32::from) {
        match found.last_mut() {
            Some(last) if last.1 + 1 == c => last.1 = c,
            _ => found.push((c, c)),
        }
    }
    found
}

/// A regex class body of the BMP runs, as `\uXXXX` escapes (ECMA-262,
/// Python's `re` and the regex crate read them alike).
fn class(runs: &[(u32, u32)]) -> String {
    runs.iter()
        .filter(|(first, _)| *first <= 0xffff)
        .map(|&(first, last)| match first == last {
            true => format!("\\u{first:04x}"),
            false => format!("\\u{first:04x}-\\u{last:04x}"),
        })
        .collect()
}

/// The runs beyond U+FFFF, as openapi.yaml's `x-refused-beyond-bmp` lists
/// them: no pattern says them so that every reader agrees (ECMA-262 without
/// the `u` flag sees surrogate pairs, Python and Rust code points).
fn beyond_bmp(runs: &[(u32, u32)]) -> Vec<String> {
    runs.iter()
        .filter(|(first, _)| *first > 0xffff)
        .map(|&(first, last)| match first == last {
            true => format!("U+{first:04X}"),
            false => format!("U+{first:04X}-U+{last:04X}"),
        })
        .collect()
}

/// `rule` as `openapi.yaml`'s `pattern` states it (up to U+FFFF). Trimmed
/// text may be longer than its rule allows before trimming, so its pattern
/// bounds the length between the whitespace at either end; untrimmed text
/// is bounded by `maxLength` instead (a CRLF is two characters, which a
/// repeat count could not say).
fn pattern(rule: &TextRule) -> String {
    let hidden = class(&runs(|c| !rule.allows(c, None)));
    let inner = match rule.line_breaks {
        true => format!("(?:[^{hidden}]|\\r\\n)"),
        false => format!("[^{hidden}]"),
    };
    if !rule.trimmed {
        return format!("^{inner}*$");
    }
    let space = class(&runs(char::is_whitespace));
    let edge = format!("[^{space}{hidden}]");
    let (min, max) = (rule.min_chars, rule.max_chars);
    let text = match (min, max) {
        (_, 0) => String::new(),
        (_, 1) => edge.clone(),
        (0 | 1, _) => format!("{edge}(?:{inner}{{0,{}}}{edge})?", max - 2),
        _ => format!("{edge}{inner}{{{},{}}}{edge}", min - 2, max - 2),
    };
    let text = match min {
        0 => format!("(?:{text})?"),
        _ => text,
    };
    format!("^[{space}]*{text}[{space}]*$")
}

/// The `minLength` and `maxLength` `openapi.yaml` states for `rule` (what
/// the pattern does not say).
fn lengths(rule: &TextRule) -> (Value, Value) {
    let min = match rule.min_chars {
        0 => Value::Null,
        min => Value::from(min),
    };
    let max = match rule.trimmed {
        true => Value::Null,
        false => Value::from(rule.max_chars),
    };
    (min, max)
}

/// As YAML's double-quoted scalar, to paste into openapi.yaml.
fn yaml(pattern: &str) -> String {
    format!("\"{}\"", pattern.replace('\\', "\\\\"))
}

fn document() -> Value {
    serde_json::from_str(OPENAPI_JSON).unwrap_or_default()
}

/// The schemas `openapi.yaml`'s operations take as JSON bodies, by name.
fn request_bodies(document: &Value) -> BTreeSet<String> {
    let operations = document["paths"].as_object().into_iter().flatten();
    let operations = operations.flat_map(|(_, item)| item.as_object().into_iter().flatten());
    operations
        .filter_map(|(_, operation)| {
            let schema = &operation["requestBody"]["content"]["application/json"]["schema"];
            schema["$ref"]
                .as_str()?
                .rsplit('/')
                .next()
                .map(String::from)
        })
        .collect()
}

/// openapi.yaml refuses exactly what each text field's rule refuses: its
/// `pattern` is the rule's rendering (printed to paste when it differs), its
/// lengths and `x-refused-beyond-bmp` the rule's, property by property.
#[test]
fn openapi_text_properties_are_their_fields_rules() {
    let document = document();
    let schemas = &document["components"]["schemas"];
    for &(schema, fields) in TEXT_FIELDS {
        for TextField { property, rule } in fields {
            let documented = &schemas[schema]["properties"][property];
            let named = format!("openapi.yaml, {schema}.{property}");
            assert!(documented.is_object(), "{named}: no such property");
            let want = pattern(rule);
            let pasted = yaml(&want);
            assert!(
                documented["pattern"] == want.as_str(),
                "{named}: pattern {pasted}"
            );
            let (min, max) = lengths(rule);
            assert_eq!(documented["minLength"], min, "{named}: minLength");
            assert_eq!(documented["maxLength"], max, "{named}: maxLength");
            let beyond = Value::from(beyond_bmp(&runs(|c| !rule.allows(c, None))));
            let listed = &documented["x-refused-beyond-bmp"];
            assert_eq!(listed, &beyond, "{named}: x-refused-beyond-bmp {beyond}");
        }
    }
}

/// No text reaches the service undeclared: every body schema is in
/// `TEXT_FIELDS`, and each of its free-text properties (a string with no
/// `format` or `enum`) and each property refusing characters beyond U+FFFF
/// is a declared field.
#[test]
fn every_text_property_of_a_body_is_a_declared_field() {
    let document = document();
    let declared: BTreeSet<(&str, &str)> = TEXT_FIELDS
        .iter()
        .flat_map(|(schema, fields)| fields.iter().map(|field| (*schema, field.property)))
        .collect();
    let listed: BTreeSet<&str> = TEXT_FIELDS.iter().map(|(schema, _)| *schema).collect();
    for schema in request_bodies(&document) {
        assert!(
            listed.contains(schema.as_str()),
            "openapi.yaml's body {schema} is not in records::TEXT_FIELDS: list it with its TEXT"
        );
        let properties = document["components"]["schemas"][&schema]["properties"].as_object();
        for (property, documented) in properties.into_iter().flatten() {
            let text = documented["type"] == "string"
                && documented["format"].is_null()
                && documented["enum"].is_null();
            let refusing = !documented["x-refused-beyond-bmp"].is_null();
            assert!(
                !(text || refusing) || declared.contains(&(schema.as_str(), property.as_str())),
                "openapi.yaml, {schema}.{property} is free text no TextField declares: add it \
                 to the body type's TEXT (shared/src/records/) and read it through it"
            );
        }
    }
    assert!(declared.len() >= 4, "the fields were read");
}

/// The rendering means what each rule says, character by character in the
/// BMP and at its lengths.
#[test]
fn the_rendered_patterns_accept_what_the_fields_accept() {
    let mut rules: Vec<TextField> = TEXT_FIELDS
        .iter()
        .flat_map(|(_, f)| f.iter().copied())
        .collect();
    rules.dedup_by_key(|field| field.rule);
    for field in rules {
        let TextField { property, rule } = field;
        let rendered = regex::Regex::new(&pattern(&rule)).unwrap_or_else(|e| panic!("{e}"));
        let (_, max) = lengths(&rule);
        let fits = |text: &str| {
            max.as_u64()
                .is_none_or(|max| text.chars().count() as u64 <= max)
        };
        let agree = |text: String| {
            let accepted = field.check(&text).is_ok();
            let matched = rendered.is_match(&text) && fits(&text);
            assert_eq!(matched, accepted, "{property}: {text:?}");
        };
        for c in every_char().filter(|&c| u32::from(c) <= 0xffff) {
            for text in [format!("a{c}b"), format!("{c}\n"), c.to_string()] {
                agree(text);
            }
        }
        let at = |n: usize| "a".repeat(n);
        for n in [
            rule.min_chars.saturating_sub(1),
            rule.min_chars,
            rule.max_chars,
            rule.max_chars + 1,
        ] {
            agree(at(n));
            agree(format!(" {} ", at(n)));
        }
    }
}
