//! A crate's layers, as its root file's documentation declares them, and
//! the references that run up them.
//!
//! The table is the first fenced block after a `# Layers` heading in the
//! root file's `//!` documentation: a line per layer, the top one first,
//! each line the names of the root's modules on it (`crate` for the root
//! file's own items). A file may refer only to modules on lines below its
//! module's own: never up, and never across its line to a module beside it.
//! Every module the root declares must be on a line, so a new one is
//! placed before it is used. A crate without the heading has no layers.

use crate::references::Reference;
use crate::tree::Crate;
use std::path::PathBuf;

/// The name in the table of the root file's own items.
pub const ROOT: &str = "crate";

/// The layers, the top one first.
#[derive(Debug, PartialEq, Eq)]
pub struct Layers {
    lines: Vec<Vec<String>>,
}

/// A reference from a module to one on its own line or above it.
#[derive(Debug)]
pub struct UpImport<'r> {
    pub reference: &'r Reference,
    /// The modules of the two files, as the table names them.
    pub from: String,
    pub to: String,
    /// Their lines in the table, 1 for the top one.
    pub from_line: usize,
    pub to_line: usize,
}

impl Layers {
    /// The table in `krate`'s root documentation, if it has one; an error
    /// when the table is malformed or leaves a module out.
    pub fn of(krate: &Crate) -> Result<Option<Layers>, String> {
        let Some(root) = krate.files.iter().find(|f| f.module.is_empty()) else {
            return Ok(None);
        };
        let shown = root.path.display();
        let doc = inner_doc(&root.syntax);
        let Some(heading) = doc.iter().position(|line| line.trim() == "# Layers") else {
            return Ok(None);
        };
        let mut rest = doc[heading + 1..].iter();
        if !rest.any(|line| line.trim().starts_with("```")) {
            return Err(format!(
                "{shown}: `# Layers` is followed by no fenced table"
            ));
        }
        let lines: Vec<Vec<String>> = rest
            .take_while(|line| !line.trim().starts_with("```"))
            .map(|line| line.split_whitespace().map(String::from).collect())
            .filter(|names: &Vec<String>| !names.is_empty())
            .collect();
        let layers = Layers { lines };
        let declared: Vec<&String> = krate
            .files
            .iter()
            .filter(|f| f.module.len() == 1)
            .map(|f| &f.module[0])
            .collect();
        let mut seen = Vec::new();
        for name in layers.lines.iter().flatten() {
            if name != ROOT && !declared.contains(&name) {
                return Err(format!(
                    "{shown}: `{name}` in the layers is no module of the crate"
                ));
            }
            if seen.contains(&name) {
                return Err(format!("{shown}: `{name}` is on two lines of the layers"));
            }
            seen.push(name);
        }
        for name in declared {
            if !seen.contains(&name) {
                return Err(format!(
                    "{shown}: module `{name}` is on no line of the layers: place it"
                ));
            }
        }
        Ok(Some(layers))
    }

    /// The line (1 for the top one) of the table `name` is on.
    fn line_of(&self, name: &str) -> Option<usize> {
        self.lines
            .iter()
            .position(|line| line.iter().any(|n| n == name))
            .map(|i| i + 1)
    }

    /// Every reference in `references` that does not run down.
    pub fn up_imports<'r>(&self, krate: &Crate, references: &'r [Reference]) -> Vec<UpImport<'r>> {
        let unit = |file: &PathBuf| {
            let module = krate.module_of(file)?;
            Some(module.first().map_or(ROOT, String::as_str).to_string())
        };
        let mut found = Vec::new();
        for reference in references {
            let (Some(from), Some(to)) = (unit(&reference.from), unit(&reference.to)) else {
                continue;
            };
            if from == to {
                continue;
            }
            let (Some(from_line), Some(to_line)) = (self.line_of(&from), self.line_of(&to)) else {
                continue;
            };
            if to_line <= from_line {
                found.push(UpImport {
                    reference,
                    from,
                    to,
                    from_line,
                    to_line,
                });
            }
        }
        found
    }
}

/// The lines of a file's `//!` documentation (`#![doc = "..."]`).
fn inner_doc(file: &syn::File) -> Vec<String> {
    file.attrs
        .iter()
        .filter(|attr| matches!(attr.style, syn::AttrStyle::Inner(_)))
        .filter_map(|attr| match &attr.meta {
            syn::Meta::NameValue(nv) if nv.path.is_ident("doc") => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .flat_map(|text| text.lines().map(String::from).collect::<Vec<_>>())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::references::references;

    const TABLE: &str = "//! A crate.\n//!\n//! # Layers\n//!\n//! ```text\n//! edge\n//! crate\n//! store\n//! records clock\n//! ```\n";

    /// A crate of `files` (`lib.rs` first) in a directory of its own.
    fn load(name: &str, files: &[(&str, &str)]) -> Crate {
        let dir = std::env::temp_dir().join(format!("layers-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, text) in files {
            let path = dir.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        Crate::load(&dir.join("lib.rs")).unwrap()
    }

    /// (from, to, path) of each up-import.
    fn up(krate: &Crate) -> Vec<(String, String, String)> {
        let layers = Layers::of(krate).unwrap().expect("a table");
        let found = references(krate);
        let mut up: Vec<_> = layers
            .up_imports(krate, &found)
            .iter()
            .map(|u| (u.from.clone(), u.to.clone(), u.reference.path.clone()))
            .collect();
        up.sort();
        up
    }

    fn lib(modules: &str, code: &str) -> String {
        format!("{TABLE}{modules}{code}")
    }

    const MODULES: &str = "mod clock;\nmod edge;\nmod records;\nmod store;\n";

    #[test]
    fn references_down_the_table_pass() {
        let root = lib(MODULES, "pub struct App(store::Store);\n");
        let krate = load(
            "down",
            &[
                ("lib.rs", &root),
                (
                    "edge.rs",
                    "use crate::App;\nfn f(_: crate::records::Pet) {}\n",
                ),
                (
                    "store/mod.rs",
                    "mod keys;\npub struct Store(crate::records::Pet);\n",
                ),
                (
                    "store/keys.rs",
                    "use super::Store;\nuse crate::clock::now;\n",
                ),
                ("records.rs", "pub struct Pet;\n"),
                ("clock.rs", "pub fn now() {}\n"),
            ],
        );
        assert_eq!(up(&krate), vec![]);
    }

    #[test]
    fn a_reference_up_or_across_a_line_is_caught() {
        let root = lib(MODULES, "fn client() {\n    edge::gate();\n}\n");
        let krate = load(
            "up",
            &[
                ("lib.rs", &root),
                ("edge.rs", "pub fn gate() {}\n"),
                ("store/mod.rs", "mod keys;\n"),
                ("store/keys.rs", "fn f() -> crate::App {\n    todo!()\n}\n"),
                ("records.rs", "use crate::clock::now;\npub struct Pet;\n"),
                ("clock.rs", "pub fn now() {}\n"),
            ],
        );
        assert_eq!(
            up(&krate),
            vec![
                ("crate".into(), "edge".into(), "edge::gate".into()),
                ("records".into(), "clock".into(), "crate::clock::now".into()),
                ("store".into(), "crate".into(), "crate::App".into()),
            ]
        );
    }

    #[test]
    fn a_module_left_out_or_unknown_is_an_error() {
        let left_out = load(
            "left-out",
            &[
                ("lib.rs", &lib(MODULES, "mod extra;\n")),
                ("edge.rs", ""),
                ("store.rs", ""),
                ("records.rs", ""),
                ("clock.rs", ""),
                ("extra.rs", ""),
            ],
        );
        let error = Layers::of(&left_out).unwrap_err();
        assert!(error.contains("`extra` is on no line"), "{error}");
        let unknown = load(
            "unknown",
            &[
                ("lib.rs", &lib("mod clock;\nmod edge;\nmod records;\n", "")),
                ("edge.rs", ""),
                ("records.rs", ""),
                ("clock.rs", ""),
            ],
        );
        let error = Layers::of(&unknown).unwrap_err();
        assert!(
            error.contains("`store` in the layers is no module"),
            "{error}"
        );
    }

    #[test]
    fn a_crate_without_the_heading_has_no_layers() {
        let krate = load(
            "none",
            &[("lib.rs", "//! A crate.\nmod a;\n"), ("a.rs", "")],
        );
        assert_eq!(Layers::of(&krate).unwrap(), None);
    }
}
