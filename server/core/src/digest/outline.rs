//! Outlines of source files: one line per definition, found by per-language
//! line patterns (no parser: a digest only needs to say what is where).

use regex::Regex;
use std::sync::LazyLock;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Language {
    Rust,
    TypeScript,
    JavaScript,
    Python,
    Go,
    Java,
    C,
    Cpp,
    Json,
}

impl Language {
    pub(crate) fn from_path(path: &str) -> Option<Language> {
        let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
        Some(match ext.as_str() {
            "rs" => Language::Rust,
            "ts" | "tsx" | "mts" | "cts" => Language::TypeScript,
            "js" | "jsx" | "mjs" | "cjs" => Language::JavaScript,
            "py" | "pyi" => Language::Python,
            "go" => Language::Go,
            "java" | "kt" | "scala" => Language::Java,
            "c" | "h" => Language::C,
            "cc" | "cpp" | "cxx" | "hpp" | "hh" | "cs" => Language::Cpp,
            "json" => Language::Json,
            _ => return None,
        })
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Language::Rust => "Rust",
            Language::TypeScript => "TypeScript",
            Language::JavaScript => "JavaScript",
            Language::Python => "Python",
            Language::Go => "Go",
            Language::Java => "Java",
            Language::C => "C",
            Language::Cpp => "C++",
            Language::Json => "JSON",
        }
    }

    fn patterns(self) -> &'static [Regex] {
        match self {
            Language::Rust => &RUST,
            Language::TypeScript | Language::JavaScript => &JS,
            Language::Python => &PYTHON,
            Language::Go => &GO,
            Language::Java | Language::C | Language::Cpp => &C_FAMILY,
            Language::Json => &[],
        }
    }
}

fn compile(patterns: &[&str]) -> Vec<Regex> {
    patterns.iter().map(|p| Regex::new(p).unwrap()).collect()
}

static RUST: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    compile(&[
        r#"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:(?:default|const|async|unsafe|extern\s+"[^"]*")\s+)*(?:fn|struct|enum|trait|impl|mod|type|union)(?-u:\b)"#,
        r"^\s*macro_rules!\s*\w+",
        r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const|static)\s+[A-Z_][A-Z0-9_]*\s*:",
    ])
});
static JS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    compile(&[
        r"^\s*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?(?:function\s*\*?\s*[\w$]+|class\s+[\w$]+|interface\s+\w+|type\s+\w+\s*[=<]|enum\s+\w+|namespace\s+\w+)",
        r"^(?:export\s+)?(?:const|let|var)\s+[\w$]+\s*(?::[^=]+)?=\s*(?:async\s*)?(?:function(?-u:\b)|\([^)]*\)\s*(?::[^=]+)?=>|[\w$]+\s*=>)",
        r"^\s+(?:(?:public|private|protected|static|readonly|async|get|set|override)\s+)*\*?\s*[A-Za-z_$][\w$]*\s*(?:<[^>]*>)?\([^;]*\)\s*(?::\s*[^={;]+)?\{\s*$",
    ])
});
static PYTHON: LazyLock<Vec<Regex>> =
    LazyLock::new(|| compile(&[r"^\s*(?:async\s+)?def\s+\w+", r"^\s*class\s+\w+"]));
static GO: LazyLock<Vec<Regex>> = LazyLock::new(|| compile(&[r"^func\s", r"^type\s+\w+"]));
static C_FAMILY: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    compile(&[
        r"^\s*(?:(?:public|private|protected|static|final|abstract|sealed)\s+)*(?:class|interface|enum|record|struct|union|namespace)\s+\w+[^;]*$",
        r"^(?:typedef\s+)?(?:struct|enum|union)\s+\w*\s*\{",
        r"^[A-Za-z_][\w\s\*,<>:\[\]]*?[\s\*&]\**([A-Za-z_][\w:~]*)\s*\([^;]*$",
        r"^\s+(?:(?:public|private|protected|static|final|abstract|synchronized|native|override|virtual)\s+)+[\w<>\[\],\s]+\s\w+\s*\([^;]*$",
    ])
});

/// Words that open a statement, not a definition, where a pattern would
/// otherwise take `if (x) {` for a method.
const STATEMENTS: &[&str] = &[
    "if", "for", "while", "switch", "catch", "return", "else", "do", "try", "with", "function",
    "new", "throw", "await",
];

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Definition {
    /// 1-based line in the file.
    pub line: usize,
    /// 0 for top level, 1 for members of a top-level item, and so on.
    pub depth: usize,
    pub signature: String,
}

/// The definitions of `text`, in file order.
pub(crate) fn outline(language: Language, text: &str) -> Vec<Definition> {
    let patterns = language.patterns();
    let mut found: Vec<(usize, usize, String)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if !patterns.iter().any(|p| p.is_match(line)) {
            continue;
        }
        let body = line.trim();
        let first_word = body
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .next()
            .unwrap_or("");
        if STATEMENTS.contains(&first_word) && !body.starts_with("function") {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        found.push((i + 1, indent, signature(body)));
    }
    // Depth is the rank of the indentation among definitions: it works for
    // tabs, two or four spaces alike.
    let mut indents: Vec<usize> = found.iter().map(|(_, indent, _)| *indent).collect();
    indents.sort_unstable();
    indents.dedup();
    found
        .into_iter()
        .map(|(line, indent, signature)| Definition {
            line,
            depth: indents.iter().position(|i| *i == indent).unwrap_or(0),
            signature,
        })
        .collect()
}

/// What a definition is called, from its signature: the name before the
/// parameters (`async calculateConfigForFile(filePath)`, Go's `func (c
/// *Client) Do(`), after a keyword (`class ESLint`, `type Client struct`),
/// or the signature itself.
pub(crate) fn name(signature: &str) -> &str {
    static CALLED: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"[A-Za-z_$][\w$]*(?:<[^()]*>)?\(").unwrap());
    static KEYWORD: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?-u:\b)(?:class|struct|enum|trait|interface|type|mod|union|namespace|record|const|static|macro_rules!)\s*(?:mut\s+)?([A-Za-z_$][\w$]*)").unwrap()
    });
    // The name is a match up to its generics or its parameters (neither
    // `<` nor `(` is a name's character): found without the captures
    // engine, which costs several times the search on every definition.
    // `pub(crate) fn empty()`: a visibility is no name.
    let called = CALLED
        .find_iter(signature)
        .map(|m| m.as_str().split(['<', '(']).next().unwrap_or_default())
        .find(|name| *name != "pub");
    called
        .or_else(|| {
            KEYWORD
                .captures(signature)
                .and_then(|c| c.get(1))
                .map(|m| m.as_str())
        })
        .unwrap_or(signature)
}

/// The definition's line without its body: cut before `{` and `where`.
fn signature(line: &str) -> String {
    let cut = line
        .find(" where ")
        .or_else(|| line.rfind('{'))
        .unwrap_or(line.len());
    let sig = line[..cut]
        .trim_end()
        .trim_end_matches([':', '='])
        .trim_end();
    const MAX_CHARS: usize = 110;
    if sig.chars().count() > MAX_CHARS {
        let end = sig
            .char_indices()
            .nth(MAX_CHARS)
            .map(|(i, _)| i)
            .unwrap_or(sig.len());
        format!("{}…", &sig[..end])
    } else {
        sig.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_before_parameters_or_after_a_keyword() {
        for (signature, want) in [
            ("pub(crate) fn empty()", "empty"),
            (
                "async calculateConfigForFile(filePath)",
                "calculateConfigForFile",
            ),
            ("func (c *Client) Do(req *Request) (*Response, error)", "Do"),
            ("pub fn parse<T: Into<String>>(x: T) -> Result<T>", "parse"),
            ("fn café_au_lait(x: u8)", "café_au_lait"),
            ("export class ESLint", "ESLint"),
            ("impl Display for Id", "impl Display for Id"),
        ] {
            assert_eq!(name(signature), want, "{signature}");
        }
    }

    fn check(language: Language, source: &str, want: &[(usize, usize, &str)]) {
        let got: Vec<(usize, usize, String)> = outline(language, source)
            .into_iter()
            .map(|d| (d.line, d.depth, d.signature))
            .collect();
        let want: Vec<(usize, usize, String)> = want
            .iter()
            .map(|(l, d, s)| (*l, *d, s.to_string()))
            .collect();
        assert_eq!(got, want, "{source}");
    }

    #[test]
    fn names_of_definitions() {
        let cases = [
            (
                "async calculateConfigForFile(filePath)",
                "calculateConfigForFile",
            ),
            ("static get version()", "version"),
            ("class ESLint", "ESLint"),
            ("pub(crate) fn empty() -> ByteClasses", "empty"),
            ("pub(crate) struct ByteClasses([u8; 256]);", "ByteClasses"),
            ("func (c *Client) Do(req *Request) (*Response, error)", "Do"),
            ("type Client struct", "Client"),
            (
                "pub fn new<I, P>(patterns: I) -> Result<AhoCorasick, BuildError>",
                "new",
            ),
            ("export const add = (a: number) =>", "add"),
            ("class Foo(Base)", "Foo"),
            ("macro_rules! try_opt", "try_opt"),
            (
                "impl<'a, 'h> Iterator for FindIter<'a, 'h>",
                "impl<'a, 'h> Iterator for FindIter<'a, 'h>",
            ),
        ];
        for (signature, want) in cases {
            assert_eq!(name(signature), want, "{signature}");
        }
    }

    #[test]
    fn outlines_per_language() {
        check(
            Language::Rust,
            "pub struct A {\n    x: u8,\n}\nimpl A {\n    pub fn new() -> A {\n        if x {\n",
            &[
                (1, 0, "pub struct A"),
                (4, 0, "impl A"),
                (5, 1, "pub fn new() -> A"),
            ],
        );
        check(
            Language::Python,
            "class C:\n    def m(self):\n        pass\n",
            &[(1, 0, "class C"), (2, 1, "def m(self)")],
        );
        check(
            Language::Go,
            "func (c *Client) Do(r *Request) error {\n\tif x {\n",
            &[(1, 0, "func (c *Client) Do(r *Request) error")],
        );
        check(
            Language::TypeScript,
            "export class Cart {\n  add(item: Item): void {\n    if (x) {\n",
            &[(1, 0, "export class Cart"), (2, 1, "add(item: Item): void")],
        );
        check(
            Language::C,
            "static void hash_one(const uint8_t *input) {\n  for (;;) {\n",
            &[(1, 0, "static void hash_one(const uint8_t *input)")],
        );
        check(
            Language::Java,
            "public class Shop {\n    public int total(List<Item> items) {\n",
            &[
                (1, 0, "public class Shop"),
                (2, 1, "public int total(List<Item> items)"),
            ],
        );
    }
}
