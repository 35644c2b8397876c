//! Gathers the README's Rust examples (its ```rust blocks, nothing else) into one markdown file
//! that the library's doc tests compile, so an example in the README cannot drift from the API
//! it shows. The README's other blocks (shell, tables, terminal screens) stay out: rustdoc
//! would take an untagged one for Rust.
use std::path::Path;

fn main() {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    println!("cargo:rerun-if-changed={}", readme.display());
    println!("cargo:rerun-if-changed=build.rs");
    let text = std::fs::read_to_string(&readme).expect("reading the workspace's README.md");
    let out = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("readme_examples.md");
    std::fs::write(out, rust_blocks(&text)).expect("writing the README's examples");
}

/// Every fenced block whose fence says `rust` (with any rustdoc attributes), fences included,
/// each followed by a blank line.
fn rust_blocks(markdown: &str) -> String {
    let mut out = String::new();
    let mut fence: Option<bool> = None; // inside a block: whether it is Rust
    for line in markdown.lines() {
        let is_fence = line.trim_start().starts_with("```");
        match (fence, is_fence) {
            (None, true) => {
                let rust = line.trim_start()[3..].starts_with("rust");
                fence = Some(rust);
                if rust {
                    out.push_str(line);
                    out.push('\n');
                }
            }
            (Some(rust), true) => {
                fence = None;
                if rust {
                    out.push_str(line);
                    out.push_str("\n\n");
                }
            }
            (Some(true), false) => {
                out.push_str(line);
                out.push('\n');
            }
            _ => {}
        }
    }
    out
}
