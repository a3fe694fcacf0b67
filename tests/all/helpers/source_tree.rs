//! The crate's sources read as a compiler would name them: every module of `src/` (a file, or
//! an inline `mod`), the modules each one names — in `use` trees, in paths anywhere in its code
//! (types, expressions, patterns, attributes) and in macro arguments — resolved through
//! `crate::`, `super::`, `self::`, the names its `use` lines bring in and the `pub use`
//! re-exports of the modules they reach. `#[cfg(test)]` items are left out: they are tests.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// A module's path from the crate root (`["db", "placement"]`); the root is empty.
pub type ModPath = Vec<String>;

/// One module and what its own code names.
#[derive(Debug, Default)]
pub struct Module {
    /// The file it is written in.
    pub file: PathBuf,
    /// Its child modules, by name.
    pub children: BTreeSet<String>,
    /// Paths as written, each with the line it is on: relative ones are resolved later.
    raw: Vec<(Vec<String>, usize)>,
    /// What its `use` items bring in: name → path as written.
    uses: BTreeMap<String, Vec<String>>,
}

/// The crate: every module, and the modules each one names.
#[derive(Debug, Default)]
pub struct SourceTree {
    pub modules: BTreeMap<ModPath, Module>,
}

/// One arrow: module `from` names module `to` at `file:line`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Arrow {
    pub from: ModPath,
    pub to: ModPath,
    pub file: PathBuf,
    pub line: usize,
}

impl SourceTree {
    /// Reads the crate whose root file is `root` (`src/lib.rs`).
    pub fn read(root: &Path) -> SourceTree {
        let mut tree = SourceTree::default();
        tree.read_file(root, Vec::new());
        tree
    }

    fn read_file(&mut self, file: &Path, path: ModPath) {
        let text = std::fs::read_to_string(file)
            .unwrap_or_else(|error| panic!("{}: {error}", file.display()));
        let parsed =
            syn::parse_file(&text).unwrap_or_else(|error| panic!("{}: {error}", file.display()));
        // A module's children live in a folder named after it (`db.rs` → `db/`).
        let folder = match file.file_name().and_then(|name| name.to_str()) {
            Some("lib.rs") | Some("main.rs") | Some("mod.rs") => file.with_file_name(""),
            _ => file.with_extension(""),
        };
        self.read_items(&parsed.items, file, &folder, path);
    }

    fn read_items(&mut self, items: &[syn::Item], file: &Path, folder: &Path, path: ModPath) {
        let mut module = Module {
            file: file.to_path_buf(),
            ..Module::default()
        };
        let mut children = Vec::new();
        for item in items.iter().filter(|item| !is_test(item)) {
            match item {
                syn::Item::Mod(inner) => {
                    module.children.insert(inner.ident.to_string());
                    children.push(inner);
                }
                syn::Item::Use(used) => {
                    let line = used.use_token.span.start().line;
                    for (name, full) in use_paths(&used.tree, Vec::new()) {
                        module.raw.push((full.clone(), line));
                        if name != "_" && name != "*" {
                            module.uses.insert(name, full);
                        }
                    }
                }
                other => {
                    let mut collector = PathCollector::default();
                    collector.visit_item(other);
                    module.raw.extend(collector.paths);
                    module.uses.extend(collector.uses);
                }
            }
        }
        self.modules.insert(path.clone(), module);
        for inner in children {
            let mut child = path.clone();
            child.push(inner.ident.to_string());
            match &inner.content {
                Some((_, items)) => {
                    self.read_items(items, file, &folder.join(inner.ident.to_string()), child)
                }
                None => {
                    let name = inner.ident.to_string();
                    let flat = folder.join(format!("{name}.rs"));
                    let nested = folder.join(&name).join("mod.rs");
                    let found = if flat.exists() { flat } else { nested };
                    self.read_file(&found, child);
                }
            }
        }
    }

    /// Every arrow between two different modules, resolved.
    pub fn arrows(&self) -> Vec<Arrow> {
        let mut arrows = BTreeSet::new();
        for (from, module) in &self.modules {
            for (raw, line) in &module.raw {
                for to in self.resolve(from, raw) {
                    if &to != from {
                        arrows.insert(Arrow {
                            from: from.clone(),
                            to,
                            file: module.file.clone(),
                            line: *line,
                        });
                    }
                }
            }
        }
        arrows.into_iter().collect()
    }

    /// The modules a path written in module `at` names: the deepest module it reaches, and
    /// every module a `pub use` on the way leads to. Empty for other crates' paths.
    fn resolve(&self, at: &ModPath, raw: &[String]) -> Vec<ModPath> {
        let Some(absolute) = self.absolute(at, raw, 0) else {
            return Vec::new();
        };
        let mut found = Vec::new();
        self.walk(absolute, &mut found, 0);
        found
    }

    /// `raw` as a path from the crate root, or `None` when it names another crate.
    fn absolute(&self, at: &ModPath, raw: &[String], depth: usize) -> Option<Vec<String>> {
        let first = raw.first()?;
        let mut base: Vec<String> = match first.as_str() {
            "crate" => Vec::new(),
            "self" => at.clone(),
            "super" => {
                let mut base = at.clone();
                let mut rest = raw;
                while rest.first().map(String::as_str) == Some("super") {
                    base.pop();
                    rest = &rest[1..];
                }
                base.extend(rest.iter().cloned());
                return Some(base);
            }
            name => {
                let module = self.modules.get(at)?;
                if let Some(used) = module.uses.get(name)
                    && depth < 8
                    && used.first().map(String::as_str) != Some(name)
                {
                    let mut full = self.absolute(at, used, depth + 1)?;
                    full.extend(raw[1..].iter().cloned());
                    return Some(full);
                }
                if module.children.contains(name) {
                    at.clone()
                } else {
                    return None;
                }
            }
        };
        let skip = usize::from(matches!(first.as_str(), "crate" | "self"));
        base.extend(raw[skip..].iter().cloned());
        Some(base)
    }

    /// Adds the deepest module `path` reaches, and follows a `pub use` of the name after it.
    fn walk(&self, path: Vec<String>, found: &mut Vec<ModPath>, depth: usize) {
        let mut length = path.len();
        while length > 0 && !self.modules.contains_key(&path[..length]) {
            length -= 1;
        }
        let module: ModPath = path[..length].to_vec();
        if !found.contains(&module) {
            found.push(module.clone());
        }
        if let (Some(name), true) = (path.get(length), depth < 8)
            && let Some(used) = self.modules[&module].uses.get(name)
            && let Some(mut target) = self.absolute(&module, used, 0)
        {
            target.extend(path[length + 1..].iter().cloned());
            self.walk(target, found, depth + 1);
        }
    }
}

/// Whether an item is compiled for tests only (`#[cfg(test)]`).
fn is_test(item: &syn::Item) -> bool {
    let attributes = match item {
        syn::Item::Mod(inner) => &inner.attrs,
        syn::Item::Fn(inner) => &inner.attrs,
        syn::Item::Use(inner) => &inner.attrs,
        syn::Item::Impl(inner) => &inner.attrs,
        _ => return false,
    };
    attributes.iter().any(|attribute| {
        attribute.path().is_ident("cfg")
            && attribute
                .parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "test")
    })
}

/// (name brought in, full path) of each leaf of a `use` tree.
fn use_paths(tree: &syn::UseTree, prefix: Vec<String>) -> Vec<(String, Vec<String>)> {
    let with = |segment: String| {
        let mut path = prefix.clone();
        path.push(segment);
        path
    };
    match tree {
        syn::UseTree::Path(inner) => use_paths(&inner.tree, with(inner.ident.to_string())),
        syn::UseTree::Name(inner) if inner.ident == "self" => {
            let name = prefix.last().cloned().unwrap_or_default();
            vec![(name, prefix)]
        }
        syn::UseTree::Name(inner) => vec![(inner.ident.to_string(), with(inner.ident.to_string()))],
        syn::UseTree::Rename(inner) => {
            let full = if inner.ident == "self" {
                prefix
            } else {
                with(inner.ident.to_string())
            };
            vec![(inner.rename.to_string(), full)]
        }
        syn::UseTree::Glob(_) => vec![("*".to_owned(), prefix)],
        syn::UseTree::Group(group) => group
            .items
            .iter()
            .flat_map(|item| use_paths(item, prefix.clone()))
            .collect(),
    }
}

/// Every path in an item's code, and the `crate::`/`super::`/`self::` paths in its macro
/// arguments (which syn leaves as tokens).
#[derive(Default)]
struct PathCollector {
    paths: Vec<(Vec<String>, usize)>,
    /// What `use` items inside its code bring in (a function's own `use` lines).
    uses: Vec<(String, Vec<String>)>,
}

impl<'ast> Visit<'ast> for PathCollector {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path
            .segments
            .iter()
            .map(|segment| segment.ident.to_string())
            .collect();
        if segments.len() > 1 {
            let line = path
                .segments
                .first()
                .map_or(0, |segment| segment.ident.span().start().line);
            self.paths.push((segments, line));
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.scan_tokens(mac.tokens.clone());
    }

    fn visit_item_use(&mut self, used: &'ast syn::ItemUse) {
        let line = used.use_token.span.start().line;
        for (name, full) in use_paths(&used.tree, Vec::new()) {
            self.paths.push((full.clone(), line));
            if name != "_" && name != "*" {
                self.uses.push((name, full));
            }
        }
    }

    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {}
}

impl PathCollector {
    /// Finds `a::b::c` runs in macro tokens whose first segment names a module of ours.
    fn scan_tokens(&mut self, tokens: TokenStream) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut index = 0;
        while index < tokens.len() {
            match &tokens[index] {
                TokenTree::Group(group) => self.scan_tokens(group.stream()),
                TokenTree::Ident(ident) => {
                    let mut segments = vec![ident.to_string()];
                    let mut next = index + 1;
                    while let (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) =
                        (tokens.get(next), tokens.get(next + 1))
                        && a.as_char() == ':'
                        && b.as_char() == ':'
                        && let Some(TokenTree::Ident(segment)) = tokens.get(next + 2)
                    {
                        segments.push(segment.to_string());
                        next += 3;
                    }
                    if segments.len() > 1 {
                        self.paths.push((segments, ident.span().start().line));
                        index = next;
                        continue;
                    }
                }
                _ => {}
            }
            index += 1;
        }
    }
}

/// Whether an identifier `name` appears anywhere in the file's tokens (comments aside).
pub fn names_ident(text: &str, name: &str) -> Option<usize> {
    fn find(tokens: TokenStream, name: &str) -> Option<usize> {
        tokens.into_iter().find_map(|token| match token {
            TokenTree::Ident(ident) if ident == name => Some(ident.span().start().line),
            TokenTree::Group(group) => find(group.stream(), name),
            _ => None,
        })
    }
    find(text.parse().ok()?, name)
}
