//! A hand-written recursive-descent parser for the Jayway dialect of JSONPath.
//!
//! The grammar is RFC 9535's, widened where Jayway (and so AWS Step Functions) accepts more:
//! - a dot before a bracket (`$.a.['b c']`, `$.items.[?(@.x)]`), as the AWS docs write it;
//! - dot-notation names with any character that has no meaning in the syntax (`$.key-dash`,
//!   `$.2`, `$.a:b`), where RFC 9535 only allows identifier-like names.
//!
//! Everything else follows RFC 9535, including its whitespace rules and the well-typedness rules
//! for comparisons and functions, so the compiler rejects at build time what would otherwise
//! silently select nothing at run time. Every error carries the byte offset of the problem.

use serde_json::{Number, Value};

use super::ast::{
    CmpOp, Comparable, FilterQuery, Function, FunctionArg, FunctionExpr, LogicalExpr, PathFunction, QueryRoot, Segment,
    Selector, Slice,
};
use super::{PathError, Root};

/// RFC 9535 (I-JSON) limit on indices and slice bounds: 2^53 - 1.
const MAX_INDEX: i64 = (1 << 53) - 1;

/// How deeply filters, parentheses and function calls may nest. Bounds the recursion so that
/// hostile input cannot overflow the stack; real paths nest two or three levels.
const MAX_DEPTH: usize = 64;

/// The result of parsing a whole path.
pub(crate) struct Parsed {
    pub(crate) root: Root,
    pub(crate) segments: Vec<Segment>,
    /// Byte offset where each top-level segment starts, for messages about a given segment.
    pub(crate) offsets: Vec<usize>,
    /// A final Jayway path function (`.length()`) and the byte offset of its `.`.
    pub(crate) function: Option<(PathFunction, usize)>,
}

/// Parses a whole path: `$` or `$$` followed by segments, with nothing after them.
pub(crate) fn parse(text: &str) -> Result<Parsed, PathError> {
    let mut p = Parser { src: text, pos: 0, depth: 0 };
    let root = p.parse_root()?;
    let mut offsets = Vec::new();
    let (segments, function) = p.parse_segments(Some(&mut offsets))?;
    if p.pos < text.len() {
        let rest = &text[p.pos..];
        if rest.chars().all(is_blank) {
            return Err(p.err(p.pos, "a path must not end with whitespace"));
        }
        let after_blank = p.pos + (rest.len() - rest.trim_start_matches(is_blank).len());
        return Err(p.unexpected(after_blank, "expected `.`, `..` or `[` to continue the path"));
    }
    Ok(Parsed { root, segments, offsets, function })
}

/// What [`Parser::parse_segment`] read: a segment, or a path function that ends the path.
enum Step {
    Segment(Segment),
    Function(PathFunction),
}

/// A dot-notation name, or a path function written where a name could be.
enum Shorthand {
    Name(String),
    Function(PathFunction),
}

/// RFC 9535 "blank space": space, tab, line feed, carriage return.
fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// Characters allowed in a dot-notation name (`$.name`). Jayway reads a name up to the next `.`
/// or `[`; we also stop at characters that mean something inside a filter (operators, quotes,
/// brackets, commas), so `@.price<10` reads the name `price`, and at whitespace and control
/// characters, which must be written in a quoted name.
fn is_name_char(c: char) -> bool {
    !(is_blank(c)
        || c.is_control()
        || c.is_whitespace()
        || matches!(c, '.' | '[' | ']' | '(' | ')' | '\'' | '"' | ',' | '=' | '!' | '<' | '>' | '&' | '|' | '?' | '*'))
}

struct Parser<'a> {
    src: &'a str,
    pos: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    fn err(&self, offset: usize, message: impl Into<String>) -> PathError {
        PathError { offset, message: message.into() }
    }

    /// An error naming the character found at `offset`.
    fn unexpected(&self, offset: usize, expected: &str) -> PathError {
        match self.src.get(offset..).and_then(|r| r.chars().next()) {
            Some(c) => self.err(offset, format!("{expected}, found `{}`", c.escape_debug())),
            None => self.err(offset, format!("{expected}, but the path ends here")),
        }
    }

    fn rest(&self) -> &'a str {
        self.src.get(self.pos..).unwrap_or("")
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn peek_at(&self, n: usize) -> Option<char> {
        self.rest().chars().nth(n)
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn eat_str(&mut self, s: &str) -> bool {
        if self.rest().starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    fn skip_blank(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start_matches(is_blank).len();
    }

    fn parse_root(&mut self) -> Result<Root, PathError> {
        match self.peek() {
            None => Err(self.err(0, "a path must begin with `$`, but it is empty")),
            Some(c) if is_blank(c) => Err(self.err(0, "a path must not begin with whitespace")),
            Some('$') => {
                self.pos += 1;
                if self.eat('$') {
                    return Ok(Root::Context);
                }
                // `$name`: a workflow variable (ASL `Assign`), named like an identifier.
                if self.peek().is_some_and(|c| c.is_alphabetic() || c == '_') {
                    let rest = self.rest();
                    let len = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
                    let name = rest[..len].to_owned();
                    self.pos += len;
                    return Ok(Root::Variable(name));
                }
                if self.peek().is_some_and(|c| c.is_alphanumeric()) {
                    return Err(self.err(1, "expected `.`, `..` or `[` after `$` (a variable name cannot start with a digit)"));
                }
                Ok(Root::Input)
            }
            Some('@') => Err(self
                .err(0, "`@` (the current node) can only be used inside a filter `[?(...)]`; a path begins with `$`")),
            Some(_) => Err(self.err(0, "a path must begin with `$` (the input) or `$$` (the context object)")),
        }
    }

    /// Parses segments until something that cannot start one, and a final path function if
    /// there is one. Whitespace may separate segments (RFC 9535), but whitespace that is not
    /// followed by a segment is left unconsumed for the caller (it may precede an operator inside
    /// a filter).
    #[allow(clippy::type_complexity)] // (segments, final function and where it starts)
    fn parse_segments(
        &mut self,
        mut offsets: Option<&mut Vec<usize>>,
    ) -> Result<(Vec<Segment>, Option<(PathFunction, usize)>), PathError> {
        let mut segments = Vec::new();
        loop {
            let save = self.pos;
            self.skip_blank();
            match self.peek() {
                Some('.' | '[') => {
                    let start = self.pos;
                    match self.parse_segment()? {
                        Step::Segment(seg) => {
                            if let Some(o) = offsets.as_deref_mut() {
                                o.push(start);
                            }
                            segments.push(seg);
                        }
                        Step::Function(f) => {
                            let after = self.pos;
                            self.skip_blank();
                            if matches!(self.peek(), Some('.' | '[')) {
                                return Err(self.err(
                                    start,
                                    format!("the path function `{}()` must be the last step of the path", f.name()),
                                ));
                            }
                            self.pos = after;
                            return Ok((segments, Some((f, start))));
                        }
                    }
                }
                _ => {
                    self.pos = save;
                    return Ok((segments, None));
                }
            }
        }
    }

    fn parse_segment(&mut self) -> Result<Step, PathError> {
        let start = self.pos;
        if self.eat_str("..") {
            let seg =
                match self.peek() {
                    Some('*') => {
                        self.pos += 1;
                        Ok(Segment::Descendant(vec![Selector::Wildcard]))
                    }
                    Some('[') => Ok(Segment::Descendant(self.parse_bracket()?)),
                    Some('.') => Err(self.err(start, "`...` is not valid: after `..` write a name, `*` or `[...]`")),
                    None => Err(self
                        .err(start, "a path cannot end with `..`: say what to search for, e.g. `$..name` or `$..*`")),
                    Some(c) if is_blank(c) => Err(self.err(self.pos, "whitespace is not allowed after `..`")),
                    Some(c) if is_name_char(c) => {
                        let at = self.pos;
                        match self.parse_shorthand()? {
                            Shorthand::Name(n) => Ok(Segment::Descendant(vec![Selector::Name(n)])),
                            Shorthand::Function(f) => Err(self.err(
                                at,
                                format!(
                                    "a path function cannot follow `..`; write it after a name, e.g. `$..x.{}()`",
                                    f.name()
                                ),
                            )),
                        }
                    }
                    Some(_) => Err(self.unexpected(self.pos, "expected a name, `*` or `[` after `..`")),
                };
            return seg.map(Step::Segment);
        }
        if self.eat('.') {
            let seg = match self.peek() {
                Some('*') => {
                    self.pos += 1;
                    Ok(Segment::Child(vec![Selector::Wildcard]))
                }
                // Jayway's dot before a bracket: `$.a.['b']` means `$.a['b']`.
                Some('[') => Ok(Segment::Child(self.parse_bracket()?)),
                None => Err(self.err(start, "expected a field name after `.`, but the path ends here")),
                Some(c) if is_blank(c) => Err(self.err(
                    self.pos,
                    "whitespace is not allowed after `.`; write names that contain spaces as `['my name']`",
                )),
                Some(c) if is_name_char(c) => match self.parse_shorthand()? {
                    Shorthand::Name(n) => Ok(Segment::Child(vec![Selector::Name(n)])),
                    Shorthand::Function(f) => return Ok(Step::Function(f)),
                },
                Some(c) => Err(self.err(
                    self.pos,
                    format!(
                        "`{}` cannot start a field name after `.`; write such names in brackets, e.g. `['{}']`",
                        c.escape_debug(),
                        c.escape_debug()
                    ),
                )),
            };
            return seg.map(Step::Segment);
        }
        Ok(Step::Segment(Segment::Child(self.parse_bracket()?)))
    }

    /// A dot-notation name, or a path function `name()`; the caller has checked that a name
    /// starts here.
    fn parse_shorthand(&mut self) -> Result<Shorthand, PathError> {
        let start = self.pos;
        while self.peek().is_some_and(is_name_char) {
            self.bump();
        }
        let name = &self.src[start..self.pos];
        if self.peek() != Some('(') {
            return Ok(Shorthand::Name(name.to_owned()));
        }
        let Some(function) = PathFunction::ALL.into_iter().find(|f| f.name() == name) else {
            return Err(self.err(
                start,
                format!(
                    "unknown or unsupported path function `{name}()`; the supported ones are {}",
                    PathFunction::ALL.map(|f| format!("{}()", f.name())).join(", ")
                ),
            ));
        };
        self.pos += 1;
        if !self.eat(')') {
            return Err(self.err(self.pos, format!("`{name}()` takes no arguments: expected `)`")));
        }
        Ok(Shorthand::Function(function))
    }

    /// `[selector, selector, ...]`.
    fn parse_bracket(&mut self) -> Result<Vec<Selector>, PathError> {
        let open = self.pos;
        if !self.eat('[') {
            return Err(self.unexpected(open, "expected `[`"));
        }
        self.skip_blank();
        if self.peek() == Some(']') {
            return Err(
                self.err(open, "empty brackets `[]`: write a quoted name, an index, `*`, a slice or a filter inside")
            );
        }
        let mut selectors = Vec::new();
        loop {
            selectors.push(self.parse_selector(open)?);
            self.skip_blank();
            if self.eat(',') {
                self.skip_blank();
                continue;
            }
            if self.eat(']') {
                return Ok(selectors);
            }
            if self.peek().is_none() {
                return Err(self.err(open, "unclosed `[`: expected `]`"));
            }
            return Err(self.unexpected(self.pos, "expected `,` or `]`"));
        }
    }

    fn parse_selector(&mut self, open: usize) -> Result<Selector, PathError> {
        match self.peek() {
            Some(q @ ('\'' | '"')) => Ok(Selector::Name(self.parse_string(q)?)),
            Some('*') => {
                self.pos += 1;
                Ok(Selector::Wildcard)
            }
            Some('?') => {
                self.pos += 1;
                self.skip_blank();
                Ok(Selector::Filter(Box::new(self.parse_logical_or()?)))
            }
            Some('-' | '0'..='9' | ':') => self.parse_index_or_slice(),
            None => Err(self.err(open, "unclosed `[`: expected a selector and `]`")),
            Some(c) if c.is_alphabetic() || c == '_' => {
                let start = self.pos;
                let end = self.rest().find(|c: char| !is_name_char(c)).map_or(self.src.len(), |n| start + n);
                let word = &self.src[start..end];
                Err(self.err(start, format!("field names in brackets must be quoted: write `['{word}']`")))
            }
            Some(_) => Err(self.unexpected(
                self.pos,
                "expected a quoted name, an index, `*`, a slice `start:end:step` or a filter `?(...)`",
            )),
        }
    }

    fn parse_index_or_slice(&mut self) -> Result<Selector, PathError> {
        let start = if self.peek() == Some(':') { None } else { Some(self.parse_int()?) };
        if self.peek() == Some('.') && self.peek_at(1).is_some_and(|c| c.is_ascii_digit()) {
            return Err(self.err(self.pos, "array indices must be whole numbers"));
        }
        let save = self.pos;
        self.skip_blank();
        if !self.eat(':') {
            self.pos = save;
            // `start` is always set here: a selector that begins with `:` took the other branch.
            return match start {
                Some(i) => Ok(Selector::Index(i)),
                None => Err(self.unexpected(self.pos, "expected an index")),
            };
        }
        self.skip_blank();
        let end = if matches!(self.peek(), Some('-' | '0'..='9')) { Some(self.parse_int()?) } else { None };
        self.skip_blank();
        let mut step = None;
        if self.eat(':') {
            self.skip_blank();
            if matches!(self.peek(), Some('-' | '0'..='9')) {
                step = Some(self.parse_int()?);
            }
        }
        Ok(Selector::Slice(Slice { start, end, step }))
    }

    /// An RFC 9535 integer: `0`, or an optional `-` and digits without a leading zero, within
    /// +/-(2^53 - 1).
    fn parse_int(&mut self) -> Result<i64, PathError> {
        let start = self.pos;
        let neg = self.eat('-');
        let digits_start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let digits = &self.src[digits_start..self.pos];
        let text = &self.src[start..self.pos];
        if digits.is_empty() {
            return Err(self.unexpected(self.pos, "expected digits"));
        }
        if digits.len() > 1 && digits.starts_with('0') {
            return Err(self.err(start, format!("leading zeros are not allowed in `{text}`")));
        }
        if neg && digits == "0" {
            return Err(self.err(start, "`-0` is not a valid index; write `0`"));
        }
        match text.parse::<i64>() {
            Ok(v) if (-MAX_INDEX..=MAX_INDEX).contains(&v) => Ok(v),
            _ => Err(self.err(start, format!("`{text}` is out of range: indices are limited to +/-(2^53 - 1)"))),
        }
    }

    /// A quoted string with RFC 9535 escapes; the caller has checked that `quote` starts here.
    fn parse_string(&mut self, quote: char) -> Result<String, PathError> {
        let start = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let at = self.pos;
            match self.bump() {
                None => return Err(self.err(start, format!("unterminated string: missing the closing {quote}"))),
                Some(c) if c == quote => return Ok(out),
                Some('\\') => out.push(self.parse_escape(at, quote)?),
                Some(c) if (c as u32) < 0x20 => {
                    return Err(
                        self.err(at, format!("control character U+{:04X} must be escaped in a string", c as u32))
                    );
                }
                Some(c) => out.push(c),
            }
        }
    }

    fn parse_escape(&mut self, at: usize, quote: char) -> Result<char, PathError> {
        let c = match self.bump() {
            Some('b') => '\u{8}',
            Some('f') => '\u{c}',
            Some('n') => '\n',
            Some('r') => '\r',
            Some('t') => '\t',
            Some('/') => '/',
            Some('\\') => '\\',
            Some(c) if c == quote => c,
            Some('u') => {
                let hi = self.parse_hex4(at)?;
                if (0xDC00..0xE000).contains(&hi) {
                    return Err(self.err(at, "unpaired low surrogate in `\\u` escape"));
                }
                if (0xD800..0xDC00).contains(&hi) {
                    let low_at = self.pos;
                    if !self.eat_str("\\u") {
                        return Err(self.err(
                            at,
                            "high surrogate in `\\u` escape must be followed by a low surrogate `\\uDC00`..`\\uDFFF`",
                        ));
                    }
                    let lo = self.parse_hex4(low_at)?;
                    if !(0xDC00..0xE000).contains(&lo) {
                        return Err(
                            self.err(low_at, "expected a low surrogate `\\uDC00`..`\\uDFFF` after a high surrogate")
                        );
                    }
                    let code = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                    return char::from_u32(code).ok_or_else(|| self.err(at, "invalid surrogate pair"));
                }
                return char::from_u32(hi).ok_or_else(|| self.err(at, "invalid `\\u` escape"));
            }
            Some(c) => {
                return Err(self.err(
                    at,
                    format!(
                        "invalid escape `\\{}` in a {quote}-quoted string (valid: \\b \\f \\n \\r \\t \\/ \\\\ \\{quote} \\uXXXX)",
                        c.escape_debug()
                    ),
                ));
            }
            None => return Err(self.err(at, "unterminated escape at the end of the path")),
        };
        Ok(c)
    }

    fn parse_hex4(&mut self, at: usize) -> Result<u32, PathError> {
        let hex = self.rest().get(..4).filter(|h| h.chars().all(|c| c.is_ascii_hexdigit()));
        let Some(hex) = hex else {
            return Err(self.err(at, "`\\u` must be followed by four hex digits"));
        };
        let v = u32::from_str_radix(hex, 16).map_err(|_| self.err(at, "`\\u` must be followed by four hex digits"))?;
        self.pos += 4;
        Ok(v)
    }

    fn enter(&mut self) -> Result<(), PathError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err(self.pos, format!("the filter nests more than {MAX_DEPTH} levels deep")));
        }
        Ok(())
    }

    fn parse_logical_or(&mut self) -> Result<LogicalExpr, PathError> {
        self.enter()?;
        let mut items = vec![self.parse_logical_and()?];
        loop {
            let save = self.pos;
            self.skip_blank();
            if self.eat_str("||") {
                self.skip_blank();
                items.push(self.parse_logical_and()?);
            } else {
                self.pos = save;
                break;
            }
        }
        self.depth -= 1;
        Ok(if items.len() == 1 { items.remove(0) } else { LogicalExpr::Or(items) })
    }

    fn parse_logical_and(&mut self) -> Result<LogicalExpr, PathError> {
        let mut items = vec![self.parse_basic()?];
        loop {
            let save = self.pos;
            self.skip_blank();
            if self.eat_str("&&") {
                self.skip_blank();
                items.push(self.parse_basic()?);
            } else {
                self.pos = save;
                break;
            }
        }
        Ok(if items.len() == 1 { items.remove(0) } else { LogicalExpr::And(items) })
    }

    /// A parenthesised expression, a comparison, or a test (existence of a query's result).
    fn parse_basic(&mut self) -> Result<LogicalExpr, PathError> {
        let start = self.pos;
        if self.eat('!') {
            self.skip_blank();
            if self.peek() == Some('(') {
                let inner = self.parse_paren()?;
                self.reject_compare_after(start, "`!(...)` is a test and cannot be compared")?;
                return Ok(LogicalExpr::Not(Box::new(LogicalExpr::Paren(Box::new(inner)))));
            }
            let operand_at = self.pos;
            let operand = self.parse_comparable()?;
            if self.peek_cmp_op().is_some() {
                return Err(self.err(
                    start,
                    "`!` applies only to a test or a parenthesised expression: write `!(a == b)` to negate a comparison",
                ));
            }
            return Ok(LogicalExpr::Not(Box::new(self.as_test(operand, operand_at)?)));
        }
        if self.peek() == Some('(') {
            let inner = self.parse_paren()?;
            self.reject_compare_after(start, "a parenthesised expression is a test and cannot be compared")?;
            return Ok(LogicalExpr::Paren(Box::new(inner)));
        }
        let left_at = self.pos;
        let left = self.parse_comparable()?;
        let save = self.pos;
        self.skip_blank();
        if let Some(op) = self.parse_cmp_op()? {
            self.skip_blank();
            let right_at = self.pos;
            let right = self.parse_comparable()?;
            if !op.is_jayway() {
                self.check_comparable(&left, left_at, op)?;
                self.check_comparable(&right, right_at, op)?;
            } else if matches!(left, Comparable::Literal(Value::Array(_))) {
                return Err(self.err(left_at, format!("an array literal belongs on the right of `{}`", op.as_str())));
            }
            return Ok(LogicalExpr::Compare { left, op, right });
        }
        self.pos = save;
        self.as_test(left, left_at)
    }

    fn parse_paren(&mut self) -> Result<LogicalExpr, PathError> {
        let open = self.pos;
        self.pos += 1; // the caller has seen `(`
        self.skip_blank();
        let inner = self.parse_logical_or()?;
        self.skip_blank();
        if !self.eat(')') {
            if matches!(self.peek(), None | Some(']')) {
                return Err(self.err(open, "unclosed `(`: expected `)`"));
            }
            let word: String = self.rest().chars().take_while(char::is_ascii_alphabetic).collect();
            match word.to_ascii_lowercase().as_str() {
                "and" => return Err(self.err(self.pos, "use `&&` for \"and\" in a filter")),
                "or" => return Err(self.err(self.pos, "use `||` for \"or\" in a filter")),
                _ => {}
            }
            return Err(self.unexpected(self.pos, "expected `)`, `&&`, `||` or a comparison operator"));
        }
        Ok(inner)
    }

    fn reject_compare_after(&mut self, start: usize, message: &str) -> Result<(), PathError> {
        if self.peek_cmp_op().is_some() {
            return Err(self.err(start, message));
        }
        Ok(())
    }

    /// The comparison operator after optional blanks, without consuming anything.
    fn peek_cmp_op(&mut self) -> Option<CmpOp> {
        let save = self.pos;
        self.skip_blank();
        let op = self.parse_cmp_op().ok().flatten();
        self.pos = save;
        op
    }

    fn parse_cmp_op(&mut self) -> Result<Option<CmpOp>, PathError> {
        let at = self.pos;
        for (text, op) in [
            ("==", CmpOp::Eq),
            ("!=", CmpOp::Ne),
            ("<=", CmpOp::Le),
            (">=", CmpOp::Ge),
            ("<", CmpOp::Lt),
            (">", CmpOp::Gt),
        ] {
            if self.eat_str(text) {
                return Ok(Some(op));
            }
        }
        if self.rest().starts_with("=~") {
            return Err(self.err(at, "regular-expression matching `=~` is not supported yet"));
        }
        if self.rest().starts_with('=') {
            return Err(self.err(at, "use `==` to compare for equality"));
        }
        let word_len = self.rest().find(|c: char| !c.is_ascii_alphanumeric() && c != '_').unwrap_or(self.rest().len());
        let word = &self.rest()[..word_len];
        if let Some(op) = CmpOp::WORDS.into_iter().find(|op| op.as_str() == word) {
            self.pos += word_len;
            return Ok(Some(op));
        }
        Ok(None)
    }

    /// Turns an operand that is not compared into a test: a query tests for existence.
    fn as_test(&self, operand: Comparable, at: usize) -> Result<LogicalExpr, PathError> {
        match operand {
            Comparable::Query(q) => Ok(LogicalExpr::Exists(q)),
            Comparable::Literal(_) => {
                Err(self
                    .err(at, "a literal on its own is not a test: compare it with something, e.g. `@.flag == true`"))
            }
            Comparable::Function(f) => Err(self.err(
                at,
                format!(
                    "`{}()` gives a value, not a test: compare it, e.g. `{}(@.x) > 0`",
                    f.function.name(),
                    f.function.name()
                ),
            )),
        }
    }

    /// RFC 9535: only singular queries can be compared (a comparison has one value per side),
    /// and there are no array literals.
    fn check_comparable(&self, c: &Comparable, at: usize, op: CmpOp) -> Result<(), PathError> {
        match c {
            Comparable::Query(q) if !q.is_singular() => Err(self.err(
                at,
                format!(
                    "only a singular query (names and indices, no `*`, `..`, slices or filters) can be compared with `{}`: it must select at most one value",
                    op.as_str()
                ),
            )),
            Comparable::Literal(Value::Array(_)) => Err(self.err(
                at,
                format!(
                    "an array literal cannot be compared with `{}`; use `in`, `nin`, `subsetof`, `anyof`, `noneof` or `contains`",
                    op.as_str()
                ),
            )),
            _ => Ok(()),
        }
    }

    /// A literal, a query (`@...`, `$...`) or a function call.
    fn parse_comparable(&mut self) -> Result<Comparable, PathError> {
        let start = self.pos;
        match self.peek() {
            Some('@' | '$') => Ok(Comparable::Query(self.parse_filter_query()?)),
            Some(q @ ('\'' | '"')) => Ok(Comparable::Literal(Value::String(self.parse_string(q)?))),
            Some('-' | '0'..='9') => Ok(Comparable::Literal(self.parse_number()?)),
            Some('[') => Ok(Comparable::Literal(self.parse_array_literal()?)),
            Some(c) if c.is_ascii_lowercase() => {
                let word_len = self
                    .rest()
                    .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
                    .unwrap_or(self.rest().len());
                let word = &self.src[start..start + word_len];
                let followed_by_paren = self.src[start + word_len..].starts_with('(');
                if !followed_by_paren {
                    let literal = match word {
                        "true" => Some(Value::Bool(true)),
                        "false" => Some(Value::Bool(false)),
                        "null" => Some(Value::Null),
                        _ => None,
                    };
                    if let Some(v) = literal {
                        self.pos += word_len;
                        return Ok(Comparable::Literal(v));
                    }
                    return Err(self.err(
                        start,
                        format!("unknown word `{word}`: quote strings ('{word}'), and start queries with `@` or `$`"),
                    ));
                }
                Ok(Comparable::Function(self.parse_function(word)?))
            }
            None => Err(self.err(start, "expected a test or a value, but the path ends here")),
            Some(_) => Err(self.unexpected(start, "expected a query (`@...`, `$...`), a literal or a function")),
        }
    }

    fn parse_filter_query(&mut self) -> Result<FilterQuery, PathError> {
        let start = self.pos;
        let root = match self.bump() {
            Some('@') => QueryRoot::Current,
            _ => {
                if self.peek() == Some('$') {
                    return Err(self.err(start, "`$$` (the context object) cannot be used inside a filter"));
                }
                QueryRoot::Root
            }
        };
        let (segments, function) = self.parse_segments(None)?;
        Ok(FilterQuery { root, segments, function: function.map(|(f, _)| f) })
    }

    /// A Jayway array literal of literals: `['S', 'M']`, `[1, 2]`, `[[1], null]`.
    fn parse_array_literal(&mut self) -> Result<Value, PathError> {
        let open = self.pos;
        self.enter()?;
        self.pos += 1; // the caller has seen `[`
        self.skip_blank();
        let mut items = Vec::new();
        if !self.eat(']') {
            loop {
                let item = match self.peek() {
                    Some(q @ ('\'' | '"')) => Value::String(self.parse_string(q)?),
                    Some('-' | '0'..='9') => self.parse_number()?,
                    Some('[') => self.parse_array_literal()?,
                    _ if self.eat_str("true") => Value::Bool(true),
                    _ if self.eat_str("false") => Value::Bool(false),
                    _ if self.eat_str("null") => Value::Null,
                    None => return Err(self.err(open, "unclosed array literal: expected `]`")),
                    Some(_) => {
                        return Err(self
                            .unexpected(self.pos, "expected a literal (string, number, true, false, null or array)"));
                    }
                };
                items.push(item);
                self.skip_blank();
                if self.eat(',') {
                    self.skip_blank();
                    continue;
                }
                if self.eat(']') {
                    break;
                }
                return Err(self.unexpected(self.pos, "expected `,` or `]` in an array literal"));
            }
        }
        self.depth -= 1;
        Ok(Value::Array(items))
    }

    /// An RFC 9535 number literal: `-`? int frac? exp?.
    fn parse_number(&mut self) -> Result<Value, PathError> {
        let start = self.pos;
        self.eat('-');
        let int_start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let int = &self.src[int_start..self.pos];
        if int.is_empty() {
            return Err(self.unexpected(self.pos, "expected digits in a number"));
        }
        if int.len() > 1 && int.starts_with('0') {
            return Err(self.err(start, "leading zeros are not allowed in numbers"));
        }
        let mut integral = true;
        if self.peek() == Some('.') && self.peek_at(1).is_some_and(|c| c.is_ascii_digit()) {
            integral = false;
            self.pos += 1;
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.pos += 1;
            }
        } else if self.peek() == Some('.') {
            return Err(self.err(start, "a number's `.` must be followed by digits"));
        }
        if matches!(self.peek(), Some('e' | 'E')) {
            integral = false;
            self.pos += 1;
            if matches!(self.peek(), Some('+' | '-')) {
                self.pos += 1;
            }
            let exp_start = self.pos;
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.pos += 1;
            }
            if exp_start == self.pos {
                return Err(self.err(start, "a number's exponent must have digits"));
            }
        }
        let text = &self.src[start..self.pos];
        if integral && let Ok(i) = text.parse::<i64>() {
            return Ok(Value::Number(i.into()));
        }
        text.parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| self.err(start, format!("the number `{text}` is out of range")))
    }

    /// A function call `name(arg)`; the caller has seen the name and that `(` follows it.
    fn parse_function(&mut self, name: &str) -> Result<FunctionExpr, PathError> {
        let start = self.pos;
        let function = match name {
            "length" => Function::Length,
            "count" => Function::Count,
            "value" => Function::Value,
            "match" | "search" => {
                return Err(self.err(start, format!("`{name}()` (regular expressions) is not supported yet")));
            }
            _ => {
                return Err(self.err(
                    start,
                    format!("unknown function `{name}()`: the supported functions are length(), count() and value()"),
                ));
            }
        };
        self.enter()?;
        self.pos += name.len() + 1;
        self.skip_blank();
        let arg_at = self.pos;
        let arg = match self.parse_comparable()? {
            Comparable::Literal(v) => FunctionArg::Literal(v),
            Comparable::Query(q) => FunctionArg::Query(q),
            Comparable::Function(f) => FunctionArg::Function(f),
        };
        self.skip_blank();
        if self.peek() == Some(',') {
            return Err(self.err(self.pos, format!("`{name}()` takes exactly one argument")));
        }
        if !self.eat(')') {
            return Err(self.unexpected(self.pos, &format!("expected `)` to close `{name}(`")));
        }
        // RFC 9535 well-typedness: length() takes a value; count() and value() take a node list.
        match (function, &arg) {
            (Function::Length, FunctionArg::Query(q)) if !q.is_singular() => {
                return Err(self.err(
                    arg_at,
                    "length() takes one value, but this query can select several nodes; use count() to count nodes",
                ));
            }
            (Function::Count | Function::Value, FunctionArg::Literal(_) | FunctionArg::Function(_)) => {
                return Err(self.err(arg_at, format!("`{name}()` takes a query such as `@.items[*]`")));
            }
            _ => {}
        }
        self.depth -= 1;
        Ok(FunctionExpr { function, arg: Box::new(arg) })
    }
}
