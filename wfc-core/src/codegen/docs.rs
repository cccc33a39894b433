//! Markdown for generated doc attributes.
//!
//! Definition text reaches docs only through these helpers, so a name or comment cannot start an
//! intra-doc link, an HTML tag, a heading or a doctest, nor close the code block it sits in.

/// `text` as Markdown prose: punctuation that Markdown or rustdoc interprets is backslash-escaped
/// and control characters (newlines too) are shown escaped, so the text stays one paragraph.
pub(crate) fn text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '{' | '}' | '[' | ']' | '<' | '>' | '(' | ')' | '#' | '+' | '-' | '!' | '|'
            | '~' | '&' | '=' => {
                out.push('\\');
                out.push(c);
            }
            c if hidden(c) => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    out
}

/// Multi-line prose (an ASL `Comment`): each line escaped as by [`text`], line breaks kept.
pub(crate) fn paragraph(comment: &str) -> String {
    // Leading whitespace is dropped: four spaces would start an indented code block, which
    // rustdoc compiles as a Rust doctest.
    comment.lines().map(|line| text(line.trim_start())).collect::<Vec<_>>().join("\n")
}

/// `s` as an inline code span: control and bidi characters shown escaped, delimited by more backticks
/// than `s` contains in a row (padded with spaces when `s` starts or ends with a backtick).
pub(crate) fn code(s: &str) -> String {
    let shown = reveal(s);
    let fence = "`".repeat(longest_backtick_run(&shown) + 1);
    let pad = if shown.starts_with('`') || shown.ends_with('`') || shown.is_empty() { " " } else { "" };
    format!("{fence}{pad}{shown}{pad}{fence}")
}

/// A fenced block of `lang` holding `body` verbatim; the fence is longer than any backtick run in
/// `body` so the body cannot close it.
pub(crate) fn block(lang: &str, body: &str) -> String {
    let body = reveal_bidi(body);
    let fence = "`".repeat((longest_backtick_run(&body) + 1).max(3));
    let newline = if body.ends_with('\n') { "" } else { "\n" };
    format!("{fence}{lang}\n{body}{newline}{fence}")
}

/// Characters that must not appear raw in docs: control characters (they would break lines or
/// the terminal) and bidirectional-text controls, which rustc rejects in comments
/// (`text_direction_codepoint_in_comment`) because they make code display differently from
/// what it is. wfc-build writes docs as `///` comments, so this matters for real.
fn hidden(c: char) -> bool {
    c.is_control() || is_bidi(c)
}

fn is_bidi(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{061c}')
}

/// `s` with [`hidden`] characters written as escapes (`\n`, `\u{202e}`).
fn reveal(s: &str) -> String {
    s.chars().flat_map(|c| if hidden(c) { c.escape_default().collect() } else { vec![c] }).collect()
}

/// `s` with only bidi controls escaped (a code block keeps its newlines and tabs).
fn reveal_bidi(s: &str) -> String {
    s.chars().flat_map(|c| if is_bidi(c) { c.escape_default().collect() } else { vec![c] }).collect()
}

fn longest_backtick_run(s: &str) -> usize {
    let (mut best, mut run) = (0, 0);
    for c in s.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(text("a [b] <i> #1\nx"), "a \\[b\\] \\<i\\> \\#1\\nx");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`"), "`` ` ``");
        assert_eq!(code("x\ny"), "`x\\ny`");
        assert_eq!(block("json", "```\n"), "````json\n```\n````");
        assert_eq!(code("\u{202e}x"), "`\\u{202e}x`");
        assert_eq!(text("a\u{2066}b"), "a\\u{2066}b");
        assert_eq!(block("json", "\"\u{202e}\"\n"), "```json\n\"\\u{202e}\"\n```");
    }
}
