//! A shell tokenizer for classification (seed 003): splits a command line into simple commands with their argv
//! after quote removal, so quoting cannot hide a flag (`rm '-rf'`, `r''m`, `$'\x72m'`). Operators (`;`, `&&`,
//! `||`, `|`, `&`, newlines, subshells and braces) separate commands; redirections are kept with their targets and
//! heredocs with their bodies. Every command substitution is found wherever the shell would run it: in words,
//! double quotes, `${…}` operators (`${x:-$(…)}`), arithmetic (`$(( $(…) ))`), process substitutions (`<(…)`) and
//! the bodies of unquoted heredocs; the commands inside are parsed too and listed as commands of their own.
//! Words that expand at run time are marked `dynamic`, so a caller that needs the value can refuse to guess.
//!
//! Owns lexing only: it never expands variables or runs anything. What it cannot read is [`Unparsable`].

/// One word after quote removal.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Word {
    /// The text after quote removal; expansions are kept as written (`$x`, `$(cmd)`).
    pub text: String,
    /// Contains something whose value is only known at run time: a parameter, command, arithmetic or process
    /// substitution, a brace expansion, or an escape this tokenizer does not decode.
    pub dynamic: bool,
    /// The word as a glob pattern: unquoted metacharacters as written, quoted ones escaped with `\`.
    pub pattern: String,
    /// Holds an unquoted `*`, `?` or `[`: the shell expands it against the file system.
    pub glob: bool,
    /// Some part of it was quoted or escaped.
    pub quoted: bool,
}

impl Word {
    fn literal(text: &str) -> Self {
        Self { text: text.to_string(), pattern: escape_pattern(text), ..Self::default() }
    }

    fn push_quoted(&mut self, c: char) {
        self.text.push(c);
        if "*?[]{},\\~".contains(c) {
            self.pattern.push('\\');
        }
        self.pattern.push(c);
    }

    fn push_unquoted(&mut self, c: char) {
        self.text.push(c);
        self.pattern.push(c);
        if matches!(c, '*' | '?' | '[') {
            self.glob = true;
        }
    }

    fn push_expansion(&mut self, text: &str, dynamic: bool) {
        self.text.push_str(text);
        self.pattern.push_str(&escape_pattern(text));
        self.dynamic |= dynamic;
    }
}

/// `text` with every glob, brace and escape character escaped.
pub fn escape_pattern(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "*?[]{},\\~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A redirection such as `> out.txt`, `2>&1` or `<<EOF`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    pub op: String,
    pub target: Word,
    /// A heredoc's body; `dynamic` when the shell expands something in it.
    pub body: Option<Word>,
}

/// One simple command.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Simple {
    pub argv: Vec<Word>,
    pub redirects: Vec<Redirect>,
    /// Found inside a substitution (`$(…)`, backticks, `<(…)`, a heredoc body) rather than on the line itself.
    pub nested: bool,
}

impl Simple {
    pub fn args(&self) -> Vec<&str> {
        self.argv.iter().map(|w| w.text.as_str()).collect()
    }
}

/// The line cannot be tokenized (an unterminated quote or substitution, or syntax this tokenizer cannot read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unparsable(pub String);

/// Substitutions nested deeper than this are not followed.
const MAX_NESTING: usize = 16;

/// Where a `$` is read: the rules for `$'…'`, `$"…"` and single quotes differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Unquoted,
    DoubleQuoted,
    /// A heredoc body or arithmetic: quotes are ordinary characters.
    Body,
}

/// A heredoc announced on the current line, waiting for the newline after which its body starts.
struct PendingHeredoc {
    delimiter: String,
    strip_tabs: bool,
    expands: bool,
    command: usize,
    redirect: usize,
}

struct Lexer {
    chars: Vec<char>,
    pos: usize,
    /// Inner command texts of substitutions met so far.
    substitutions: Vec<String>,
    heredocs: Vec<PendingHeredoc>,
    /// Bodies read so far: (command index, redirect index, body).
    bodies: Vec<(usize, usize, Word)>,
}

fn is_operator(c: char) -> bool {
    matches!(c, ';' | '&' | '|' | '(' | ')' | '<' | '>' | '\n')
}

fn unterminated(what: &str) -> Unparsable {
    Unparsable(format!("unterminated {what}"))
}

impl Lexer {
    fn new(source: &str) -> Self {
        Self {
            chars: source.chars().collect(),
            pos: 0,
            substitutions: Vec::new(),
            heredocs: Vec::new(),
            bodies: Vec::new(),
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn text(&self, start: usize, end: usize) -> String {
        self.chars[start..end].iter().collect()
    }

    /// Skip a single-quoted string whose opening quote is at the cursor.
    fn skip_single_quoted(&mut self) -> Result<(), Unparsable> {
        self.pos += 1;
        while let Some(c) = self.peek() {
            self.pos += 1;
            if c == '\'' {
                return Ok(());
            }
        }
        Err(unterminated("single quote"))
    }

    /// Skip a double-quoted string whose opening quote is at the cursor, recording the substitutions inside.
    fn skip_double_quoted(&mut self) -> Result<(), Unparsable> {
        let mut word = Word::default();
        self.read_double_quoted(&mut word)
    }

    /// Read up to the `)` matching an already consumed `$(` or `<(`, honouring quotes, nesting and backticks.
    fn read_parenthesized(&mut self) -> Result<String, Unparsable> {
        let start = self.pos;
        let mut depth = 1;
        while let Some(c) = self.peek() {
            match c {
                '\\' => self.pos += 1,
                '\'' => {
                    self.skip_single_quoted()?;
                    continue;
                }
                '"' => {
                    self.skip_quoted_raw()?;
                    continue;
                }
                '`' => {
                    self.pos += 1;
                    while self.peek().is_some_and(|c| c != '`') {
                        if self.peek() == Some('\\') {
                            self.pos += 1;
                        }
                        self.pos += 1;
                    }
                    if self.peek().is_none() {
                        return Err(unterminated("backtick"));
                    }
                }
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        let inner = self.text(start, self.pos);
                        self.pos += 1;
                        return Ok(inner);
                    }
                }
                _ => {}
            }
            self.pos += 1;
        }
        Err(unterminated("$("))
    }

    /// Skip a double-quoted string without interpreting it (its contents are parsed again later).
    fn skip_quoted_raw(&mut self) -> Result<(), Unparsable> {
        self.pos += 1;
        while let Some(c) = self.peek() {
            match c {
                '\\' => self.pos += 2,
                '"' => {
                    self.pos += 1;
                    return Ok(());
                }
                '$' if self.peek_at(1) == Some('(') => {
                    self.pos += 2;
                    self.read_parenthesized()?;
                }
                '`' => {
                    self.pos += 1;
                    self.read_backticks()?;
                }
                _ => self.pos += 1,
            }
        }
        Err(unterminated("double quote"))
    }

    fn read_backticks(&mut self) -> Result<String, Unparsable> {
        let mut inner = String::new();
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '`' => return Ok(inner),
                '\\' => {
                    if let Some(next) = self.peek() {
                        if !matches!(next, '`' | '\\' | '$') {
                            inner.push('\\');
                        }
                        inner.push(next);
                        self.pos += 1;
                    }
                }
                other => inner.push(other),
            }
        }
        Err(unterminated("backtick"))
    }

    /// Skip the inside of `${…}` up to its closing brace (not consumed), recording nested substitutions.
    fn skip_braced(&mut self, ctx: Ctx) -> Result<(), Unparsable> {
        let mut depth = 0;
        loop {
            match self.peek() {
                None => return Err(unterminated("${")),
                Some('}') if depth == 0 => return Ok(()),
                Some('}') => {
                    depth -= 1;
                    self.pos += 1;
                }
                Some('{') => {
                    depth += 1;
                    self.pos += 1;
                }
                Some('\\') => self.pos += 2,
                Some('\'') if ctx == Ctx::Unquoted => self.skip_single_quoted()?,
                Some('"') => self.skip_double_quoted()?,
                Some('$') => {
                    self.read_dollar(ctx)?;
                }
                Some('`') => {
                    self.pos += 1;
                    let inner = self.read_backticks()?;
                    self.substitutions.push(inner);
                }
                Some(_) => self.pos += 1,
            }
        }
    }

    /// The inside of `$((…))` after the `$((`, recording nested substitutions; consumes the closing `))`.
    fn read_arithmetic(&mut self) -> Result<String, Unparsable> {
        let start = self.pos;
        let mut depth = 0;
        loop {
            match self.peek() {
                None => return Err(unterminated("$((")),
                Some('(') => {
                    depth += 1;
                    self.pos += 1;
                }
                Some(')') if depth > 0 => {
                    depth -= 1;
                    self.pos += 1;
                }
                Some(')') => break,
                Some('\\') => self.pos += 2,
                Some('\'') => self.skip_single_quoted()?,
                Some('"') => self.skip_double_quoted()?,
                Some('$') => {
                    self.read_dollar(Ctx::Body)?;
                }
                Some('`') => {
                    self.pos += 1;
                    let inner = self.read_backticks()?;
                    self.substitutions.push(inner);
                }
                Some(_) => self.pos += 1,
            }
        }
        let inner = self.text(start, self.pos.min(self.chars.len()));
        if self.peek_at(1) != Some(')') {
            // `$((cmd) …)` is a command substitution starting with a subshell; the shells disagree on it.
            return Err(Unparsable("cannot tell arithmetic from a subshell in `$((`".into()));
        }
        self.pos += 2;
        Ok(inner)
    }

    /// `$'…'` after the `$'`: the decoded text, and whether an escape was left undecoded.
    fn read_ansi_c(&mut self) -> Result<(String, bool), Unparsable> {
        let mut out = String::new();
        let mut unknown = false;
        loop {
            let Some(c) = self.peek() else { return Err(unterminated("$'")) };
            self.pos += 1;
            match c {
                '\'' => return Ok((out, unknown)),
                '\\' => {
                    let Some(e) = self.peek() else { return Err(unterminated("$'")) };
                    self.pos += 1;
                    match e {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        'a' => out.push('\x07'),
                        'b' => out.push('\x08'),
                        'e' | 'E' => out.push('\x1b'),
                        'f' => out.push('\x0c'),
                        'v' => out.push('\x0b'),
                        '\\' | '\'' | '"' | '?' => out.push(e),
                        'x' => unknown |= !self.push_code(&mut out, 16, 2, 0),
                        '0'..='7' => unknown |= !self.push_code(&mut out, 8, 3, 1),
                        _ => {
                            // \u, \U, \c and the rest: not decoded here, so the value is unknown.
                            out.push('\\');
                            out.push(e);
                            unknown = true;
                        }
                    }
                }
                other => out.push(other),
            }
        }
    }

    /// Decode up to `max` digits in `radix` (the first `already` digits were consumed as the escape letter).
    /// Returns false when the result is not plain ASCII (a byte of a multi-byte character).
    fn push_code(&mut self, out: &mut String, radix: u32, max: usize, already: usize) -> bool {
        let start = self.pos - already;
        while self.pos - start < max && self.peek().is_some_and(|c| c.is_digit(radix)) {
            self.pos += 1;
        }
        let digits = self.text(start, self.pos);
        match u32::from_str_radix(&digits, radix).ok().and_then(char::from_u32) {
            Some(c) if c.is_ascii() && !digits.is_empty() => {
                out.push(c);
                true
            }
            _ => false,
        }
    }

    /// A `$` at the cursor. Returns the text it stands for in the word and whether that is only known at run
    /// time. `$'…'` (unquoted) is decoded; `$"…"` leaves the cursor on the quote for the caller.
    fn read_dollar(&mut self, ctx: Ctx) -> Result<(String, bool), Unparsable> {
        self.pos += 1;
        match self.peek() {
            Some('(') if self.peek_at(1) == Some('(') => {
                self.pos += 2;
                let inner = self.read_arithmetic()?;
                Ok((format!("$(({inner}))"), true))
            }
            Some('(') => {
                self.pos += 1;
                let inner = self.read_parenthesized()?;
                self.substitutions.push(inner.clone());
                Ok((format!("$({inner})"), true))
            }
            Some('{') => {
                self.pos += 1;
                let start = self.pos;
                self.skip_braced(ctx)?;
                let inner = self.text(start, self.pos);
                self.pos += 1;
                Ok((format!("${{{inner}}}"), true))
            }
            Some('\'') if ctx == Ctx::Unquoted => {
                self.pos += 1;
                self.read_ansi_c()
            }
            Some('"') if ctx == Ctx::Unquoted => Ok((String::new(), true)),
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let start = self.pos;
                while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                    self.pos += 1;
                }
                Ok((format!("${}", self.text(start, self.pos)), true))
            }
            Some(c) if c.is_ascii_digit() || "?$!#@*-".contains(c) => {
                self.pos += 1;
                Ok((format!("${c}"), true))
            }
            _ => Ok(("$".into(), false)),
        }
    }

    fn read_double_quoted(&mut self, word: &mut Word) -> Result<(), Unparsable> {
        self.pos += 1;
        word.quoted = true;
        loop {
            match self.peek() {
                None => return Err(unterminated("double quote")),
                Some('"') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some('\\') => {
                    self.pos += 1;
                    match self.peek() {
                        Some(c @ ('"' | '\\' | '$' | '`')) => {
                            word.push_quoted(c);
                            self.pos += 1;
                        }
                        Some('\n') => self.pos += 1,
                        _ => word.push_quoted('\\'),
                    }
                }
                Some('$') => {
                    let (text, dynamic) = self.read_dollar(Ctx::DoubleQuoted)?;
                    word.push_expansion(&text, dynamic);
                }
                Some('`') => {
                    self.pos += 1;
                    let inner = self.read_backticks()?;
                    word.push_expansion(&format!("`{inner}`"), true);
                    self.substitutions.push(inner);
                }
                Some(c) => {
                    word.push_quoted(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn read_single_quoted(&mut self, word: &mut Word) -> Result<(), Unparsable> {
        self.pos += 1;
        word.quoted = true;
        loop {
            match self.peek() {
                None => return Err(unterminated("single quote")),
                Some('\'') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(c) => {
                    word.push_quoted(c);
                    self.pos += 1;
                }
            }
        }
    }

    /// `<(…)` or `>(…)` at the cursor: a word whose value is a file the shell connects to a command.
    fn read_process_substitution(&mut self, word: &mut Word) -> Result<(), Unparsable> {
        let direction = self.peek().unwrap_or('<');
        self.pos += 2;
        let inner = self.read_parenthesized()?;
        word.push_expansion(&format!("{direction}({inner})"), true);
        self.substitutions.push(inner);
        Ok(())
    }

    fn at_process_substitution(&self) -> bool {
        matches!(self.peek(), Some('<' | '>')) && self.peek_at(1) == Some('(')
    }

    /// A word, or `None` at an operator, whitespace or the end.
    fn read_word(&mut self) -> Result<Option<Word>, Unparsable> {
        let mut word = Word::default();
        let mut any = false;
        while let Some(c) = self.peek() {
            if self.at_process_substitution() {
                self.read_process_substitution(&mut word)?;
                any = true;
                continue;
            }
            if c.is_whitespace() || is_operator(c) {
                break;
            }
            any = true;
            match c {
                '\'' => self.read_single_quoted(&mut word)?,
                '"' => self.read_double_quoted(&mut word)?,
                '\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some('\n') => self.pos += 1,
                        Some(c) => {
                            word.quoted = true;
                            word.push_quoted(c);
                            self.pos += 1;
                        }
                        None => {}
                    }
                }
                '$' => {
                    let quoted = self.peek_at(1) == Some('\'');
                    let (text, dynamic) = self.read_dollar(Ctx::Unquoted)?;
                    word.quoted |= quoted;
                    if quoted {
                        for c in text.chars() {
                            word.push_quoted(c);
                        }
                        word.dynamic |= dynamic;
                    } else {
                        word.push_expansion(&text, dynamic);
                    }
                }
                '`' => {
                    self.pos += 1;
                    let inner = self.read_backticks()?;
                    word.push_expansion(&format!("`{inner}`"), true);
                    self.substitutions.push(inner);
                }
                other => {
                    word.push_unquoted(other);
                    self.pos += 1;
                }
            }
        }
        if any && has_brace_expansion(&word.pattern) {
            word.dynamic = true;
        }
        Ok(any.then_some(word))
    }

    /// A redirection operator at the cursor.
    fn read_redirect_op(&mut self) -> Option<String> {
        let c = self.peek()?;
        let next = self.peek_at(1);
        let op = match (c, next) {
            ('&', Some('>')) if self.peek_at(2) == Some('>') => "&>>",
            ('&', Some('>')) => "&>",
            ('>', Some('>')) => ">>",
            ('>', Some('&')) => ">&",
            ('>', Some('|')) => ">|",
            ('>', _) => ">",
            ('<', Some('<')) if self.peek_at(2) == Some('<') => "<<<",
            ('<', Some('<')) if self.peek_at(2) == Some('-') => "<<-",
            ('<', Some('<')) => "<<",
            ('<', Some('&')) => "<&",
            ('<', Some('>')) => "<>",
            ('<', _) => "<",
            _ => return None,
        };
        self.pos += op.chars().count();
        Some(op.to_string())
    }

    fn skip_blanks(&mut self) {
        while self.peek().is_some_and(|c| c.is_whitespace() && c != '\n') {
            self.pos += 1;
        }
    }

    /// Read the bodies of heredocs announced on the line that just ended.
    fn read_heredoc_bodies(&mut self) -> Result<(), Unparsable> {
        for pending in std::mem::take(&mut self.heredocs) {
            let mut body = String::new();
            loop {
                if self.peek().is_none() {
                    break;
                }
                let start = self.pos;
                while self.peek().is_some_and(|c| c != '\n') {
                    self.pos += 1;
                }
                let line = self.text(start, self.pos);
                if self.peek() == Some('\n') {
                    self.pos += 1;
                }
                let line = if pending.strip_tabs { line.trim_start_matches('\t') } else { line.as_str() };
                if line == pending.delimiter {
                    break;
                }
                body.push_str(line);
                body.push('\n');
            }
            let mut word = Word::literal(&body);
            if pending.expands {
                let (dynamic, substitutions) = scan_body(&body)?;
                word.dynamic = dynamic;
                self.substitutions.extend(substitutions);
            }
            self.bodies.push((pending.command, pending.redirect, word));
        }
        Ok(())
    }
}

/// Does this pattern hold an unescaped brace expansion (`{a,b}` or `{1..3}`)?
fn has_brace_expansion(pattern: &str) -> bool {
    let chars: Vec<char> = pattern.chars().collect();
    let mut open: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '{' => open.push(i),
            '}' => {
                if let Some(start) = open.pop()
                    && separates(&chars[start + 1..i])
                {
                    return true;
                }
            }
            _ => {}
        }
        i += 1;
    }
    false
}

/// An unescaped `,` or `..` at the top level of a brace's inside.
fn separates(inside: &[char]) -> bool {
    let mut i = 0;
    let mut depth = 0;
    while i < inside.len() {
        match inside[i] {
            '\\' => i += 1,
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => return true,
            '.' if depth == 0 && inside.get(i + 1) == Some(&'.') => return true,
            _ => {}
        }
        i += 1;
    }
    false
}

/// Whether a heredoc body (or other expanding text) expands anything, and the substitutions it runs.
fn scan_body(text: &str) -> Result<(bool, Vec<String>), Unparsable> {
    let mut lexer = Lexer::new(text);
    let mut dynamic = false;
    while let Some(c) = lexer.peek() {
        match c {
            '\\' => lexer.pos += 2,
            '$' => dynamic |= lexer.read_dollar(Ctx::Body)?.1,
            '`' => {
                lexer.pos += 1;
                let inner = lexer.read_backticks()?;
                lexer.substitutions.push(inner);
                dynamic = true;
            }
            _ => lexer.pos += 1,
        }
    }
    Ok((dynamic, lexer.substitutions))
}

/// Leading words that are shell syntax rather than a command name.
const KEYWORDS: &[&str] =
    &["{", "}", "!", "then", "do", "else", "if", "elif", "while", "until", "fi", "done"];

/// Every simple command in `line`, including those inside substitutions.
pub fn parse(line: &str) -> Result<Vec<Simple>, Unparsable> {
    parse_nested(line, 0)
}

fn parse_nested(line: &str, depth: usize) -> Result<Vec<Simple>, Unparsable> {
    if depth > MAX_NESTING {
        return Err(Unparsable("substitutions nested too deeply".into()));
    }
    let mut lexer = Lexer::new(line);
    let mut commands = Vec::new();
    let mut current = Simple::default();
    let finish = |current: &mut Simple, commands: &mut Vec<Simple>| {
        if !current.argv.is_empty() || !current.redirects.is_empty() {
            commands.push(std::mem::take(current));
        }
    };
    loop {
        lexer.skip_blanks();
        let Some(c) = lexer.peek() else { break };
        if c == '#' {
            while lexer.peek().is_some_and(|c| c != '\n') {
                lexer.pos += 1;
            }
            continue;
        }
        if !lexer.at_process_substitution()
            && let Some(op) = lexer.read_redirect_op()
        {
            lexer.skip_blanks();
            let target = lexer.read_word()?.unwrap_or_default();
            if op == "<<" || op == "<<-" {
                lexer.heredocs.push(PendingHeredoc {
                    delimiter: target.text.clone(),
                    strip_tabs: op == "<<-",
                    expands: !target.quoted,
                    command: commands.len(),
                    redirect: current.redirects.len(),
                });
            }
            current.redirects.push(Redirect { op, target, body: None });
            continue;
        }
        if is_operator(c) && !lexer.at_process_substitution() {
            lexer.pos += 1;
            finish(&mut current, &mut commands);
            if c == '\n' {
                lexer.read_heredoc_bodies()?;
            }
            continue;
        }
        match lexer.read_word()? {
            // A number directly followed by a redirection is a file descriptor, not an argument.
            Some(word)
                if !word.dynamic
                    && !word.quoted
                    && word.text.chars().all(|c| c.is_ascii_digit())
                    && matches!(lexer.peek(), Some('<' | '>'))
                    && !lexer.at_process_substitution() => {}
            Some(word)
                if current.argv.is_empty() && !word.quoted && KEYWORDS.contains(&word.text.as_str()) => {}
            Some(word) => current.argv.push(word),
            None => lexer.pos += 1,
        }
    }
    finish(&mut current, &mut commands);
    lexer.read_heredoc_bodies()?;
    for (command, redirect, body) in std::mem::take(&mut lexer.bodies) {
        if let Some(r) = commands.get_mut(command).and_then(|c| c.redirects.get_mut(redirect)) {
            r.body = Some(body);
        }
    }
    for inner in std::mem::take(&mut lexer.substitutions) {
        let mut nested = parse_nested(&inner, depth + 1)?;
        for command in &mut nested {
            command.nested = true;
        }
        commands.extend(nested);
    }
    Ok(commands)
}

/// A simple command built from literal words (for commands given as strings, like `find -exec`).
pub fn literal(words: &[&str]) -> Simple {
    Simple { argv: words.iter().map(|w| Word::literal(w)).collect(), ..Simple::default() }
}

#[cfg(test)]
mod tests;
