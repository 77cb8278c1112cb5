//! Arguments of commands and skills: split shell-style (quotes respected) and put into the text's placeholders.
//! `$ARGUMENTS` is the whole argument string everywhere. Positional placeholders depend on where the file comes
//! from, since the origins disagree: files under `.claude/` use Claude Code's rules (`$0` and `$ARGUMENTS[0]` are
//! the first argument, a missing one stays as written); every other file uses `$1`…`$9` (1-based, the highest one
//! used takes the remaining arguments, a missing one is empty). A text with no placeholder at all gets the
//! arguments appended, so they are never lost.
//!
//! Owns the expansion rules only.

use std::sync::LazyLock;

use regex::Regex;

/// How positional placeholders count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// `$1`…`$9`, the last one greedy (tinycode, opencode, codex, seed 000).
    OneBased,
    /// `$0`…`$9` and `$ARGUMENTS[N]`, 0-based (Claude Code).
    ZeroBased,
}

static PLACEHOLDER: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\$ARGUMENTS\[(\d+)\]|\$ARGUMENTS|\$(\d)").ok());

/// Split `args` as a shell would split words (no expansion): quotes group, backslashes escape.
pub fn split(args: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut started = false;
    let mut chars = args.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                started = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    word.push(c);
                }
            }
            '"' => {
                started = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => match chars.next() {
                            Some(next @ ('"' | '\\' | '$' | '`')) => word.push(next),
                            Some(next) => {
                                word.push('\\');
                                word.push(next);
                            }
                            None => word.push('\\'),
                        },
                        other => word.push(other),
                    }
                }
            }
            '\\' => {
                started = true;
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            c if c.is_whitespace() => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            other => {
                started = true;
                word.push(other);
            }
        }
    }
    if started {
        words.push(word);
    }
    words
}

/// Put `args` (as typed) into `text`'s placeholders.
pub fn expand(text: &str, args: &str, style: Style) -> String {
    let Some(re) = PLACEHOLDER.as_ref() else { return text.to_string() };
    let raw = args.trim();
    if !re.is_match(text) {
        return if raw.is_empty() {
            text.to_string()
        } else {
            format!("{}\n\nARGUMENTS: {raw}", text.trim_end())
        };
    }
    let words = split(raw);
    let highest = re
        .captures_iter(text)
        .filter_map(|c| c.get(2).and_then(|d| d.as_str().parse::<usize>().ok()))
        .max()
        .unwrap_or(0);
    re.replace_all(text, |caps: &regex::Captures| {
        let whole = caps.get(0).map(|m| m.as_str()).unwrap_or_default();
        if let Some(index) = caps.get(1).and_then(|n| n.as_str().parse::<usize>().ok()) {
            return match style {
                Style::ZeroBased => words.get(index).cloned().unwrap_or_else(|| whole.to_string()),
                Style::OneBased => whole.to_string(),
            };
        }
        let Some(n) = caps.get(2).and_then(|d| d.as_str().parse::<usize>().ok()) else {
            return raw.to_string();
        };
        match style {
            Style::ZeroBased => words.get(n).cloned().unwrap_or_else(|| whole.to_string()),
            Style::OneBased if n == 0 => whole.to_string(),
            Style::OneBased if n == highest => {
                words.get(n - 1..).map(|rest| rest.join(" ")).unwrap_or_default()
            }
            Style::OneBased => words.get(n - 1).cloned().unwrap_or_default(),
        }
    })
    .into_owned()
}

/// The placeholders a text uses, as an input hint: `<$1> <$2>`, or `args` for `$ARGUMENTS`; `None` without any.
pub fn hint(text: &str, style: Style) -> Option<String> {
    let re = PLACEHOLDER.as_ref()?;
    let mut positions: Vec<usize> = Vec::new();
    let mut whole = false;
    for caps in re.captures_iter(text) {
        match (caps.get(1), caps.get(2)) {
            (Some(n), _) | (None, Some(n)) => {
                if let Ok(n) = n.as_str().parse::<usize>()
                    && !(style == Style::OneBased && n == 0)
                    && !positions.contains(&n)
                {
                    positions.push(n);
                }
            }
            (None, None) => whole = true,
        }
    }
    positions.sort_unstable();
    if positions.is_empty() {
        return whole.then(|| "args".to_string());
    }
    Some(positions.iter().map(|n| format!("<${n}>")).collect::<Vec<_>>().join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_split_like_shell_words() {
        assert_eq!(
            split(r#"one "two words" 'three $x' four\ five"#),
            ["one", "two words", "three $x", "four five"]
        );
        assert_eq!(split("  "), Vec::<String>::new());
        assert_eq!(split(r#""" x"#), ["", "x"]);
    }

    #[test]
    fn one_based_placeholders_take_positions_and_the_highest_takes_the_rest() {
        let text = "Fix issue $1 in $2. All: $ARGUMENTS";
        assert_eq!(
            expand(text, "42 src/lib.rs and more", Style::OneBased),
            "Fix issue 42 in src/lib.rs and more. All: 42 src/lib.rs and more"
        );
        assert_eq!(expand("a=$1 b=$2", "x", Style::OneBased), "a=x b=");
        assert_eq!(expand("keep $0", "x", Style::OneBased), "keep $0");
    }

    #[test]
    fn claude_files_count_from_zero_and_leave_missing_ones_as_written() {
        let text = "first $0, second $ARGUMENTS[1], third $2";
        assert_eq!(expand(text, "a 'b c'", Style::ZeroBased), "first a, second b c, third $2");
    }

    #[test]
    fn a_text_without_placeholders_gets_the_arguments_appended() {
        assert_eq!(
            expand("Review the diff.\n", "carefully", Style::OneBased),
            "Review the diff.\n\nARGUMENTS: carefully"
        );
        assert_eq!(expand("Review the diff.\n", " ", Style::OneBased), "Review the diff.\n");
    }

    #[test]
    fn hints_name_the_placeholders_used() {
        assert_eq!(hint("$2 then $1 then $2", Style::OneBased), Some("<$1> <$2>".into()));
        assert_eq!(hint("all: $ARGUMENTS", Style::OneBased), Some("args".into()));
        assert_eq!(hint("$0 $ARGUMENTS[1]", Style::ZeroBased), Some("<$0> <$1>".into()));
        assert_eq!(hint("nothing", Style::OneBased), None);
    }
}
