//! What each file of a crate refers to in the crate's other files: every
//! `use` and every path (in types, expressions, patterns and macro calls)
//! that starts at `crate`, `self`, `super` or a child module, followed
//! through re-exports to the file its item is written in.

use crate::scope::Scopes;
use crate::tree::{Crate, ModulePath, SourceFile};
use proc_macro2::{Spacing, TokenStream, TokenTree};
use std::path::PathBuf;
use syn::ext::IdentExt;
use syn::visit::Visit;

/// `from` refers to something written in `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub from: PathBuf,
    pub to: PathBuf,
    pub line: usize,
    /// The path as written (`super::route::Route`).
    pub path: String,
    /// One of the two files contains the other (a module and its
    /// descendants are one unit): no part of a circle, but a reference
    /// still, which the layers weigh (`crate::App` from `http/mod.rs`).
    pub nested: bool,
}

/// Every reference of the crate's files to another of its files.
pub fn references(krate: &Crate) -> Vec<Reference> {
    let scopes = Scopes::of(krate);
    let mut found = Vec::new();
    for file in &krate.files {
        let mut visitor = FileVisitor {
            krate,
            scopes: &scopes,
            file,
            module: file.module.clone(),
            found: &mut found,
        };
        visitor.visit_file(&file.syntax);
    }
    found
}

struct FileVisitor<'a> {
    krate: &'a Crate,
    scopes: &'a Scopes,
    file: &'a SourceFile,
    /// Where the visitor is: the file's module, or an inline module in it.
    module: ModulePath,
    found: &'a mut Vec<Reference>,
}

impl FileVisitor<'_> {
    fn refer(&mut self, segments: &[String], line: usize) {
        let Some(absolute) = self.krate.absolute(&self.module, segments) else {
            return;
        };
        let defined = self.scopes.locate(self.krate, &absolute);
        let Some(to) = self.krate.file_of(&defined) else {
            return;
        };
        let Some(to_module) = self.krate.module_of(to) else {
            return;
        };
        // A module and its descendants are one unit: a child sees its
        // ancestors' private items, and a parent re-exports its children.
        // References between files one of which contains the other are
        // not between units.
        let from_module = &self.file.module;
        let nested = from_module.starts_with(to_module) || to_module.starts_with(from_module);
        if nested && self.file.path == *to {
            return;
        }
        self.found.push(Reference {
            from: self.file.path.clone(),
            to: to.clone(),
            line,
            path: segments.join("::"),
            nested,
        });
    }

    /// Paths inside a macro call's tokens (`assert!(super::f())`, `json!`).
    fn scan_tokens(&mut self, tokens: TokenStream) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < tokens.len() {
            match &tokens[i] {
                TokenTree::Group(group) => {
                    self.scan_tokens(group.stream());
                    i += 1;
                }
                TokenTree::Ident(first) => {
                    let line = first.span().start().line;
                    let mut segments = vec![first.unraw().to_string()];
                    let mut next = i + 1;
                    while let [TokenTree::Punct(a), TokenTree::Punct(b), TokenTree::Ident(ident), ..] =
                        &tokens[next.min(tokens.len())..]
                    {
                        if a.as_char() != ':' || a.spacing() != Spacing::Joint || b.as_char() != ':'
                        {
                            break;
                        }
                        segments.push(ident.unraw().to_string());
                        next += 3;
                    }
                    if segments.len() > 1 {
                        self.refer(&segments, line);
                    }
                    i = next;
                }
                TokenTree::Punct(_) | TokenTree::Literal(_) => i += 1,
            }
        }
    }
}

impl<'ast> Visit<'ast> for FileVisitor<'_> {
    fn visit_item_mod(&mut self, declared: &'ast syn::ItemMod) {
        // A module in a file of its own is visited as that file.
        if let Some((_, items)) = &declared.content {
            self.module.push(declared.ident.unraw().to_string());
            for item in items {
                self.visit_item(item);
            }
            self.module.pop();
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        if item.leading_colon.is_some() {
            return; // `use ::name`: another crate
        }
        let mut paths = Vec::new();
        use_paths(&item.tree, &mut Vec::new(), &mut paths);
        for (segments, line) in paths {
            self.refer(&segments, line);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        // One segment is a name in scope (its `use` is the reference); a
        // leading `::` names another crate.
        if path.segments.len() > 1 && path.leading_colon.is_none() {
            let segments: Vec<String> = path
                .segments
                .iter()
                .map(|s| s.ident.unraw().to_string())
                .collect();
            let line = path.segments[0].ident.span().start().line;
            self.refer(&segments, line);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.scan_tokens(mac.tokens.clone());
    }
}

/// The paths a use tree names, each with its line: `use a::{b, c::d}` names
/// `a::b` and `a::c::d`; `a::{self}` names `a`.
fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, usize)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.unraw().to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => out.push((named(prefix, &n.ident), n.ident.span().start().line)),
        syn::UseTree::Rename(r) => out.push((named(prefix, &r.ident), r.ident.span().start().line)),
        syn::UseTree::Glob(g) => out.push((prefix.clone(), g.star_token.span.start().line)),
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                use_paths(tree, prefix, out);
            }
        }
    }
}

fn named(prefix: &[String], ident: &syn::Ident) -> Vec<String> {
    let name = ident.unraw().to_string();
    let mut path = prefix.to_vec();
    if name != "self" {
        path.push(name);
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A crate of `files` (`lib.rs` first) in a directory of its own.
    fn load(name: &str, files: &[(&str, &str)]) -> (Crate, PathBuf) {
        let dir = std::env::temp_dir().join(format!("circles-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, text) in files {
            let path = dir.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        (Crate::load(&dir.join("lib.rs")).unwrap(), dir)
    }

    /// (from, to, line) with paths relative to the crate's directory.
    fn found(krate: &Crate, dir: &Path) -> Vec<(String, String, usize)> {
        let relative = |p: &PathBuf| p.strip_prefix(dir).unwrap().display().to_string();
        let mut found: Vec<_> = references(krate)
            .iter()
            .filter(|r| !r.nested)
            .map(|r| (relative(&r.from), relative(&r.to), r.line))
            .collect();
        found.sort();
        found.dedup();
        found
    }

    fn edge(from: &str, to: &str, line: usize) -> (String, String, usize) {
        (from.to_string(), to.to_string(), line)
    }

    #[test]
    fn uses_and_paths_between_siblings_are_references() {
        let (krate, dir) = load(
            "siblings",
            &[
                ("lib.rs", "mod a;\nmod b;\n"),
                ("a.rs", "use super::b::{self, B};\npub struct A;\n"),
                (
                    "b.rs",
                    "pub struct B;\nfn f() -> crate::a::A {\n    crate::a::A\n}\n",
                ),
            ],
        );
        assert_eq!(
            found(&krate, &dir),
            vec![
                edge("a.rs", "b.rs", 1),
                edge("b.rs", "a.rs", 2),
                edge("b.rs", "a.rs", 3)
            ]
        );
    }

    #[test]
    fn a_modules_inline_tests_are_its_own_file() {
        let (krate, dir) = load(
            "inline",
            &[
                ("lib.rs", "mod a;\nmod b;\n"),
                ("a.rs", "fn f() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::b::B;\n}\n"),
                ("b.rs", "pub struct B;\n"),
            ],
        );
        assert_eq!(found(&krate, &dir), vec![edge("a.rs", "b.rs", 5)]);
    }

    #[test]
    fn paths_in_macro_calls_count() {
        let (krate, dir) = load(
            "macros",
            &[
                ("lib.rs", "mod a;\nmod b;\n"),
                ("a.rs", "fn f() {\n    assert!(crate::b::ready());\n}\n"),
                ("b.rs", "pub fn ready() -> bool {\n    true\n}\n"),
            ],
        );
        assert_eq!(found(&krate, &dir), vec![edge("a.rs", "b.rs", 2)]);
    }

    #[test]
    fn a_file_and_the_files_it_contains_are_one_unit() {
        let (krate, dir) = load(
            "unit",
            &[
                (
                    "lib.rs",
                    "mod a;\npub struct Error;\nfn f() {\n    a::g();\n}\n",
                ),
                (
                    "a.rs",
                    "mod inner;\nuse crate::Error;\npub fn g() {\n    let _ = self::inner::X;\n}\n",
                ),
                (
                    "a/inner.rs",
                    "pub const X: u8 = 1;\nfn h() {\n    super::super::f();\n}\n",
                ),
            ],
        );
        assert_eq!(found(&krate, &dir), vec![]);
    }

    #[test]
    fn other_crates_and_names_in_scope_are_not_references() {
        let (krate, dir) = load(
            "external",
            &[
                ("lib.rs", "mod a;\nuse std::fmt;\nuse ::serde::Serialize;\n"),
                (
                    "a/mod.rs",
                    "use serde_json::json;\nfn f(a: u8) -> u8 {\n    let b = a;\n    b\n}\n",
                ),
            ],
        );
        assert_eq!(found(&krate, &dir), vec![]);
    }

    #[test]
    fn a_re_exported_name_is_the_file_it_is_written_in() {
        let (krate, dir) = load(
            "reexport",
            &[
                ("lib.rs", "pub mod limits;\nmod user;\n"),
                (
                    "limits.rs",
                    "mod plan;\nmod window;\npub use plan::Plan;\npub use window::*;\n",
                ),
                ("limits/plan.rs", "pub struct Plan;\n"),
                ("limits/window.rs", "use super::Plan;\npub struct Window;\n"),
                ("user.rs", "use crate::limits::{Plan, Window as W};\n"),
            ],
        );
        assert_eq!(
            found(&krate, &dir),
            vec![
                edge("limits/window.rs", "limits/plan.rs", 1),
                edge("user.rs", "limits/plan.rs", 1),
                edge("user.rs", "limits/window.rs", 1),
            ]
        );
    }
}
