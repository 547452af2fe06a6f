//! What each module of a crate defines and what its `use`s bring in, so that
//! a path is followed through re-exports to where its item is written:
//! `super::Limits`, re-exported by `ratelimit/mod.rs` from `plan.rs`, is
//! `plan.rs`'s.

use crate::tree::{Crate, ModulePath};
use std::collections::{BTreeMap, BTreeSet};
use syn::ext::IdentExt;

#[derive(Default)]
struct Scope {
    /// Names of the items written in the module.
    items: BTreeSet<String>,
    /// Names a `use` brings in, and the path each stands for.
    bindings: BTreeMap<String, ModulePath>,
    /// Modules whose names a `use path::*` brings in.
    globs: Vec<ModulePath>,
}

pub struct Scopes {
    scopes: BTreeMap<ModulePath, Scope>,
}

impl Scopes {
    pub fn of(krate: &Crate) -> Scopes {
        let mut scopes = Scopes {
            scopes: BTreeMap::new(),
        };
        for file in &krate.files {
            scopes.add(krate, &file.module, &file.syntax.items);
        }
        scopes
    }

    fn add(&mut self, krate: &Crate, module: &[String], items: &[syn::Item]) {
        let mut scope = Scope::default();
        for item in items {
            match item {
                syn::Item::Use(used) if used.leading_colon.is_none() => {
                    let mut found = Vec::new();
                    bindings(&used.tree, &mut Vec::new(), &mut found);
                    for (name, path) in found {
                        let Some(absolute) = krate.absolute(module, &path) else {
                            continue;
                        };
                        match name {
                            Some(name) => {
                                scope.bindings.insert(name, absolute);
                            }
                            None => scope.globs.push(absolute),
                        }
                    }
                }
                syn::Item::Mod(inline) => {
                    scope.items.insert(inline.ident.unraw().to_string());
                    if let Some((_, items)) = &inline.content {
                        let child: ModulePath = module
                            .iter()
                            .cloned()
                            .chain([inline.ident.unraw().to_string()])
                            .collect();
                        self.add(krate, &child, items);
                    }
                }
                other => {
                    if let Some(name) = item_name(other) {
                        scope.items.insert(name);
                    }
                }
            }
        }
        self.scopes.insert(module.to_vec(), scope);
    }

    /// Where the item `path` (from the crate root) names is written,
    /// following `use`s: the path of its definition.
    pub fn locate(&self, krate: &Crate, path: &[String]) -> ModulePath {
        self.follow(krate, path, 0).unwrap_or_else(|| path.to_vec())
    }

    fn follow(&self, krate: &Crate, path: &[String], depth: usize) -> Option<ModulePath> {
        // A `use` loop is rustc's error to report, not ours.
        if depth > 32 {
            return None;
        }
        let module_len = (0..=path.len())
            .rev()
            .find(|&len| krate.is_module(&path[..len]))?;
        let (module, rest) = path.split_at(module_len);
        let (name, after) = rest.split_first()?;
        let scope = self.scopes.get(module)?;
        if scope.items.contains(name) {
            return Some(path.to_vec());
        }
        if let Some(target) = scope.bindings.get(name) {
            let path: ModulePath = target.iter().chain(after).cloned().collect();
            return Some(self.follow(krate, &path, depth + 1).unwrap_or(path));
        }
        scope.globs.iter().find_map(|glob| {
            let path: ModulePath = glob.iter().chain(rest).cloned().collect();
            self.follow(krate, &path, depth + 1)
        })
    }
}

/// The names a use tree binds (`None`: a glob) and the path each stands for.
fn bindings(
    tree: &syn::UseTree,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Option<String>, Vec<String>)>,
) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.unraw().to_string());
            bindings(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.unraw().to_string();
            if name == "self" {
                if let Some(last) = prefix.last() {
                    out.push((Some(last.clone()), prefix.clone()));
                }
            } else {
                let path = prefix.iter().cloned().chain([name.clone()]).collect();
                out.push((Some(name), path));
            }
        }
        syn::UseTree::Rename(r) => {
            let path = prefix
                .iter()
                .cloned()
                .chain([r.ident.unraw().to_string()])
                .collect();
            out.push((Some(r.rename.unraw().to_string()), path));
        }
        syn::UseTree::Glob(_) => out.push((None, prefix.clone())),
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                bindings(tree, prefix, out);
            }
        }
    }
}

fn item_name(item: &syn::Item) -> Option<String> {
    let ident = match item {
        syn::Item::Const(i) => &i.ident,
        syn::Item::Enum(i) => &i.ident,
        syn::Item::ExternCrate(i) => &i.ident,
        syn::Item::Fn(i) => &i.sig.ident,
        syn::Item::Macro(i) => i.ident.as_ref()?,
        syn::Item::Static(i) => &i.ident,
        syn::Item::Struct(i) => &i.ident,
        syn::Item::Trait(i) => &i.ident,
        syn::Item::TraitAlias(i) => &i.ident,
        syn::Item::Type(i) => &i.ident,
        syn::Item::Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident.unraw().to_string())
}
