//! The syntax tree of a parsed path, public so that code generation can turn singular paths into
//! plain `get`/index chains and so that tools can inspect what a path does.
//!
//! The tree follows RFC 9535's vocabulary (segments made of selectors, filters made of logical
//! expressions), extended with what the Jayway dialect adds. [`std::fmt::Display`] renders a
//! canonical text that parses back to an equal tree.

use std::fmt::{self, Write};

use serde_json::Value;

/// One step of a path: a set of selectors applied to the children (or descendants) of each node
/// reached so far.
#[derive(Debug, Clone, PartialEq)]
pub enum Segment {
    /// `.name`, `.*`, `[...]` (and Jayway's `.[...]`): the selectors apply to each node's children.
    Child(Vec<Selector>),
    /// `..name`, `..*`, `..[...]`: the selectors apply to the node and all its descendants.
    Descendant(Vec<Selector>),
}

impl Segment {
    /// The selectors of this segment.
    pub fn selectors(&self) -> &[Selector] {
        match self {
            Segment::Child(s) | Segment::Descendant(s) => s,
        }
    }

    /// The single name or index this segment selects, when it is a child segment with exactly one
    /// such selector (the only kind of step a singular path has).
    pub fn as_singular(&self) -> Option<SingularStep<'_>> {
        match self {
            Segment::Child(sels) => match sels.as_slice() {
                [Selector::Name(n)] => Some(SingularStep::Name(n)),
                [Selector::Index(i)] => Some(SingularStep::Index(*i)),
                _ => None,
            },
            Segment::Descendant(_) => None,
        }
    }
}

/// A step of a singular path: a member name or an array index (negative counts from the end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SingularStep<'a> {
    /// An object member.
    Name(&'a str),
    /// An array element; negative indices count from the end (`-1` is the last element).
    Index(i64),
}

/// What a segment selects among the children of a node.
#[derive(Debug, Clone, PartialEq)]
pub enum Selector {
    /// An object member by name (`.name`, `['name']`).
    Name(String),
    /// An array element by index (`[0]`, `[-1]`).
    Index(i64),
    /// Every child (`*`): the values of an object in document order, or the elements of an array.
    Wildcard,
    /// Array elements by slice (`[start:end:step]`).
    Slice(Slice),
    /// The children that pass a test (`[?(...)]`, `[?...]`). Jayway dialect: applied to an
    /// object (rather than an array), the test is made on the object itself.
    Filter(Box<LogicalExpr>),
}

/// An array slice `[start:end:step]`; absent bounds take RFC 9535's defaults for the step's sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slice {
    /// First index (inclusive); negative counts from the end.
    pub start: Option<i64>,
    /// Last index (exclusive); negative counts from the end.
    pub end: Option<i64>,
    /// Step; `0` selects nothing, negative walks backwards. Default `1`.
    pub step: Option<i64>,
}

/// A filter's Boolean expression.
#[derive(Debug, Clone, PartialEq)]
pub enum LogicalExpr {
    /// `a || b || ...` (two or more).
    Or(Vec<LogicalExpr>),
    /// `a && b && ...` (two or more).
    And(Vec<LogicalExpr>),
    /// `!a`.
    Not(Box<LogicalExpr>),
    /// A parenthesised expression, kept so that rendering keeps the user's grouping.
    Paren(Box<LogicalExpr>),
    /// An existence test: true when the query selects at least one node (`[?(@.isbn)]`).
    Exists(FilterQuery),
    /// A comparison of two values.
    Compare {
        /// Left-hand side.
        left: Comparable,
        /// The operator.
        op: CmpOp,
        /// Right-hand side.
        right: Comparable,
    },
}

/// A comparison operator: RFC 9535's six, and Jayway's word operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// Jayway `in`: the left value is an element of the right array.
    In,
    /// Jayway `nin`: the left value is not an element of the right array.
    Nin,
    /// Jayway `subsetof`: every element of the left array is in the right array.
    SubsetOf,
    /// Jayway `anyof`: the left and right arrays share an element.
    AnyOf,
    /// Jayway `noneof`: the left and right arrays share no element.
    NoneOf,
    /// Jayway `size`: the left array's (or string's) length is the right number.
    Size,
    /// Jayway `empty`: whether the left array (or string) is empty is the right Boolean.
    Empty,
    /// Jayway `contains`: the left string contains the right string, or the left array contains
    /// the right value.
    Contains,
}

impl CmpOp {
    /// The operator's text.
    pub fn as_str(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::In => "in",
            CmpOp::Nin => "nin",
            CmpOp::SubsetOf => "subsetof",
            CmpOp::AnyOf => "anyof",
            CmpOp::NoneOf => "noneof",
            CmpOp::Size => "size",
            CmpOp::Empty => "empty",
            CmpOp::Contains => "contains",
        }
    }

    /// Whether this is one of Jayway's word operators. Their operands may be array literals and
    /// non-singular queries (which compare as the array of what they select).
    pub fn is_jayway(self) -> bool {
        !matches!(self, CmpOp::Eq | CmpOp::Ne | CmpOp::Lt | CmpOp::Le | CmpOp::Gt | CmpOp::Ge)
    }

    /// The word operators, for the parser.
    pub(crate) const WORDS: [CmpOp; 8] = [
        CmpOp::In,
        CmpOp::Nin,
        CmpOp::SubsetOf,
        CmpOp::AnyOf,
        CmpOp::NoneOf,
        CmpOp::Size,
        CmpOp::Empty,
        CmpOp::Contains,
    ];
}

/// One side of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub enum Comparable {
    /// A JSON literal: number, string, `true`, `false` or `null`; with Jayway's word operators
    /// also an array of literals (`['S', 'M']`).
    Literal(Value),
    /// A query (`@.x`, `$.limits.max`): singular for RFC 9535's operators, where it compares as
    /// "nothing" when it selects nothing. With Jayway's word operators a non-singular query
    /// compares as the array of the nodes it selects.
    Query(FilterQuery),
    /// A function whose result is a value (`length(@.tags)`).
    Function(FunctionExpr),
}

/// Where a query inside a filter starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryRoot {
    /// `@`: the node being tested.
    Current,
    /// `$`: the document the whole path is applied to.
    Root,
}

/// A query inside a filter: `@...` or `$...`, optionally ending in a Jayway path function
/// (`@.tags.length()`).
#[derive(Debug, Clone, PartialEq)]
pub struct FilterQuery {
    /// `@` or `$`.
    pub root: QueryRoot,
    /// The segments after the root.
    pub segments: Vec<Segment>,
    /// A final path function, applied to what the segments select.
    pub function: Option<PathFunction>,
}

impl FilterQuery {
    /// Whether the query gives at most one value: names and indices only, or any query ending
    /// in a path function (which gives one value).
    pub fn is_singular(&self) -> bool {
        self.function.is_some() || self.segments.iter().all(|s| s.as_singular().is_some())
    }
}

/// A Jayway path function, written as the last step of a path (`$.items.length()`). It applies
/// to what the rest of the path selects: the node for a definite path, else the array of matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PathFunction {
    /// `length()`: elements of an array, members of an object.
    Length,
    /// `size()`: the same as `length()`.
    Size,
    /// `min()`: the smallest number in an array.
    Min,
    /// `max()`: the largest number in an array.
    Max,
    /// `avg()`: the mean of the numbers in an array.
    Avg,
    /// `stddev()`: the population standard deviation of the numbers in an array.
    Stddev,
    /// `sum()`: the sum of the numbers in an array.
    Sum,
    /// `keys()`: an object's member names.
    Keys,
    /// `first()`: an array's first element.
    First,
    /// `last()`: an array's last element.
    Last,
}

impl PathFunction {
    /// Every path function, for the parser.
    pub(crate) const ALL: [PathFunction; 10] = [
        PathFunction::Length,
        PathFunction::Size,
        PathFunction::Min,
        PathFunction::Max,
        PathFunction::Avg,
        PathFunction::Stddev,
        PathFunction::Sum,
        PathFunction::Keys,
        PathFunction::First,
        PathFunction::Last,
    ];

    /// The function's name as written (without the parentheses).
    pub fn name(self) -> &'static str {
        match self {
            PathFunction::Length => "length",
            PathFunction::Size => "size",
            PathFunction::Min => "min",
            PathFunction::Max => "max",
            PathFunction::Avg => "avg",
            PathFunction::Stddev => "stddev",
            PathFunction::Sum => "sum",
            PathFunction::Keys => "keys",
            PathFunction::First => "first",
            PathFunction::Last => "last",
        }
    }
}

/// The filter functions of RFC 9535 that this implementation evaluates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Function {
    /// `length(value)`: characters of a string, elements of an array, members of an object.
    Length,
    /// `count(nodes)`: how many nodes a query selects.
    Count,
    /// `value(nodes)`: the single node's value, or nothing.
    Value,
}

impl Function {
    /// The function's name as written.
    pub fn name(self) -> &'static str {
        match self {
            Function::Length => "length",
            Function::Count => "count",
            Function::Value => "value",
        }
    }
}

/// A function call inside a filter.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionExpr {
    /// Which function.
    pub function: Function,
    /// Its one argument.
    pub arg: Box<FunctionArg>,
}

/// A function argument.
#[derive(Debug, Clone, PartialEq)]
pub enum FunctionArg {
    /// A literal value.
    Literal(Value),
    /// A query; for value-typed parameters it must be singular.
    Query(FilterQuery),
    /// A nested function call.
    Function(FunctionExpr),
}

/// Renders `s` as a single-quoted JSONPath string literal.
pub(crate) fn write_quoted(f: &mut impl Write, s: &str) -> fmt::Result {
    f.write_char('\'')?;
    for c in s.chars() {
        match c {
            '\'' => f.write_str("\\'")?,
            '\\' => f.write_str("\\\\")?,
            '\u{8}' => f.write_str("\\b")?,
            '\u{c}' => f.write_str("\\f")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            '\t' => f.write_str("\\t")?,
            c if (c as u32) < 0x20 => write!(f, "\\u{:04x}", c as u32)?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('\'')
}

/// Renders a literal so that it re-parses to the same value: strings single-quoted, arrays
/// element by element, the rest as JSON.
fn write_literal(f: &mut fmt::Formatter<'_>, v: &Value) -> fmt::Result {
    match v {
        Value::String(s) => write_quoted(f, s),
        Value::Array(items) => {
            f.write_char('[')?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write_literal(f, item)?;
            }
            f.write_char(']')
        }
        other => write!(f, "{other}"),
    }
}

/// Renders segments in canonical bracket form (`['name']`, `[0]`, `[*]`, `..[...]`).
pub(crate) fn write_segments(f: &mut fmt::Formatter<'_>, segments: &[Segment]) -> fmt::Result {
    for seg in segments {
        write!(f, "{seg}")?;
    }
    Ok(())
}

impl fmt::Display for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sels = match self {
            Segment::Child(s) => s,
            Segment::Descendant(s) => {
                f.write_str("..")?;
                s
            }
        };
        f.write_char('[')?;
        for (i, sel) in sels.iter().enumerate() {
            if i > 0 {
                f.write_char(',')?;
            }
            write!(f, "{sel}")?;
        }
        f.write_char(']')
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selector::Name(n) => write_quoted(f, n),
            Selector::Index(i) => write!(f, "{i}"),
            Selector::Wildcard => f.write_char('*'),
            Selector::Slice(s) => {
                if let Some(start) = s.start {
                    write!(f, "{start}")?;
                }
                f.write_char(':')?;
                if let Some(end) = s.end {
                    write!(f, "{end}")?;
                }
                if let Some(step) = s.step {
                    write!(f, ":{step}")?;
                }
                Ok(())
            }
            Selector::Filter(e) => write!(f, "?{e}"),
        }
    }
}

impl fmt::Display for LogicalExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LogicalExpr::Or(items) | LogicalExpr::And(items) => {
                let sep = if matches!(self, LogicalExpr::Or(_)) { " || " } else { " && " };
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(sep)?;
                    }
                    write!(f, "{item}")?;
                }
                Ok(())
            }
            LogicalExpr::Not(inner) => write!(f, "!{inner}"),
            LogicalExpr::Paren(inner) => write!(f, "({inner})"),
            LogicalExpr::Exists(q) => write!(f, "{q}"),
            LogicalExpr::Compare { left, op, right } => write!(f, "{left} {} {right}", op.as_str()),
        }
    }
}

impl fmt::Display for Comparable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Comparable::Literal(v) => write_literal(f, v),
            Comparable::Query(q) => write!(f, "{q}"),
            Comparable::Function(func) => write!(f, "{func}"),
        }
    }
}

impl fmt::Display for FilterQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_char(match self.root {
            QueryRoot::Current => '@',
            QueryRoot::Root => '$',
        })?;
        write_segments(f, &self.segments)?;
        match self.function {
            Some(func) => write!(f, "{func}"),
            None => Ok(()),
        }
    }
}

/// Renders as `.name()`, the way it follows a path.
impl fmt::Display for PathFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, ".{}()", self.name())
    }
}

impl fmt::Display for FunctionExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(", self.function.name())?;
        match &*self.arg {
            FunctionArg::Literal(v) => write_literal(f, v)?,
            FunctionArg::Query(q) => write!(f, "{q}")?,
            FunctionArg::Function(func) => write!(f, "{func}")?,
        }
        f.write_char(')')
    }
}
