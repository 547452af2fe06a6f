use super::*;
use crate::http::openapi::OPENAPI_JSON;
use serde_json::Value;

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
        assert!(Description::parse(kept).is_ok(), "{kept:?} was refused");
    }
    let refused = [
        "a\0b", "a\u{1b}b", "a\rb", "a\r", "\u{202e}", "\u{200b}", "\u{2028}", "\u{e000}",
    ];
    for text in refused {
        assert!(Description::parse(text).is_err(), "{text:?} was accepted");
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

/// openapi.yaml's name pattern, made from the rules: trimmed whitespace at
/// either end, 1–100 characters between, none of them hidden (in the BMP).
fn name_pattern() -> String {
    let space = class(&runs(char::is_whitespace));
    let hidden = class(&runs(hidden));
    let edge = format!("[^{space}{hidden}]");
    format!("^[{space}]*{edge}(?:[^{hidden}]{{0,98}}{edge})?[{space}]*$")
}

/// openapi.yaml's description pattern: no hidden character but tab, LF and
/// CRLF (in the BMP).
fn description_pattern() -> String {
    let hidden = class(&runs(|c| hidden(c) && c != '\t' && c != '\n'));
    format!("^(?:[^{hidden}]|\\r\\n)*$")
}

/// As YAML's double-quoted scalar, to paste into openapi.yaml.
fn yaml(pattern: &str) -> String {
    format!("\"{}\"", pattern.replace('\\', "\\\\"))
}

/// openapi.yaml refuses exactly the characters the service refuses: its
/// patterns are these rules' rendering (printed to paste when they differ),
/// and `x-refused-beyond-bmp` lists the rest.
#[test]
fn openapi_patterns_are_the_text_rules() {
    let document: Value = serde_json::from_str(OPENAPI_JSON).unwrap_or_default();
    let beyond = Value::from(beyond_bmp(&runs(hidden)));
    let texts = [
        ("NewPet", "name", name_pattern()),
        ("PetPatch", "name", name_pattern()),
        ("NewCategory", "name", name_pattern()),
        ("NewCategory", "description", description_pattern()),
    ];
    for (schema, property, want) in texts {
        let documented = &document["components"]["schemas"][schema]["properties"][property];
        assert!(
            documented["pattern"] == want.as_str(),
            "{schema}.{property}: {}",
            yaml(&want)
        );
        assert_eq!(
            documented["x-refused-beyond-bmp"], beyond,
            "{schema}.{property}: {beyond}"
        );
    }
}

/// The rendering means what the rules say, character by character in the BMP.
#[test]
fn the_rendered_patterns_accept_what_the_parsers_accept() {
    let compile = |pattern: String| regex::Regex::new(&pattern).unwrap_or_else(|e| panic!("{e}"));
    let name = compile(name_pattern());
    let description = compile(description_pattern());
    for c in every_char().filter(|&c| u32::from(c) <= 0xffff) {
        for text in [format!("a{c}b"), c.to_string()] {
            let accepted = Name::parse(&text, "name").is_ok();
            assert_eq!(
                name.is_match(&text),
                accepted,
                "name, U+{:04X}",
                u32::from(c)
            );
        }
        for text in [format!("a{c}b"), format!("{c}\n"), c.to_string()] {
            let accepted = Description::parse(&text).is_ok();
            assert_eq!(
                description.is_match(&text),
                accepted,
                "description, U+{:04X}",
                u32::from(c)
            );
        }
    }
}
