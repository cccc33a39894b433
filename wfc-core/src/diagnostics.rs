//! PLACEHOLDER (being written): the diagnostic model and its rustc-style renderer.
use std::ops::Range;

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The definition is invalid.
    Error,
    /// Valid, but probably not what was meant.
    Warning,
}

/// One problem, at a byte range of the source.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    /// Stable code, e.g. `WFC0101`.
    pub code: &'static str,
    /// Error or warning.
    pub severity: Severity,
    /// What is wrong.
    pub message: String,
    /// Byte range of the offending node in the source text.
    pub span: Range<usize>,
    /// Secondary spans with their labels.
    pub labels: Vec<(Range<usize>, String)>,
    /// How to fix it, where that is known.
    pub help: Option<String>,
}

/// All diagnostics of one source file, with the text needed to render them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Diagnostics {
    /// The path shown in messages.
    pub path: String,
    /// The source text.
    pub text: String,
    /// The diagnostics, in source order.
    pub items: Vec<Diagnostic>,
}

/// A diagnostic with 1-based line/column positions, as `wfc check --format json` prints it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LocatedDiagnostic {
    /// Stable code.
    pub code: String,
    /// Error or warning.
    pub severity: Severity,
    /// What is wrong.
    pub message: String,
    /// The file.
    pub file: String,
    /// 1-based start line.
    pub line: usize,
    /// 1-based start column (characters).
    pub column: usize,
    /// 1-based end line.
    pub end_line: usize,
    /// 1-based end column (exclusive).
    pub end_column: usize,
    /// How to fix it.
    pub help: Option<String>,
}

impl Diagnostics {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.items.iter().any(|d| d.severity == Severity::Error)
    }
    /// Renders all diagnostics rustc-style, with source excerpts.
    pub fn render(&self, _color: bool) -> String {
        self.items.iter().map(|d| format!("{}[{}]: {}\n", if d.severity == Severity::Error { "error" } else { "warning" }, d.code, d.message)).collect()
    }
    /// Every diagnostic with line/column positions.
    pub fn located(&self) -> Vec<LocatedDiagnostic> {
        Vec::new()
    }
}

impl std::fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render(false))
    }
}

impl std::error::Error for Diagnostics {}
