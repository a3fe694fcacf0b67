//! The code's shape, as docs/architecture.md states it, checked on the sources themselves
//! (parsed with syn, not matched line by line). The counting rules:
//!
//! - a file is too long over 600 lines (`src/`, `tests/`, `benches/`; the generated
//!   `src/db/schema.rs` aside);
//! - a function is too long over 80 lines, counted from the line of its `fn` to the line of its
//!   closing brace — every function: free, in an `impl` or a trait, nested, tests included;
//! - no file of `src/` outside `src/db.rs` and `src/db/` names `diesel`;
//! - every arrow between top modules is one the import rules (the `import-rules` block of
//!   docs/architecture.md) allow; an arrow is any path a module's code names — `use` lines,
//!   paths in code and in macro arguments, through `crate::`/`super::`/`self::`, its `use`d
//!   names and the `pub use` re-exports of the modules reached;
//! - within every module, the arrows among its children (each with everything below it) form
//!   no cycle;
//! - no test file names another (`crate::x::` for any `x` but `helpers`): shared fixtures live in
//!   tests/all/helpers;
//! - no file of `src/http` opens a database transaction (`transaction`, `blocking_transaction`,
//!   `retrying_conflicts`): a handler's writes go through `src/service`;
//! - no line of `src/` names an issue ("issue 26", "issues 17 and 27"): the code speaks for
//!   itself, and the issues' history is in the commits.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::spanned::Spanned;
use syn::visit::Visit;

use crate::helpers::source_tree::{Arrow, ModPath, SourceTree, names_ident};

const MAX_FILE_LINES: usize = 600;
const MAX_FN_LINES: usize = 80;
const GENERATED: &str = "src/db/schema.rs";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `folder`, relative to the repository.
fn rust_files(folder: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(&root().join(folder), &mut found);
    found
        .into_iter()
        .map(|path| path.strip_prefix(root()).unwrap().to_path_buf())
        .collect()
}

fn all_files() -> Vec<PathBuf> {
    ["src", "tests", "benches"]
        .iter()
        .flat_map(|folder| rust_files(folder))
        .filter(|path| path != Path::new(GENERATED))
        .collect()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(root().join(path)).unwrap()
}

#[test]
fn no_file_is_over_600_lines() {
    let long: Vec<String> = all_files()
        .into_iter()
        .map(|path| (read(&path).lines().count(), path))
        .filter(|(lines, _)| *lines > MAX_FILE_LINES)
        .map(|(lines, path)| format!("{}: {lines} lines", path.display()))
        .collect();
    assert!(
        long.is_empty(),
        "over {MAX_FILE_LINES} lines:\n{}",
        long.join("\n")
    );
}

/// (name, first line, lines) of every function of a file.
#[derive(Default)]
struct Functions(Vec<(String, usize, usize)>);

impl Functions {
    fn add(&mut self, name: &syn::Ident, fn_token: &syn::token::Fn, block: &syn::Block) {
        let first = fn_token.span().start().line;
        let last = block.brace_token.span.close().end().line;
        self.0.push((name.to_string(), first, last - first + 1));
    }
}

impl<'ast> Visit<'ast> for Functions {
    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        self.add(&item.sig.ident, &item.sig.fn_token, &item.block);
        syn::visit::visit_item_fn(self, item);
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        self.add(&item.sig.ident, &item.sig.fn_token, &item.block);
        syn::visit::visit_impl_item_fn(self, item);
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        if let Some(block) = &item.default {
            self.add(&item.sig.ident, &item.sig.fn_token, block);
        }
        syn::visit::visit_trait_item_fn(self, item);
    }
}

#[test]
fn no_function_is_over_80_lines_tests_included() {
    let mut long = Vec::new();
    for path in all_files() {
        let file = syn::parse_file(&read(&path)).unwrap();
        let mut functions = Functions::default();
        functions.visit_file(&file);
        for (name, line, lines) in functions.0 {
            if lines > MAX_FN_LINES {
                long.push(format!(
                    "{}:{line}: fn {name} is {lines} lines",
                    path.display()
                ));
            }
        }
    }
    assert!(
        long.is_empty(),
        "over {MAX_FN_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn only_the_db_module_names_diesel() {
    let outside: Vec<String> = rust_files("src")
        .into_iter()
        .filter(|path| path != Path::new("src/db.rs") && !path.starts_with("src/db"))
        .filter_map(|path| {
            names_ident(&read(&path), "diesel").map(|line| format!("{}:{line}", path.display()))
        })
        .collect();
    assert!(
        outside.is_empty(),
        "diesel named outside src/db:\n{}",
        outside.join("\n")
    );
}

#[test]
fn no_test_file_imports_another() {
    let mut crossing = Vec::new();
    for path in rust_files("tests/all") {
        if path.starts_with("tests/all/helpers") || path.ends_with("main.rs") {
            continue;
        }
        let code = read(&path);
        let lines = code.lines().enumerate();
        for (number, line) in lines.filter(|(_, line)| !line.trim_start().starts_with("//")) {
            let named = line.match_indices("crate::").any(|(at, _)| {
                let rest = &line[at + "crate::".len()..];
                !rest.starts_with("helpers") && rest.starts_with(|c: char| c.is_ascii_lowercase())
            });
            if named {
                crossing.push(format!(
                    "{}:{}: {}",
                    path.display(),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        crossing.is_empty(),
        "test files naming other test files (move the fixture to tests/all/helpers):\n{}",
        crossing.join("\n")
    );
}

#[test]
fn no_line_of_src_names_an_issue() {
    let mut named = Vec::new();
    for path in rust_files("src") {
        for (number, line) in read(&path).lines().enumerate() {
            let lower = line.to_lowercase();
            let names_one = ["issue ", "issues ", "issue #"].iter().any(|word| {
                lower.match_indices(word).any(|(at, _)| {
                    let rest = &lower[at + word.len()..];
                    rest.trim_start_matches('#')
                        .starts_with(|c: char| c.is_ascii_digit())
                })
            });
            if names_one {
                named.push(format!(
                    "{}:{}: {}",
                    path.display(),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(named.is_empty(), "src names issues:\n{}", named.join("\n"));
}

#[test]
fn http_opens_no_transaction() {
    let mut files = rust_files("src/http");
    files.push(PathBuf::from("src/http.rs"));
    let opening: Vec<String> = files
        .into_iter()
        .flat_map(|path| {
            let code = read(&path);
            ["transaction", "blocking_transaction", "retrying_conflicts"]
                .into_iter()
                .filter_map(|name| {
                    names_ident(&code, name)
                        .map(|line| format!("{}:{line}: {name}", path.display()))
                })
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        opening.is_empty(),
        "transactions opened in src/http (a use case of src/service opens them):\n{}",
        opening.join("\n")
    );
}

/// The runners that open a transaction (`src/db.rs`); a savepoint (`db::savepoint`) is not
/// one, for it fails outside the caller's transaction.
const OPENERS: [&str; 6] = [
    "transaction",
    "build_transaction",
    "in_transaction",
    "blocking_transaction",
    "read_snapshot",
    "retrying_conflicts",
];

/// The functions of `src/db` that take a connection and open a transaction anyway, each for
/// its reason.
const OWN_TRANSACTION: [(&str, &str); 1] = [
    // A cache: a fresh snapshot is read, in one repeatable-read transaction, only when the kept
    // one is stale.
    ("src/db/placement/candidates.rs", "snapshot"),
];

/// The text of `span` in `code` (its lines and columns as proc-macro2 counts them).
fn text_of(code: &str, span: proc_macro2::Span) -> String {
    let (start, end) = (span.start(), span.end());
    let lines: Vec<&str> = code.lines().collect();
    let mut text = String::new();
    for line in start.line..=end.line {
        let chars: Vec<char> = lines[line - 1].chars().collect();
        let from = if line == start.line { start.column } else { 0 };
        let to = if line == end.line {
            end.column
        } else {
            chars.len()
        };
        text.extend(&chars[from..to]);
        text.push('\n');
    }
    text
}

/// (name, whether it takes a connection, its body's text) of each function of `code`.
fn bodies(code: &str) -> Vec<(String, bool, String)> {
    #[derive(Default)]
    struct Found(Vec<(String, bool, proc_macro2::Span)>);
    impl Found {
        fn add(&mut self, sig: &syn::Signature, block: &syn::Block) {
            let takes = sig.inputs.iter().any(|input| match input {
                syn::FnArg::Typed(typed) => {
                    matches!(&*typed.ty, syn::Type::Reference(reference)
                        if matches!(&*reference.elem, syn::Type::Path(path)
                            if path.path.segments.last().is_some_and(|last| last.ident == "PgConnection")))
                }
                syn::FnArg::Receiver(_) => false,
            });
            self.0.push((sig.ident.to_string(), takes, block.span()));
        }
    }
    impl<'ast> Visit<'ast> for Found {
        fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
            self.add(&item.sig, &item.block);
            syn::visit::visit_item_fn(self, item);
        }
        fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
            self.add(&item.sig, &item.block);
            syn::visit::visit_impl_item_fn(self, item);
        }
    }
    let mut found = Found::default();
    found.visit_file(&syn::parse_file(code).unwrap());
    found
        .0
        .into_iter()
        .map(|(name, takes, span)| (name, takes, text_of(code, span)))
        .collect()
}

/// `name:line` of each function of `code` that takes a connection and opens a transaction.
fn query_fns_opening_transactions(path: &str, code: &str) -> Vec<String> {
    bodies(code)
        .into_iter()
        .filter(|(name, takes, _)| *takes && !OWN_TRANSACTION.contains(&(path, name.as_str())))
        .filter_map(|(name, _, body)| {
            let opener = OPENERS
                .iter()
                .find(|opener| names_ident(&body, opener).is_some())?;
            Some(format!("{path}: fn {name} opens one ({opener})"))
        })
        .collect()
}

#[test]
fn no_query_fn_of_db_opens_a_transaction() {
    let opening: Vec<String> = rust_files("src/db")
        .into_iter()
        .filter(|path| path != Path::new(GENERATED))
        .flat_map(|path| {
            let shown = path.display().to_string();
            query_fns_opening_transactions(&shown, &read(&path))
        })
        .collect();
    assert!(
        opening.is_empty(),
        "query functions of src/db opening a transaction (their callers open it):\n{}",
        opening.join("\n")
    );
}

#[test]
fn the_transaction_check_sees_one_opened() {
    let code = "fn write(conn: &mut PgConnection) -> R {\n    super::in_transaction(conn, |conn| go(conn))\n}\n\
                fn run(pool: &Pool) -> R {\n    in_transaction(&mut pool.get()?, go)\n}\n\
                fn nested(conn: &mut PgConnection) -> R {\n    super::savepoint(conn, go)\n}\n";
    assert_eq!(
        query_fns_opening_transactions("src/db/x.rs", code),
        vec!["src/db/x.rs: fn write opens one (in_transaction)".to_owned()]
    );
}

/// A node id as bare text or a bare uuid, in a field, a parameter or a message: `node: &str`,
/// `nodes: Vec<String>`, `alternate: Uuid`, `node: Option<String>`, … (the names a node id goes
/// by, each type that is not `NodeUuid`).
fn bare_node_ids(text: &str) -> Vec<String> {
    let bare = regex::Regex::new(
        r"\b(node|nodes|node_uuid|alternate|alternates|ironic|ironic_node)\s*:\s*(&\[String\]|&\[Uuid\]|&str|String|Uuid|Option<String>|Option<&str>|Option<Uuid>|Vec<String>|Vec<Uuid>)\s*[,)}=;]",
    )
    .expect("the pattern parses");
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim_start().starts_with("//"))
        .filter(|(_, line)| bare.is_match(line))
        .map(|(number, line)| format!("{}: {}", number + 1, line.trim()))
        .collect()
}

#[test]
fn node_ids_are_typed_in_db_and_actors() {
    let mut bare = Vec::new();
    for folder in ["src/db", "src/actors"] {
        for path in rust_files(folder) {
            if path.ends_with("schema.rs") {
                continue;
            }
            for found in bare_node_ids(&read(&path)) {
                bare.push(format!("{}:{found}", path.display()));
            }
        }
    }
    for file in ["src/db.rs", "src/actors.rs"] {
        for found in bare_node_ids(&read(Path::new(file))) {
            bare.push(format!("{file}:{found}"));
        }
    }
    assert!(
        bare.is_empty(),
        "node ids that are not NodeUuid in src/db and src/actors:\n{}",
        bare.join("\n")
    );
}

#[test]
fn the_bare_node_id_check_sees_each_shape() {
    for bare in [
        "fn find(conn: &mut PgConnection, node: &str) -> X",
        "    pub node: String,",
        "    alternates: Vec<Uuid>,",
        "Refresh { name: String, nodes: Vec<String> }",
    ] {
        assert_eq!(bare_node_ids(bare).len(), 1, "{bare}");
    }
    for typed in [
        "fn find(conn: &mut PgConnection, node: NodeUuid) -> X",
        "    pub node: Option<NodeUuid>,",
        "    // node: String, in a comment",
        "    pub nodes_total: i64,",
    ] {
        assert!(bare_node_ids(typed).is_empty(), "{typed}");
    }
}

/// The import rules: top module → the top modules it may name, from the `import-rules` block
/// of docs/architecture.md (`module: allowed, allowed`; `*` for any).
fn import_rules() -> BTreeMap<String, BTreeSet<String>> {
    let map = read(Path::new("docs/architecture.md"));
    let block = map
        .split("```import-rules\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/architecture.md has an import-rules block");
    block
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let (module, allowed) = line.split_once(':').expect("`module: allowed, …`");
            let allowed = allowed
                .split(',')
                .map(|name| name.trim().to_owned())
                .filter(|name| !name.is_empty() && name != "—")
                .collect();
            (module.trim().to_owned(), allowed)
        })
        .collect()
}

fn tree() -> SourceTree {
    SourceTree::read(&root().join("src/lib.rs"))
}

fn top(path: &ModPath) -> String {
    path.first().cloned().unwrap_or_else(|| "lib".to_owned())
}

fn show(arrow: &Arrow) -> String {
    format!(
        "{}:{}: {} → {}",
        arrow
            .file
            .strip_prefix(root())
            .unwrap_or(&arrow.file)
            .display(),
        arrow.line,
        arrow.from.join("::"),
        arrow.to.join("::")
    )
}

#[test]
fn every_arrow_between_top_modules_is_one_the_map_allows() {
    let rules = import_rules();
    let tree = tree();
    let unlisted: Vec<String> = tree.modules[&Vec::new()]
        .children
        .iter()
        .filter(|module| !rules.contains_key(*module))
        .cloned()
        .collect();
    assert!(
        unlisted.is_empty(),
        "top modules the map does not list: {unlisted:?}"
    );
    let refused: Vec<String> = tree
        .arrows()
        .iter()
        .filter(|arrow| !arrow.from.is_empty() && !arrow.to.is_empty())
        .filter(|arrow| top(&arrow.from) != top(&arrow.to))
        .filter(|arrow| {
            let allowed = &rules[&top(&arrow.from)];
            !allowed.contains("*") && !allowed.contains(&top(&arrow.to))
        })
        .map(show)
        .collect();
    assert!(
        refused.is_empty(),
        "arrows the import rules refuse:\n{}",
        refused.join("\n")
    );
}

#[test]
fn no_module_has_children_that_name_each_other_in_a_cycle() {
    let tree = tree();
    let arrows = tree.arrows();
    let mut cycles = Vec::new();
    for (parent, module) in &tree.modules {
        // child → child arrows, each child standing for everything below it.
        let mut graph: BTreeMap<&str, BTreeMap<&str, &Arrow>> = BTreeMap::new();
        let child_of = |path: &ModPath| -> Option<String> {
            (path.len() > parent.len() && path.starts_with(parent))
                .then(|| path[parent.len()].clone())
                .filter(|child| module.children.contains(child))
        };
        for arrow in &arrows {
            if let (Some(from), Some(to)) = (child_of(&arrow.from), child_of(&arrow.to))
                && from != to
            {
                let from = module.children.get(&from).unwrap().as_str();
                let to = module.children.get(&to).unwrap().as_str();
                graph.entry(from).or_default().entry(to).or_insert(arrow);
            }
        }
        if let Some(cycle) = find_cycle(&graph) {
            let shown: Vec<String> = cycle.iter().map(|arrow| show(arrow)).collect();
            let name = if parent.is_empty() {
                "crate".to_owned()
            } else {
                parent.join("::")
            };
            cycles.push(format!("in {name}:\n  {}", shown.join("\n  ")));
        }
    }
    assert!(cycles.is_empty(), "cycles:\n{}", cycles.join("\n"));
}

/// One cycle of `graph` as its arrows, if it has one (depth-first search).
fn find_cycle<'a>(graph: &BTreeMap<&str, BTreeMap<&str, &'a Arrow>>) -> Option<Vec<&'a Arrow>> {
    type Stack<'a> = Vec<(String, Option<&'a Arrow>)>;
    fn visit<'a>(
        node: &str,
        graph: &BTreeMap<&str, BTreeMap<&str, &'a Arrow>>,
        done: &mut BTreeSet<String>,
        stack: &mut Stack<'a>,
    ) -> Option<Vec<&'a Arrow>> {
        for (next, arrow) in graph.get(node).into_iter().flatten() {
            if let Some(start) = stack.iter().position(|(name, _)| name == next) {
                let mut cycle: Vec<&Arrow> = stack[start + 1..]
                    .iter()
                    .filter_map(|(_, arrow)| *arrow)
                    .collect();
                cycle.push(arrow);
                return Some(cycle);
            }
            if done.contains(*next) {
                continue;
            }
            stack.push((next.to_string(), Some(arrow)));
            if let Some(cycle) = visit(next, graph, done, stack) {
                return Some(cycle);
            }
            stack.pop();
        }
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    for start in graph.keys() {
        let mut stack = vec![(start.to_string(), None)];
        if let Some(cycle) = visit(start, graph, &mut done, &mut stack) {
            return Some(cycle);
        }
    }
    None
}
