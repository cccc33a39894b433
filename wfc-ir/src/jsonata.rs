//! JSONata expressions (`QueryLanguage: "JSONata"`), as ASL embeds them: a string that starts
//! with `{%` and ends with `%}` is an expression, any other string is a literal.
//!
//! The expression language itself is the `jsonata-core` crate (the most complete Rust
//! implementation, see the README's dependency notes); this module is the one place that parses
//! it, so the compiler and the runtime accept exactly the same expressions. Like the path types,
//! a [`JsonataExpr`] serializes as its text and is parsed again when deserialized, which is how
//! generated code gets the syntax tree back from the embedded IR.
//!
//! JSONata is the crate feature `jsonata` (jsonata-core is about a minute of a cold build's CPU,
//! and most definitions use JSONPath). Without it the types remain, so the IR has one shape, but
//! [`JsonataExpr::parse`] (and so deserializing one) fails with [`FEATURE_OFF`]: no expression
//! exists to evaluate. The compiler reports a definition that needs it at its `QueryLanguage`.

use std::fmt;
#[cfg(feature = "jsonata")]
use std::sync::Arc;

#[cfg(feature = "jsonata")]
use jsonata_core::ast::AstNode;
#[cfg(feature = "jsonata")]
use jsonata_core::parser::{Lexer, Token};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// Whether this build has JSONata (the `jsonata` feature of wfc-ir, which the `jsonata` features
/// of wfc-runtime, wfc-macro, wfc-core and wfc-build enable).
pub const AVAILABLE: bool = cfg!(feature = "jsonata");

/// Why an expression cannot be parsed or run in a build without the `jsonata` feature, and how
/// to enable it.
pub const FEATURE_OFF: &str = "JSONata is not compiled into this build of wfc: enable the `jsonata` feature of \
    wfc-runtime (`wfc-runtime = { version = \"0.1\", features = [\"jsonata\"] }`; of wfc-build too when \
    compiling from build.rs)";

/// Longest expression accepted, in bytes: the parser recurses per nesting level, so this bounds
/// its stack use whatever a definition holds (AWS's whole definition limit is 1 MB).
pub const MAX_EXPRESSION_BYTES: usize = 16 * 1024;
/// Deepest bracket nesting accepted inside one expression, for the same reason.
pub const MAX_EXPRESSION_NESTING: usize = 64;

/// A parsed JSONata expression (the text between `{%` and `%}`).
#[derive(Clone)]
pub struct JsonataExpr {
    /// The expression as written between the delimiters (not trimmed).
    text: String,
    #[cfg(feature = "jsonata")]
    ast: Arc<AstNode>,
}

impl fmt::Debug for JsonataExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("JsonataExpr").field(&self.text).finish()
    }
}

impl PartialEq for JsonataExpr {
    fn eq(&self, other: &JsonataExpr) -> bool {
        self.text == other.text
    }
}

/// An expression that failed to parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct JsonataError {
    /// The parser's message, with its JSONata error code (`S0202: ...`) where it has one.
    pub message: String,
    /// Byte offset into the expression text, when the problem can be located.
    pub offset: Option<usize>,
}

impl JsonataExpr {
    /// Parses the text between `{%` and `%}`. Also rejects what AWS does not allow at the top
    /// of an expression: `$eval` (AWS removed it) and an empty expression. Without the `jsonata`
    /// feature every expression fails with [`FEATURE_OFF`].
    pub fn parse(text: &str) -> Result<JsonataExpr, JsonataError> {
        if text.trim().is_empty() {
            return Err(JsonataError { message: "the expression is empty".to_owned(), offset: None });
        }
        if text.len() > MAX_EXPRESSION_BYTES {
            return Err(JsonataError {
                message: format!("the expression is longer than {MAX_EXPRESSION_BYTES} bytes"),
                offset: Some(MAX_EXPRESSION_BYTES),
            });
        }
        let mut depth = 0usize;
        for (i, c) in text.char_indices() {
            match c {
                '(' | '[' | '{' => {
                    depth += 1;
                    if depth > MAX_EXPRESSION_NESTING {
                        return Err(JsonataError {
                            message: format!("brackets nest more than {MAX_EXPRESSION_NESTING} levels deep"),
                            offset: Some(i),
                        });
                    }
                }
                ')' | ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        Self::parse_checked(text)
    }

    #[cfg(not(feature = "jsonata"))]
    fn parse_checked(_text: &str) -> Result<JsonataExpr, JsonataError> {
        Err(JsonataError { message: FEATURE_OFF.to_owned(), offset: None })
    }

    #[cfg(feature = "jsonata")]
    fn parse_checked(text: &str) -> Result<JsonataExpr, JsonataError> {
        let tokens = tokens(text).map_err(|message| JsonataError { message, offset: None })?;
        if tokens.iter().any(|t| matches!(t, Token::Variable(v) if v == "eval")) {
            return Err(JsonataError {
                message: "`$eval` is not available in Step Functions; use `$parse` to read JSON text".to_owned(),
                offset: text.find("$eval"),
            });
        }
        let ast = std::panic::catch_unwind(|| jsonata_core::parser::parse(text))
            .map_err(|_| JsonataError { message: "the expression could not be parsed".to_owned(), offset: None })?
            .map_err(|e| JsonataError { message: e.to_string(), offset: None })?;
        Ok(JsonataExpr { text: text.to_owned(), ast: Arc::new(ast) })
    }

    /// The expression text (between the delimiters).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The syntax tree, for the evaluator.
    #[cfg(feature = "jsonata")]
    pub fn ast(&self) -> &AstNode {
        &self.ast
    }

    /// The workflow variables the expression reads (`$name`), excluding `$states`, functions
    /// called by name (`$sum(...)`), and names the expression binds itself (`$x := ...`,
    /// `function($x) {...}` parameters). Used for the compiler's "variable never assigned" check.
    #[cfg(not(feature = "jsonata"))]
    pub fn variables_read(&self) -> Vec<String> {
        Vec::new()
    }

    /// The workflow variables the expression reads (see the `jsonata` build of this method).
    #[cfg(feature = "jsonata")]
    pub fn variables_read(&self) -> Vec<String> {
        let Ok(tokens) = tokens(&self.text) else { return Vec::new() };
        let mut bound = std::collections::HashSet::new();
        let mut in_params = false;
        for (i, t) in tokens.iter().enumerate() {
            match t {
                Token::Function(_) => in_params = true,
                Token::RightParen if in_params => in_params = false,
                Token::Variable(v) if in_params => {
                    bound.insert(v.clone());
                }
                Token::Variable(v) if matches!(tokens.get(i + 1), Some(Token::ColonEqual)) => {
                    bound.insert(v.clone());
                }
                _ => {}
            }
        }
        let mut out: Vec<String> = Vec::new();
        for (i, t) in tokens.iter().enumerate() {
            if let Token::Variable(v) = t
                && !v.is_empty()
                && v != "states"
                && !bound.contains(v)
                && !matches!(tokens.get(i + 1), Some(Token::LeftParen))
                && !out.contains(v)
            {
                out.push(v.clone());
            }
        }
        out
    }

    /// Whether the expression mentions `$states.context` (or the whole `$states`), so callers
    /// build the context object only when it is read.
    pub fn reads_states(&self) -> bool {
        self.text.contains("$states")
    }
}

/// Splits an expression into tokens with the crate's own lexer.
#[cfg(feature = "jsonata")]
fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let mut lexer = Lexer::new(text.to_owned());
    let mut out = Vec::new();
    loop {
        match lexer.next_token() {
            Ok(Token::Eof) => return Ok(out),
            Ok(t) => out.push(t),
            Err(e) => return Err(e.to_string()),
        }
        if out.len() > MAX_EXPRESSION_BYTES {
            return Err("the expression has too many tokens".to_owned());
        }
    }
}

impl Serialize for JsonataExpr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for JsonataExpr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<JsonataExpr, D::Error> {
        let text = String::deserialize(d)?;
        JsonataExpr::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// If `s` is a whole-string JSONata expression (`{% ... %}`, no text outside the delimiters),
/// the text between the delimiters. AWS treats anything else, including `"id-{% $x %}"`, as a
/// literal string.
pub fn expression_text(s: &str) -> Option<&str> {
    s.strip_prefix("{%")?.strip_suffix("%}")
}

/// A JSON value whose string leaves may be JSONata expressions: `Arguments`, `Output`, `Items`,
/// `ItemSelector` and `Assign` values in JSONata states.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum JsonataTemplate {
    /// A subtree with no expressions, copied as is.
    Literal(Value),
    /// A `{% ... %}` string.
    Expr(JsonataExpr),
    /// An object with at least one expression below it.
    Object(Vec<(String, JsonataTemplate)>),
    /// An array with at least one expression below it.
    Array(Vec<JsonataTemplate>),
}

impl JsonataTemplate {
    /// Every expression in the template, depth-first, with the field path AWS names in
    /// `States.QueryEvaluationError` causes (`Arguments/FunctionName`).
    pub fn expressions(&self) -> Vec<&JsonataExpr> {
        let mut out = Vec::new();
        self.walk(&mut out);
        out
    }

    fn walk<'a>(&'a self, out: &mut Vec<&'a JsonataExpr>) {
        match self {
            JsonataTemplate::Literal(_) => {}
            JsonataTemplate::Expr(e) => out.push(e),
            JsonataTemplate::Object(entries) => entries.iter().for_each(|(_, t)| t.walk(out)),
            JsonataTemplate::Array(items) => items.iter().for_each(|t| t.walk(out)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(not(feature = "jsonata"))]
    #[test]
    fn without_the_feature_every_expression_is_refused_with_the_feature_to_enable() {
        let e = JsonataExpr::parse("$states.input").unwrap_err();
        assert_eq!(e.message, FEATURE_OFF);
        let e = serde_json::from_str::<JsonataExpr>("\"1 + 1\"").unwrap_err();
        assert!(e.to_string().contains("enable the `jsonata` feature"), "{e}");
    }

    #[cfg(feature = "jsonata")]
    #[test]
    fn parses_and_round_trips() {
        let e = JsonataExpr::parse(" $states.input.a + 1 ").unwrap();
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(json, "\" $states.input.a + 1 \"");
        let back: JsonataExpr = serde_json::from_str(&json).unwrap();
        assert_eq!(back, e);
    }

    #[cfg(feature = "jsonata")]
    #[test]
    fn rejects_bad_syntax_and_eval() {
        assert!(JsonataExpr::parse("$states.input.(").is_err());
        assert!(JsonataExpr::parse("$eval('1')").is_err());
        assert!(JsonataExpr::parse("   ").is_err());
        assert!(JsonataExpr::parse(&"(".repeat(200)).is_err());
    }

    #[cfg(feature = "jsonata")]
    #[test]
    fn variables_read_skips_functions_and_local_bindings() {
        let e = JsonataExpr::parse("($y := 2; $sum([$x, $y, $states.input.n]) ~> function($v) { $v + $z })").unwrap();
        assert_eq!(e.variables_read(), vec!["x".to_owned(), "z".to_owned()]);
    }

    #[test]
    fn only_whole_strings_are_expressions() {
        assert_eq!(expression_text("{% $x %}"), Some(" $x "));
        assert_eq!(expression_text("id-{% $x %}"), None);
        assert_eq!(expression_text(" {% $x %}"), None);
    }
}
