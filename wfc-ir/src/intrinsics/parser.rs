//! The recursive-descent parser for intrinsic calls, with the static checks (arity, argument
//! types known before running, literal values that can never work).

use serde_json::Number;

use super::{Arg, Call, Function, HASH_ALGORITHMS, IntrinsicError, MAX_DEPTH, MAX_RANGE_LEN, MAX_STRING_INPUT, Param};
use crate::jsonpath::Path;

pub(super) fn parse(text: &str) -> Result<Call, IntrinsicError> {
    let mut p = Parser { text, pos: 0 };
    p.skip_ws();
    let call = p.call(1)?;
    p.skip_ws();
    if let Some(c) = p.peek() {
        return Err(p.error_at(p.pos, format!("unexpected `{c}` after the end of the call")));
    }
    Ok(call)
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

/// An argument with where it starts, for messages about it.
struct Located {
    arg: Arg,
    offset: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.text.get(self.pos..).and_then(|r| r.chars().next())
    }

    fn rest(&self) -> &str {
        self.text.get(self.pos..).unwrap_or("")
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }

    fn error_at(&self, offset: usize, message: impl Into<String>) -> IntrinsicError {
        IntrinsicError { offset, message: message.into() }
    }

    fn call(&mut self, depth: usize) -> Result<Call, IntrinsicError> {
        let start = self.pos;
        let name_len = self
            .rest()
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_'))
            .unwrap_or(self.rest().len());
        let name = self.rest().get(..name_len).unwrap_or("").to_owned();
        let name = name.as_str();
        if !name.starts_with("States.") {
            return Err(self.error_at(start, "expected an intrinsic function such as `States.Format(...)`"));
        }
        let Some(function) = Function::from_name(name) else {
            let hint = Function::ALL
                .into_iter()
                .find(|f| f.name().eq_ignore_ascii_case(name))
                .map(|f| format!(" (did you mean `{}`?)", f.name()))
                .unwrap_or_default();
            return Err(self.error_at(start, format!("unknown intrinsic function `{name}`{hint}")));
        };
        if depth > MAX_DEPTH {
            return Err(self.error_at(start, format!("intrinsic functions nest more than {MAX_DEPTH} deep")));
        }
        self.pos += name_len;
        self.skip_ws();
        if self.peek() != Some('(') {
            return Err(self.error_at(self.pos, format!("expected `(` after `{name}`")));
        }
        self.bump();
        let mut args: Vec<Located> = Vec::new();
        self.skip_ws();
        if self.peek() == Some(')') {
            self.bump();
        } else {
            loop {
                self.skip_ws();
                let offset = self.pos;
                let arg = self.arg(function, args.len(), depth)?;
                args.push(Located { arg, offset });
                self.skip_ws();
                match self.bump() {
                    Some(',') => continue,
                    Some(')') => break,
                    Some(c) => {
                        let at = self.pos - c.len_utf8();
                        return Err(
                            self.error_at(at, format!("expected `,` or `)` in the arguments of `{name}`, found `{c}`"))
                        );
                    }
                    None => return Err(self.error_at(self.pos, format!("missing `)` to close `{name}(`"))),
                }
            }
        }
        check(function, start, &args)?;
        Ok(Call { function, args: args.into_iter().map(|a| a.arg).collect() })
    }

    fn arg(&mut self, function: Function, index: usize, depth: usize) -> Result<Arg, IntrinsicError> {
        let start = self.pos;
        match self.peek() {
            Some('\'') => self.string(function == Function::Format && index == 0),
            Some('$') => self.path(),
            Some(c) if c == '-' || c.is_ascii_digit() => self.number(),
            Some('S') => Ok(Arg::Call(Box::new(self.call(depth + 1)?))),
            Some(c) if c.is_ascii_alphabetic() => {
                let len = self.rest().find(|c: char| !c.is_ascii_alphanumeric()).unwrap_or(self.rest().len());
                let word = self.rest().get(..len).unwrap_or("");
                let arg = match word {
                    "true" => Arg::Bool(true),
                    "false" => Arg::Bool(false),
                    "null" => Arg::Null,
                    _ => {
                        return Err(self.error_at(
                            start,
                            format!("unexpected `{word}`: string arguments are written in single quotes ('{word}')"),
                        ));
                    }
                };
                self.pos += len;
                Ok(arg)
            }
            Some(')') | Some(',') => Err(self.error_at(start, "missing argument")),
            Some(c) => Err(self.error_at(start, format!("unexpected `{c}` where an argument was expected"))),
            None => Err(self.error_at(start, "the call ends where an argument was expected")),
        }
    }

    /// A single-quoted literal. In a Format template, unescaped `{}` pairs split it into pieces.
    fn string(&mut self, template: bool) -> Result<Arg, IntrinsicError> {
        let open = self.pos;
        self.bump();
        let mut pieces = vec![String::new()];
        loop {
            let at = self.pos;
            let Some(c) = self.bump() else {
                return Err(self.error_at(open, "unterminated string: a closing `'` is missing"));
            };
            let current = pieces.last_mut().ok_or_else(|| self.error_at(at, "internal: no current piece"))?;
            match c {
                '\'' => break,
                '\\' => match self.bump() {
                    Some(e @ ('\'' | '{' | '}' | '\\')) => current.push(e),
                    Some(e) => {
                        return Err(self.error_at(
                            at,
                            format!("invalid escape `\\{e}`: only `\\'`, `\\{{`, `\\}}` and `\\\\` are escapes"),
                        ));
                    }
                    None => return Err(self.error_at(at, "a `\\` at the end of the text escapes nothing")),
                },
                '{' if template => {
                    if self.peek() != Some('}') {
                        return Err(self.error_at(
                            at,
                            "a lone `{` in the format string: write `{}` for a placeholder or `\\{` for a brace",
                        ));
                    }
                    self.bump();
                    pieces.push(String::new());
                }
                '}' if template => {
                    return Err(self.error_at(at, "a lone `}` in the format string: write `\\}` for a brace"));
                }
                other => current.push(other),
            }
        }
        if template { Ok(Arg::Template(pieces)) } else { Ok(Arg::String(pieces.concat())) }
    }

    fn number(&mut self) -> Result<Arg, IntrinsicError> {
        let start = self.pos;
        let len = self
            .rest()
            .find(|c: char| !(c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E')))
            .unwrap_or(self.rest().len());
        let literal = self.rest().get(..len).unwrap_or("");
        match serde_json::from_str::<Number>(literal) {
            Ok(n) => {
                self.pos += len;
                Ok(Arg::Number(n))
            }
            Err(_) => Err(self.error_at(start, format!("`{literal}` is not a number"))),
        }
    }

    /// A path runs to the `,` or `)` that ends the argument, skipping brackets, parentheses
    /// and quoted names inside it (`$['a,b']`, `$.items[?(@.n > 1)]`).
    fn path(&mut self) -> Result<Arg, IntrinsicError> {
        let start = self.pos;
        let mut depth = 0usize;
        let mut quote: Option<char> = None;
        let mut end = self.text.len();
        let mut chars = self.rest().char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if let Some(q) = quote {
                if c == '\\' {
                    chars.next();
                } else if c == q {
                    quote = None;
                }
                continue;
            }
            match c {
                '\'' | '"' if depth > 0 => quote = Some(c),
                '[' | '(' => depth += 1,
                ']' | ')' if depth > 0 => depth -= 1,
                ',' | ')' => {
                    end = start + i;
                    break;
                }
                _ => {}
            }
        }
        let raw = self.text.get(start..end).unwrap_or("");
        let text = raw.trim_end();
        match Path::parse(text) {
            Ok(p) => {
                self.pos = start + text.len();
                Ok(Arg::Path(p))
            }
            Err(e) => Err(self.error_at(start + e.offset, format!("invalid path `{text}`: {}", e.message))),
        }
    }
}

/// The integer part of a literal number (AWS truncates the range, index and size arguments).
fn truncated(arg: &Arg) -> Option<f64> {
    match arg {
        Arg::Number(n) => n.as_f64().map(f64::trunc),
        _ => None,
    }
}

fn ordinal(i: usize) -> &'static str {
    ["first", "second", "third", "fourth", "fifth"].get(i).copied().unwrap_or("next")
}

fn check(function: Function, at: usize, args: &[Located]) -> Result<(), IntrinsicError> {
    let name = function.name();
    let err = |offset: usize, message: String| IntrinsicError { offset, message };
    let (min, max) = function.arity();
    let n = args.len();
    if n < min || max.is_some_and(|m| n > m) {
        let expected = match max {
            Some(m) if m == min => format!("{m} argument{}", if m == 1 { "" } else { "s" }),
            Some(m) => format!("{min} or {m} arguments"),
            None => format!("at least {min} argument{}", if min == 1 { "" } else { "s" }),
        };
        return Err(err(at, format!("`{name}` takes {expected}, found {n}")));
    }
    for (i, a) in args.iter().enumerate() {
        if let (Param::Type(want), Some(got)) = (function.param(i), a.arg.static_type())
            && want != got
        {
            return Err(err(
                a.offset,
                format!(
                    "the {} argument of `{name}` must be {}, found {}",
                    ordinal(i),
                    want.article_name(),
                    got.article_name()
                ),
            ));
        }
    }
    let literal_len = |a: &Located| match &a.arg {
        Arg::String(s) => s.chars().count(),
        _ => 0,
    };
    match function {
        Function::Format => {
            if let Some(Arg::Template(pieces)) = args.first().map(|a| &a.arg) {
                let placeholders = pieces.len() - 1;
                if placeholders != n - 1 {
                    return Err(err(
                        at,
                        format!(
                            "the format string has {placeholders} placeholder{} but {} argument{} follow{}",
                            if placeholders == 1 { "" } else { "s" },
                            n - 1,
                            if n == 2 { "" } else { "s" },
                            if n == 2 { "s" } else { "" },
                        ),
                    ));
                }
            }
        }
        Function::Hash => {
            if let Some(Located { arg: Arg::String(alg), offset }) = args.get(1)
                && !HASH_ALGORITHMS.contains(&alg.as_str())
            {
                return Err(err(
                    *offset,
                    format!("unknown hash algorithm '{alg}': use one of {}", HASH_ALGORITHMS.join(", ")),
                ));
            }
            if let Some(a) = args.first()
                && literal_len(a) > MAX_STRING_INPUT
            {
                return Err(err(a.offset, format!("`{name}` accepts at most {MAX_STRING_INPUT} characters")));
            }
        }
        Function::Base64Encode | Function::Base64Decode => {
            if let Some(a) = args.first()
                && literal_len(a) > MAX_STRING_INPUT
            {
                return Err(err(a.offset, format!("`{name}` accepts at most {MAX_STRING_INPUT} characters")));
            }
        }
        Function::JsonMerge => {
            if let Some(Located { arg: Arg::Bool(true), offset }) = args.get(2) {
                return Err(err(*offset, "deep merging is not supported: the third argument must be `false`".into()));
            }
        }
        Function::ArrayPartition => {
            if let Some(a) = args.get(1)
                && truncated(&a.arg).is_some_and(|s| s < 1.0)
            {
                return Err(err(a.offset, "the chunk size must be a positive integer".into()));
            }
        }
        Function::ArrayGetItem => {
            if let Some(a) = args.get(1)
                && truncated(&a.arg).is_some_and(|i| i < 0.0)
            {
                return Err(err(a.offset, "the index must not be negative".into()));
            }
        }
        Function::ArrayRange => {
            if let Some(a) = args.get(2)
                && truncated(&a.arg) == Some(0.0)
            {
                return Err(err(a.offset, "the step must not be zero (AWS truncates it to an integer)".into()));
            }
            if let (Some(first), Some(last), Some(step)) =
                (truncated(&args[0].arg), truncated(&args[1].arg), truncated(&args[2].arg))
            {
                let count = ((last - first) / step).floor() + 1.0;
                if count > MAX_RANGE_LEN as f64 {
                    return Err(err(
                        at,
                        format!("`{name}` may produce at most {MAX_RANGE_LEN} elements, this gives {count}"),
                    ));
                }
            }
        }
        Function::MathRandom => {
            if let (Some(start), Some(end)) = (truncated(&args[0].arg), truncated(&args[1].arg))
                && start >= end
            {
                return Err(err(at, "the start must be less than the end (both truncated to integers)".into()));
            }
        }
        _ => {}
    }
    Ok(())
}
