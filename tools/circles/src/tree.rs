//! A crate's module tree, read from its root file as rustc reads it: which
//! file each module is written in.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use syn::ext::IdentExt;

/// A module's path from the crate root (`["http", "access"]`; the root is `[]`).
pub type ModulePath = Vec<String>;

/// One crate: its modules and its files.
pub struct Crate {
    /// Every module, inline ones (`mod tests { .. }`) included, and the file
    /// it is written in.
    pub modules: BTreeMap<ModulePath, PathBuf>,
    pub files: Vec<SourceFile>,
}

/// One file of a crate, parsed.
pub struct SourceFile {
    pub path: PathBuf,
    /// The module the file is.
    pub module: ModulePath,
    pub syntax: syn::File,
}

impl Crate {
    /// The crate whose root file (`src/lib.rs`, `src/main.rs`, a test) is `root`.
    pub fn load(root: &Path) -> Result<Crate, String> {
        let mut krate = Crate {
            modules: BTreeMap::new(),
            files: Vec::new(),
        };
        let children_dir = root.parent().unwrap_or(Path::new(".")).to_path_buf();
        krate.add_file(root.to_path_buf(), Vec::new(), children_dir)?;
        Ok(krate)
    }

    /// The file a path from the crate root lands in: that of its longest
    /// prefix that is a module (`http::route::Route` lands in `route.rs`).
    pub fn file_of(&self, path: &[String]) -> Option<&PathBuf> {
        (0..=path.len())
            .rev()
            .find_map(|len| self.modules.get(&path[..len]))
    }

    /// The module a file is (not an inline module in it).
    pub fn module_of(&self, file: &Path) -> Option<&ModulePath> {
        self.files
            .iter()
            .find(|f| f.path == file)
            .map(|f| &f.module)
    }

    pub fn is_module(&self, path: &[String]) -> bool {
        self.modules.contains_key(path)
    }

    /// The path from the crate root that `segments`, written in `module`,
    /// names, if it starts in this crate: at `crate`, `self`, `super` or a
    /// child module of `module`.
    pub fn absolute(&self, module: &[String], segments: &[String]) -> Option<ModulePath> {
        let (first, rest) = segments.split_first()?;
        match first.as_str() {
            "crate" => Some(rest.to_vec()),
            "self" => Some(module.iter().chain(rest).cloned().collect()),
            "super" => {
                let mut base = module.to_vec();
                let mut rest = segments;
                while let Some((first, after)) = rest.split_first() {
                    if first != "super" {
                        break;
                    }
                    base.pop()?;
                    rest = after;
                }
                Some(base.into_iter().chain(rest.iter().cloned()).collect())
            }
            _ => {
                let child: ModulePath = module.iter().chain([first]).cloned().collect();
                self.is_module(&child)
                    .then(|| module.iter().chain(segments).cloned().collect())
            }
        }
    }

    fn add_file(
        &mut self,
        path: PathBuf,
        module: ModulePath,
        children_dir: PathBuf,
    ) -> Result<(), String> {
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let syntax = syn::parse_file(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut file_modules = Vec::new();
        self.add_items(
            &syntax.items,
            &module,
            &path,
            &children_dir,
            false,
            &mut file_modules,
        )?;
        self.modules.insert(module.clone(), path.clone());
        self.files.push(SourceFile {
            path,
            module,
            syntax,
        });
        for (child_path, child_module, grandchildren_dir) in file_modules {
            self.add_file(child_path, child_module, grandchildren_dir)?;
        }
        Ok(())
    }

    /// The modules declared in `items`; those in files of their own are
    /// pushed to `file_modules` (path, module, where their children live).
    /// `inline`: `items` are an inline module block's, not a file's own.
    fn add_items(
        &mut self,
        items: &[syn::Item],
        module: &[String],
        file: &Path,
        children_dir: &Path,
        inline: bool,
        file_modules: &mut Vec<(PathBuf, ModulePath, PathBuf)>,
    ) -> Result<(), String> {
        for item in items {
            let syn::Item::Mod(declared) = item else {
                continue;
            };
            let name = declared.ident.unraw().to_string();
            let child: ModulePath = module.iter().cloned().chain([name.clone()]).collect();
            let dir = children_dir.join(&name);
            match &declared.content {
                Some((_, items)) => {
                    self.modules.insert(child.clone(), file.to_path_buf());
                    self.add_items(items, &child, file, &dir, true, file_modules)?;
                }
                None => {
                    let path = match path_attribute(declared) {
                        // As rustc reads it: a file's own `#[path]` is relative
                        // to the file's directory, an inline block's to the
                        // block's own directory.
                        Some(relative) if inline => children_dir.join(relative),
                        Some(relative) => file
                            .parent()
                            .map_or_else(|| PathBuf::from(&relative), |d| d.join(&relative)),
                        None => [dir.with_extension("rs"), dir.join("mod.rs")]
                            .into_iter()
                            .find(|p| p.is_file())
                            .ok_or_else(|| {
                                format!("{}: no file for `mod {name}`", file.display())
                            })?,
                    };
                    file_modules.push((path, child, dir));
                }
            }
        }
        Ok(())
    }
}

/// `#[path = "..."]` on a module declaration.
fn path_attribute(declared: &syn::ItemMod) -> Option<String> {
    declared.attrs.iter().find_map(|attr| match &attr.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}
