//! Minimal syntax checkers for the editor snippets written in languages we have no parser for here: Lua
//! (Neovim) and Emacs Lisp. They check what breaks a copy-paste: balanced brackets, terminated strings and
//! comments. JSON and TOML snippets go through real parsers instead.

/// Check brackets nest and close, given the bracket pairs and a lexer step that skips strings and comments.
fn balanced(
    text: &str,
    pairs: &[(char, char)],
    mut skip: impl FnMut(&[char], usize) -> Result<Option<usize>, String>,
) -> Result<(), String> {
    let chars: Vec<char> = text.chars().collect();
    let mut stack: Vec<(char, usize)> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if let Some(next) = skip(&chars, i)? {
            i = next;
            continue;
        }
        let c = chars[i];
        if let Some(&(open, _)) = pairs.iter().find(|(open, _)| *open == c) {
            stack.push((open, i));
        } else if let Some(&(open, close)) = pairs.iter().find(|(_, close)| *close == c) {
            match stack.pop() {
                Some((o, _)) if o == open => {}
                Some((o, at)) => {
                    return Err(format!(
                        "`{close}` at {} closes `{o}` from {}",
                        line(&chars, i),
                        line(&chars, at)
                    ));
                }
                None => return Err(format!("`{close}` at {} closes nothing", line(&chars, i))),
            }
        }
        i += 1;
    }
    match stack.pop() {
        Some((open, at)) => Err(format!("`{open}` at {} is never closed", line(&chars, at))),
        None => Ok(()),
    }
}

fn line(chars: &[char], at: usize) -> String {
    format!("line {}", chars[..at].iter().filter(|c| **c == '\n').count() + 1)
}

/// The end of a quoted string starting at `start` (the quote), honouring backslash escapes.
fn quoted(chars: &[char], start: usize, newline_ends: bool) -> Result<usize, String> {
    let quote = chars[start];
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '\n' if newline_ends => {
                return Err(format!("string at {} runs past its line", line(chars, start)));
            }
            c if c == quote => return Ok(i + 1),
            _ => i += 1,
        }
    }
    Err(format!("string at {} is never closed", line(chars, start)))
}

/// The level of a Lua long bracket `[==[` at `at` (`None` if it is not one).
fn long_bracket(chars: &[char], at: usize) -> Option<usize> {
    if chars.get(at) != Some(&'[') {
        return None;
    }
    let level = chars[at + 1..].iter().take_while(|c| **c == '=').count();
    (chars.get(at + 1 + level) == Some(&'[')).then_some(level)
}

/// The end of a Lua long string or comment body opened at `at` with `level` equals signs.
fn long_end(chars: &[char], at: usize, level: usize) -> Result<usize, String> {
    let close: Vec<char> = std::iter::once(']').chain(std::iter::repeat_n('=', level)).chain([']']).collect();
    let body = at + level + 2;
    (body..chars.len())
        .find(|&i| chars[i..].starts_with(&close))
        .map(|i| i + close.len())
        .ok_or_else(|| format!("long bracket at {} is never closed", line(chars, at)))
}

/// Lua: strings (quoted and long), comments (line and long), balanced `()`, `{}`, `[]`.
pub fn lua(text: &str) -> Result<(), String> {
    balanced(text, &[('(', ')'), ('{', '}'), ('[', ']')], |chars, i| {
        let c = chars[i];
        if c == '-' && chars.get(i + 1) == Some(&'-') {
            if let Some(level) = long_bracket(chars, i + 2) {
                return long_end(chars, i + 2, level).map(Some);
            }
            return Ok(Some(chars[i..].iter().position(|c| *c == '\n').map_or(chars.len(), |n| i + n)));
        }
        if c == '"' || c == '\'' {
            return quoted(chars, i, true).map(Some);
        }
        if let Some(level) = long_bracket(chars, i) {
            return long_end(chars, i, level).map(Some);
        }
        Ok(None)
    })
}

/// Emacs Lisp: strings, `;` comments, character literals (`?a`, `?\(`), balanced `()` and `[]`.
pub fn elisp(text: &str) -> Result<(), String> {
    balanced(text, &[('(', ')'), ('[', ']')], |chars, i| match chars[i] {
        ';' => Ok(Some(chars[i..].iter().position(|c| *c == '\n').map_or(chars.len(), |n| i + n))),
        '"' => quoted(chars, i, false).map(Some),
        '?' if chars.get(i + 1) == Some(&'\\') => Ok(Some(i + 3)),
        '?' if i + 1 < chars.len() => Ok(Some(i + 2)),
        _ => Ok(None),
    })
}

#[test]
fn the_lua_checker_accepts_lua_and_names_what_is_broken() {
    assert_eq!(lua("local t = { a = \"x}\", b = [[ ]] } -- }\n--[==[ ) ]==]\nf(t)"), Ok(()));
    assert_eq!(lua("f({ a = 1 )"), Err("`)` at line 1 closes `{` from line 1".into()));
    assert_eq!(lua("x = {\n"), Err("`{` at line 1 is never closed".into()));
    assert_eq!(lua("x = \"abc\n\""), Err("string at line 1 runs past its line".into()));
    assert_eq!(lua("--[[ open"), Err("long bracket at line 1 is never closed".into()));
}

#[test]
fn the_elisp_checker_accepts_elisp_and_names_what_is_broken() {
    assert_eq!(elisp("(defun f () \"doc (\" ; )\n  (list ?\\( ?a [1 2]))"), Ok(()));
    assert_eq!(elisp("(f (g)"), Err("`(` at line 1 is never closed".into()));
    assert_eq!(elisp("(f \"x)"), Err("string at line 1 is never closed".into()));
    assert_eq!(elisp("(f [1 2)]"), Err("`)` at line 1 closes `[` from line 1".into()));
}
