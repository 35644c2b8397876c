//! No import circles between a crate's modules.
//!
//! Modules that name each other cannot be read, tested or moved one at a time: a change to one
//! is a change to all. This test reads every workspace crate from its root (`lib.rs` or
//! `main.rs`) down its `mod` declarations, takes each module's dependencies from its paths into
//! the crate (`crate::`, `super::`, `self::`, and a child module's name; a path through a
//! `pub use` counts against the module that defines the item), finds the strongly connected
//! components of that graph (Tarjan), and prints every circle of every crate. The crates in
//! [`EXPECT_NO_CIRCLES`] must have none.
//!
//! Test-only items (`#[cfg(test)]`, `#[cfg(doctest)]`) are left out: a test module reaching
//! back into its parent is no circle in the product. Comments and literals are left out too.
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Crates (by their directory under `crates/`) that must have no circle between their modules.
const EXPECT_NO_CIRCLES: &[&str] = &["engine", "cli", "sojourn"];

/// A module's path in its crate; empty for the crate root.
type ModPath = Vec<String>;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Sep,
    Punct(char),
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
}

struct Module {
    file: PathBuf,
    tokens: Vec<Token>,
    /// Modules declared here with `mod name;`.
    children: Vec<String>,
}

/// One crate's modules, and each dependency with where it was first seen (`file:line`).
struct Graph {
    modules: BTreeMap<ModPath, Module>,
    edges: BTreeMap<(ModPath, ModPath), String>,
}

// ---------------------------------------------------------------------------------------------
// Reading: tokens without comments and literals, test-only items dropped.

fn lex(src: &str) -> Vec<Token> {
    let c: Vec<char> = src.chars().collect();
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    while i < c.len() {
        let (ch, next) = (c[i], at(&c, i + 1));
        let mut push = |tok, width| {
            out.push(Token { tok, line });
            i + width
        };
        i = match ch {
            '\n' => {
                line += 1;
                i + 1
            }
            _ if ch.is_whitespace() => i + 1,
            '/' if next == '/' => (i..c.len()).find(|&k| c[k] == '\n').unwrap_or(c.len()),
            '/' if next == '*' => skip_block_comment(&c, i, &mut line),
            '"' => skip_string(&c, i + 1, None, &mut line),
            '\'' => skip_quote(&c, i),
            ':' if next == ':' => push(Tok::Sep, 2),
            _ if ident_char(ch) || (ch == '$' && ident_char(next)) => {
                word(&c, i, &mut line, &mut out)
            }
            _ => push(Tok::Punct(ch), 1),
        };
    }
    out
}

fn at(c: &[char], k: usize) -> char {
    c.get(k).copied().unwrap_or('\0')
}

fn ident_char(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_'
}

/// The index just past the (nested) block comment at `i`.
fn skip_block_comment(c: &[char], mut i: usize, line: &mut usize) -> usize {
    let mut depth = 0;
    loop {
        match (at(c, i), at(c, i + 1)) {
            ('/', '*') => (depth, i) = (depth + 1, i + 2),
            ('*', '/') => (depth, i) = (depth - 1, i + 2),
            ('\0', _) => return i,
            (n, _) => (*line, i) = (*line + usize::from(n == '\n'), i + 1),
        }
        if depth == 0 {
            return i;
        }
    }
}

/// The index just past the char literal ('x', '\n', '\u{..}') or lifetime at `i`.
fn skip_quote(c: &[char], i: usize) -> usize {
    if at(c, i + 1) == '\\' {
        (i + 3..c.len()).find(|&k| c[k] == '\'').unwrap_or(c.len()) + 1
    } else if at(c, i + 2) == '\'' {
        i + 3
    } else {
        (i + 1..c.len())
            .find(|&k| !ident_char(c[k]))
            .unwrap_or(c.len())
    }
}

/// The word at `i`: an identifier (kept), a number (dropped), or the prefix of a raw or byte
/// string (the string is skipped). Returns the index past it.
fn word(c: &[char], start: usize, line: &mut usize, out: &mut Vec<Token>) -> usize {
    let mut i = start + 1;
    while ident_char(at(c, i)) {
        i += 1;
    }
    let word: String = c[start..i].iter().collect();
    let hashes = (i..c.len()).take_while(|&k| c[k] == '#').count();
    match word.as_str() {
        "r" | "br" | "cr" if at(c, i + hashes) == '"' => {
            skip_string(c, i + hashes + 1, Some(hashes), line)
        }
        "b" | "c" if at(c, i) == '"' => skip_string(c, i + 1, None, line),
        // A raw identifier: r#name is name.
        "r" if hashes == 1 => i + 1,
        _ => {
            if !c[start].is_ascii_digit() {
                out.push(Token {
                    tok: Tok::Ident(word),
                    line: *line,
                });
            }
            i
        }
    }
}

/// The index just past a string literal whose body starts at `i`: raw with `hashes` hashes
/// (`Some(0)` for `r"…"`), or with escapes (`None`).
fn skip_string(c: &[char], mut i: usize, raw: Option<usize>, line: &mut usize) -> usize {
    let hashes = raw.unwrap_or(0);
    while i < c.len() {
        match c[i] {
            '\\' if raw.is_none() => {
                *line += usize::from(c.get(i + 1) == Some(&'\n'));
                i += 2;
                continue;
            }
            '"' if (1..=hashes).all(|h| c.get(i + h) == Some(&'#')) => return i + 1 + hashes,
            '\n' => *line += 1,
            _ => {}
        }
        i += 1;
    }
    i
}

fn is(t: Option<&Token>, want: &Tok) -> bool {
    t.is_some_and(|t| &t.tok == want)
}

fn ident(t: Option<&Token>) -> Option<&str> {
    match t.map(|t| &t.tok) {
        Some(Tok::Ident(s)) => Some(s),
        _ => None,
    }
}

/// Drops every item under `#[cfg(test)]` or `#[cfg(doctest)]`: its attributes, then up to its
/// `;` or the `}` that closes its body.
fn strip_test_items(tokens: Vec<Token>) -> Vec<Token> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let cfg = ["#", "[", "cfg", "(", "?", ")", "]"];
        let test_cfg = cfg.iter().enumerate().all(|(k, want)| {
            let t = tokens.get(i + k).map(|t| &t.tok);
            match (*want, t) {
                ("?", Some(Tok::Ident(w))) => w == "test" || w == "doctest",
                (w, Some(Tok::Ident(s))) => w == s,
                (w, Some(Tok::Punct(p))) => w.starts_with(*p),
                _ => false,
            }
        });
        if !test_cfg {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        }
        i += cfg.len();
        let mut depth = 0i32;
        while let Some(t) = tokens.get(i) {
            i += 1;
            match t.tok {
                Tok::Punct('(' | '[' | '{') => depth += 1,
                Tok::Punct(')' | ']') => depth -= 1,
                Tok::Punct('}') => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                Tok::Punct(';') if depth == 0 => break,
                // Attributes after the cfg belong to the item: `#[..]` closes at depth 0.
                _ => {}
            }
        }
    }
    out
}

/// The modules declared with `mod name;` (an inline `mod name { .. }` stays part of its file).
fn mod_decls(tokens: &[Token]) -> Vec<String> {
    (0..tokens.len())
        .filter(|&i| ident(tokens.get(i)) == Some("mod"))
        .filter(|&i| is(tokens.get(i + 2), &Tok::Punct(';')))
        .filter_map(|i| ident(tokens.get(i + 1)).map(str::to_string))
        .collect()
}

/// Reads a crate from its root file down its `mod` declarations.
fn load(root: &Path) -> BTreeMap<ModPath, Module> {
    let mut modules = BTreeMap::new();
    let mut todo = vec![(ModPath::new(), root.to_path_buf())];
    while let Some((path, file)) = todo.pop() {
        let src = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        let tokens = strip_test_items(lex(&src));
        let children = mod_decls(&tokens);
        let dir = children_dir(&path, &file);
        for child in &children {
            let found = [
                dir.join(format!("{child}.rs")),
                dir.join(child).join("mod.rs"),
            ]
            .into_iter()
            .find(|f| f.is_file())
            .unwrap_or_else(|| {
                panic!(
                    "{}: `mod {child};` has no {child}.rs or {child}/mod.rs in {} \
                         (a #[path] module outside #[cfg(test)]? teach this test to follow it)",
                    file.display(),
                    dir.display()
                )
            });
            let mut child_path = path.clone();
            child_path.push(child.clone());
            todo.push((child_path, found));
        }
        let module = Module {
            file,
            tokens,
            children,
        };
        modules.insert(path, module);
    }
    modules
}

/// Where a module's `mod` declarations find their files: beside the crate root or a `mod.rs`,
/// in a folder named after any other file.
fn children_dir(path: &ModPath, file: &Path) -> PathBuf {
    let dir = file.parent().expect("a source file has a folder");
    let stem = file.file_stem().expect("a source file has a name");
    if path.is_empty() || stem == "mod" {
        dir.to_path_buf()
    } else {
        dir.join(stem)
    }
}

// ---------------------------------------------------------------------------------------------
// Paths: what each module names, resolved to the module that defines it.

/// A path as written, where it was written, and whether it is a leaf of a `pub use`.
struct Ref {
    segs: Vec<String>,
    /// For a `use` leaf, the name it brings in (`*` for a glob).
    name: Option<String>,
    public_use: bool,
    line: usize,
}

fn refs(tokens: &[Token]) -> Vec<Ref> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let prev = i.checked_sub(1).and_then(|p| tokens.get(p));
        if ident(tokens.get(i)) == Some("use") {
            // `pub use` or `pub(crate) use`: a `)` can stand before `use` only as visibility.
            let public = ident(prev) == Some("pub") || is(prev, &Tok::Punct(')'));
            let line = tokens[i].line;
            i += 1;
            let mut leaves = Vec::new();
            while i < tokens.len() && !is(tokens.get(i), &Tok::Punct(';')) {
                use_tree(tokens, &mut i, Vec::new(), &mut leaves);
            }
            out.extend(leaves.into_iter().map(|(segs, name)| Ref {
                segs,
                name: Some(name),
                public_use: public,
                line,
            }));
        } else if ident(tokens.get(i)).is_some()
            && is(tokens.get(i + 1), &Tok::Sep)
            && !is(prev, &Tok::Sep)
        {
            let line = tokens[i].line;
            let mut segs = vec![ident(tokens.get(i)).unwrap_or_default().to_string()];
            i += 1;
            while is(tokens.get(i), &Tok::Sep) {
                let Some(s) = ident(tokens.get(i + 1)) else {
                    break;
                };
                segs.push(s.to_string());
                i += 2;
            }
            out.push(Ref {
                segs,
                name: None,
                public_use: false,
                line,
            });
            continue;
        }
        i += 1;
    }
    out
}

/// One use tree at `i` (`a::b`, `a::{b, c::d}`, `a::*`, `a as b`, `self`), its leaves added to
/// `out` as (path, name brought in).
fn use_tree(
    t: &[Token],
    i: &mut usize,
    mut prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, String)>,
) {
    let Some(tok) = t.get(*i).map(|t| t.tok.clone()) else {
        return;
    };
    *i += 1;
    match tok {
        Tok::Punct('{') => {
            while *i < t.len() && !is(t.get(*i), &Tok::Punct('}')) {
                if is(t.get(*i), &Tok::Punct(',')) {
                    *i += 1;
                } else {
                    use_tree(t, i, prefix.clone(), out);
                }
            }
            *i += 1;
        }
        Tok::Punct('*') => out.push((prefix, "*".into())),
        Tok::Sep => use_tree(t, i, prefix, out),
        Tok::Ident(seg) if is(t.get(*i), &Tok::Sep) => {
            prefix.push(seg);
            *i += 1;
            use_tree(t, i, prefix, out);
        }
        Tok::Ident(seg) => {
            let alias = (ident(t.get(*i)) == Some("as")).then(|| {
                *i += 2;
                ident(t.get(*i - 1)).unwrap_or("_").to_string()
            });
            let own = if seg == "self" {
                prefix.last().cloned().unwrap_or_default()
            } else {
                prefix.push(seg.clone());
                seg
            };
            out.push((prefix, alias.unwrap_or(own)));
        }
        // A stray token (`,` or `}` of an enclosing tree is handled by the caller).
        Tok::Punct(_) => {}
    }
}

/// The path from the crate root that `segs`, written in module `from`, names; `None` for a
/// path outside the crate.
fn absolute(from: &ModPath, segs: &[String], children: &[String]) -> Option<ModPath> {
    let first = segs.first()?;
    match first.as_str() {
        "crate" | "$crate" => Some(segs[1..].to_vec()),
        "self" | "super" => {
            let mut base = from.clone();
            let mut k = 0;
            while let Some(s) = segs.get(k).filter(|s| *s == "self" || *s == "super") {
                if s == "super" {
                    base.pop()?;
                }
                k += 1;
            }
            base.extend_from_slice(&segs[k..]);
            Some(base)
        }
        name if children.iter().any(|c| c == name) => {
            Some(from.iter().chain(segs).cloned().collect())
        }
        _ => None,
    }
}

impl Graph {
    fn build(modules: BTreeMap<ModPath, Module>) -> Graph {
        let mut g = Graph {
            modules,
            edges: BTreeMap::new(),
        };
        let reexports = g.reexports();
        let mut edges = BTreeMap::new();
        for (from, m) in &g.modules {
            for r in refs(&m.tokens) {
                let Some(abs) = absolute(from, &r.segs, &m.children) else {
                    continue;
                };
                if r.public_use && g.is_reexport(from, &abs, &reexports) {
                    continue;
                }
                let to = g.module_of(&abs, &reexports, 0);
                if &to != from {
                    let file = m.file.file_name().unwrap_or_default().to_string_lossy();
                    let seen = format!("{file}:{}", r.line);
                    edges.entry((from.clone(), to)).or_insert(seen);
                }
            }
        }
        g.edges = edges;
        g
    }

    /// Per module, the names its `pub use` items bring in, and the paths they stand for.
    fn reexports(&self) -> BTreeMap<ModPath, BTreeMap<String, ModPath>> {
        let mut map: BTreeMap<ModPath, BTreeMap<String, ModPath>> = BTreeMap::new();
        for (from, m) in &self.modules {
            for r in refs(&m.tokens).into_iter().filter(|r| r.public_use) {
                let (Some(abs), Some(name)) = (absolute(from, &r.segs, &m.children), r.name) else {
                    continue;
                };
                map.entry(from.clone()).or_default().insert(name, abs);
            }
        }
        map
    }

    /// A `pub use` of something inside the module's own children is its façade, not a
    /// dependency: the paths through it count against the module that defines the item.
    fn is_reexport(
        &self,
        from: &ModPath,
        abs: &ModPath,
        reexports: &BTreeMap<ModPath, BTreeMap<String, ModPath>>,
    ) -> bool {
        abs.len() > from.len()
            && abs.starts_with(from)
            && &self.module_of(abs, reexports, 0) != from
    }

    /// The module that defines what `abs` names: its longest prefix that is a module, followed
    /// through that module's `pub use` items.
    fn module_of(
        &self,
        abs: &ModPath,
        reexports: &BTreeMap<ModPath, BTreeMap<String, ModPath>>,
        depth: usize,
    ) -> ModPath {
        let n = (0..=abs.len())
            .rev()
            .find(|&n| self.modules.contains_key(&abs[..n]))
            .unwrap_or(0);
        let module = abs[..n].to_vec();
        let through = abs
            .get(n)
            .and_then(|name| reexports.get(&module)?.get(name));
        match through {
            Some(target) if depth < 8 && target != abs => {
                let mut next = target.clone();
                next.extend_from_slice(&abs[n + 1..]);
                self.module_of(&next, reexports, depth + 1)
            }
            _ => module,
        }
    }

    fn name(path: &ModPath) -> String {
        if path.is_empty() {
            "crate".into()
        } else {
            path.join("::")
        }
    }

    /// Every circle: each strongly connected component of more than one module, as its
    /// modules and the dependencies inside it.
    fn circles(&self) -> Vec<Circle> {
        let ids: Vec<&ModPath> = self.modules.keys().collect();
        let index = |p: &ModPath| ids.iter().position(|q| *q == p).expect("a known module");
        let mut adj = vec![Vec::new(); ids.len()];
        for (from, to) in self.edges.keys() {
            adj[index(from)].push(index(to));
        }
        let inside = |scc: &[usize], p: &ModPath| scc.contains(&index(p));
        strongly_connected(&adj)
            .into_iter()
            .map(|scc| Circle {
                modules: scc.iter().map(|&v| Graph::name(ids[v])).collect(),
                edges: (self.edges.iter())
                    .filter(|((from, to), _)| inside(&scc, from) && inside(&scc, to))
                    .map(|((from, to), seen)| {
                        format!("{} -> {} ({seen})", Graph::name(from), Graph::name(to))
                    })
                    .collect(),
            })
            .collect()
    }
}

/// Modules that depend on each other, and the dependencies that tie them.
struct Circle {
    modules: Vec<String>,
    edges: Vec<String>,
}

/// Tarjan's algorithm: the strongly connected components of more than one vertex.
fn strongly_connected(adj: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        adj: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        let adj = s.adj;
        for &w in &adj[v] {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if s.index[v] == Some(s.low[v]) {
            let mut scc = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                scc.push(w);
                if w == v {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.sort_unstable();
                s.out.push(scc);
            }
        }
    }
    let n = adj.len();
    let mut s = State {
        adj,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}

// ---------------------------------------------------------------------------------------------
// The workspace.

/// Every crate of the workspace by its directory name, with its root files (`lib.rs` and/or
/// `main.rs`: each is a crate of its own).
fn workspace_crates() -> Vec<(String, PathBuf)> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&crates).expect("reading crates/") {
        let dir = entry.expect("a crates/ entry").path();
        let name = dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        for root in ["lib.rs", "main.rs"] {
            let file = dir.join("src").join(root);
            if file.is_file() {
                found.push((name.clone(), file));
            }
        }
    }
    found.sort();
    found
}

fn say(line: &str) {
    // Straight to stdout, which the test harness does not capture: the circles left in other
    // crates are seen on every run, not only when this test fails.
    let _ = writeln!(std::io::stdout(), "{line}");
}

#[test]
fn the_listed_crates_have_no_circle_between_their_modules() {
    let crates = workspace_crates();
    for expected in EXPECT_NO_CIRCLES {
        assert!(
            crates.iter().any(|(name, _)| name == expected),
            "EXPECT_NO_CIRCLES names `{expected}`, which is no directory under crates/"
        );
    }
    let mut failures = Vec::new();
    for (name, root) in &crates {
        let graph = Graph::build(load(root));
        let root_file = root.file_name().unwrap_or_default().to_string_lossy();
        for circle in graph.circles() {
            let text = format!(
                "module circle in {name} ({root_file}): {}\n  {}",
                circle.modules.join(", "),
                circle.edges.join("\n  ")
            );
            say(&text);
            if EXPECT_NO_CIRCLES.contains(&name.as_str()) {
                failures.push(text);
            }
        }
        if EXPECT_NO_CIRCLES.contains(&name.as_str()) {
            // A reader that found nothing would pass vacuously.
            assert!(
                graph.modules.len() > 1 && !graph.edges.is_empty(),
                "{name}: read {} modules and {} dependencies; the reader is broken",
                graph.modules.len(),
                graph.edges.len()
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// The reader itself, on small crates written for the purpose.

/// Builds the graph of a crate made of `files` (path under `src/`, text).
fn graph_of(files: &[(&str, &str)]) -> Graph {
    let dir = tempfile::tempdir().expect("a temporary folder");
    for (path, text) in files {
        let file = dir.path().join("src").join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    Graph::build(load(&dir.path().join("src/lib.rs")))
}

/// The modules of each circle.
fn circle_modules(g: &Graph) -> Vec<Vec<String>> {
    g.circles().into_iter().map(|c| c.modules).collect()
}

#[test]
fn a_circle_through_use_groups_inline_paths_and_super_is_found() {
    let g = graph_of(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\nmod d;\n"),
        ("a.rs", "pub fn f() { crate::b::g() }\n"),
        (
            "b.rs",
            "use crate::{d, c::{self as sea, H}};\npub fn g() {}\n",
        ),
        ("c.rs", "pub struct H;\nfn k() { super::a::f() }\n"),
        ("d.rs", "pub fn lone() {}\n"),
    ]);
    assert_eq!(circle_modules(&g), vec![vec!["a", "b", "c"]]);
}

#[test]
fn tests_comments_and_literals_are_no_dependencies() {
    let g = graph_of(&[
        ("lib.rs", "mod a;\nmod b;\n#[cfg(test)]\nmod props;\n"),
        ("a.rs", "use crate::b::X;\n"),
        (
            "b.rs",
            concat!(
                "pub struct X;\n",
                "/// Unlike [`crate::a`], /* crate::a::Y */ nothing.\n",
                "// crate::a::Y\n",
                "const S: &str = \"crate::a::Y\";\n",
                "const R: &str = r#\"crate::a::Y \"quoted\"\"#;\n",
                "const C: char = '\"'; fn life<'a>(x: &'a str) -> &'a str { x }\n",
                "#[cfg(test)]\nuse crate::a::Y;\n",
                "#[cfg(test)]\nmod tests {\n    use crate::a::Y;\n    fn t() { if true { crate::a::f() } }\n}\n",
            ),
        ),
        ("props.rs", "use crate::a::Y;\n"),
    ]);
    assert_eq!(circle_modules(&g), Vec::<Vec<String>>::new());
    assert!(g.edges.contains_key(&(vec!["a".into()], vec!["b".into()])));
    assert!(!g.modules.contains_key(&vec!["props".to_string()]));
}

#[test]
fn a_reexport_counts_against_the_module_that_defines_the_item() {
    let g = graph_of(&[
        (
            "lib.rs",
            "mod a;\nmod b;\npub use a::Thing;\npub use b::*;\n",
        ),
        ("a.rs", "pub struct Thing;\nfn f() { crate::b::run() }\n"),
        ("b.rs", "use crate::Thing;\npub fn run() {}\n"),
    ]);
    assert_eq!(circle_modules(&g), vec![vec!["a", "b"]]);
    // The root's `pub use` lines are its façade, not a dependency of it.
    assert!(g.edges.keys().all(|(from, _)| !from.is_empty()));
}

#[test]
fn nested_modules_are_read_from_their_folders() {
    let g = graph_of(&[
        ("lib.rs", "mod outer;\nmod other;\n"),
        (
            "outer.rs",
            "mod inner;\npub use inner::Deep;\nfn f() { inner::g() }\n",
        ),
        (
            "outer/inner.rs",
            "pub struct Deep;\npub fn g() { super::super::other::h() }\n",
        ),
        (
            "other/mod.rs",
            "pub fn h() {}\nfn k(_: crate::outer::Deep) {}\n",
        ),
    ]);
    let circles = circle_modules(&g);
    assert_eq!(circles, vec![vec!["other", "outer::inner"]]);
    assert!(g
        .edges
        .contains_key(&(vec!["outer".into()], vec!["outer".into(), "inner".into()])));
}
