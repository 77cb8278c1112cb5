//! A shell tokenizer for classification (seed 003): splits a command line into simple commands with their argv
//! after quote removal, so quoting cannot hide a flag (`rm '-rf'`, `r''m`). Operators (`;`, `&&`, `||`, `|`,
//! `&`, newlines, subshells and braces) separate commands; redirections are kept with their targets; the
//! commands inside `$(...)` and backticks are parsed too and listed as commands of their own. Heredoc bodies are
//! skipped.
//!
//! Owns lexing only: it never expands variables or runs anything.

/// One word after quote removal.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Word {
    pub text: String,
    /// Contains an unquoted or double-quoted expansion (`$x`, `${x}`, `$(...)`, backticks): its value is
    /// only known at run time.
    pub dynamic: bool,
}

impl Word {
    fn literal(text: &str) -> Self {
        Self { text: text.to_string(), dynamic: false }
    }
}

/// A redirection such as `> out.txt` or `2>&1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    pub op: String,
    pub target: Word,
}

/// One simple command.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Simple {
    pub argv: Vec<Word>,
    pub redirects: Vec<Redirect>,
}

impl Simple {
    pub fn args(&self) -> Vec<&str> {
        self.argv.iter().map(|w| w.text.as_str()).collect()
    }
}

/// The line cannot be tokenized (an unterminated quote or substitution).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unparsable(pub String);

struct Lexer<'a> {
    chars: Vec<char>,
    pos: usize,
    /// Inner command texts of substitutions met so far.
    substitutions: Vec<String>,
    /// Heredoc delimiters waiting for the end of the current line: (delimiter, strip leading tabs).
    heredocs: Vec<(String, bool)>,
    _source: &'a str,
}

fn is_operator(c: char) -> bool {
    matches!(c, ';' | '&' | '|' | '(' | ')' | '<' | '>' | '\n')
}

impl<'a> Lexer<'a> {
    fn new(source: &'a str) -> Self {
        Self {
            chars: source.chars().collect(),
            pos: 0,
            substitutions: Vec::new(),
            heredocs: Vec::new(),
            _source: source,
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    /// Read up to the `)` matching an already consumed `$(`, honouring quotes and nesting.
    fn read_parenthesized(&mut self) -> Result<String, Unparsable> {
        let start = self.pos;
        let mut depth = 1;
        while let Some(c) = self.peek() {
            match c {
                '\\' => self.pos += 1,
                '\'' => {
                    self.pos += 1;
                    while self.peek().is_some_and(|c| c != '\'') {
                        self.pos += 1;
                    }
                }
                '"' => {
                    self.pos += 1;
                    while let Some(c) = self.peek() {
                        if c == '\\' {
                            self.pos += 1;
                        } else if c == '"' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        let inner: String = self.chars[start..self.pos].iter().collect();
                        self.pos += 1;
                        return Ok(inner);
                    }
                }
                _ => {}
            }
            self.pos += 1;
        }
        Err(Unparsable("unterminated $(".into()))
    }

    fn read_backticks(&mut self) -> Result<String, Unparsable> {
        let mut inner = String::new();
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '`' => return Ok(inner),
                '\\' => {
                    if let Some(next) = self.peek() {
                        inner.push(next);
                        self.pos += 1;
                    }
                }
                other => inner.push(other),
            }
        }
        Err(Unparsable("unterminated backtick".into()))
    }

    /// `$...` after the `$` was seen (not consumed). Returns the text to keep in the word.
    fn read_dollar(&mut self) -> Result<String, Unparsable> {
        self.pos += 1;
        match self.peek() {
            Some('(') if self.peek_at(1) == Some('(') => {
                self.pos += 2;
                let inner = self.read_parenthesized()?;
                if self.peek() == Some(')') {
                    self.pos += 1;
                }
                Ok(format!("$(({inner}))"))
            }
            Some('(') => {
                self.pos += 1;
                let inner = self.read_parenthesized()?;
                self.substitutions.push(inner.clone());
                Ok(format!("$({inner})"))
            }
            Some('{') => {
                let start = self.pos;
                while self.peek().is_some_and(|c| c != '}') {
                    self.pos += 1;
                }
                if self.peek().is_none() {
                    return Err(Unparsable("unterminated ${".into()));
                }
                self.pos += 1;
                Ok(format!("${}", self.chars[start..self.pos].iter().collect::<String>()))
            }
            _ => {
                let start = self.pos;
                while self.peek().is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    self.pos += 1;
                }
                if self.pos == start && self.peek().is_some_and(|c| "?$!#@*-0".contains(c)) {
                    self.pos += 1;
                }
                Ok(format!("${}", self.chars[start..self.pos].iter().collect::<String>()))
            }
        }
    }

    fn read_double_quoted(&mut self, word: &mut Word) -> Result<(), Unparsable> {
        self.pos += 1;
        loop {
            match self.peek() {
                None => return Err(Unparsable("unterminated double quote".into())),
                Some('"') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some('\\') => {
                    self.pos += 1;
                    match self.peek() {
                        Some(c @ ('"' | '\\' | '$' | '`')) => {
                            word.text.push(c);
                            self.pos += 1;
                        }
                        Some('\n') => self.pos += 1,
                        _ => word.text.push('\\'),
                    }
                }
                Some('$') => {
                    let text = self.read_dollar()?;
                    word.text.push_str(&text);
                    word.dynamic = true;
                }
                Some('`') => {
                    self.pos += 1;
                    let inner = self.read_backticks()?;
                    self.substitutions.push(inner.clone());
                    word.text.push_str(&format!("`{inner}`"));
                    word.dynamic = true;
                }
                Some(c) => {
                    word.text.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    /// A word, or `None` at an operator, whitespace or the end.
    fn read_word(&mut self) -> Result<Option<Word>, Unparsable> {
        let mut word = Word::default();
        let mut any = false;
        while let Some(c) = self.peek() {
            if c.is_whitespace() || is_operator(c) {
                break;
            }
            any = true;
            match c {
                '\'' => {
                    self.pos += 1;
                    loop {
                        match self.peek() {
                            None => return Err(Unparsable("unterminated single quote".into())),
                            Some('\'') => {
                                self.pos += 1;
                                break;
                            }
                            Some(c) => {
                                word.text.push(c);
                                self.pos += 1;
                            }
                        }
                    }
                }
                '"' => self.read_double_quoted(&mut word)?,
                '\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some('\n') => self.pos += 1,
                        Some(c) => {
                            word.text.push(c);
                            self.pos += 1;
                        }
                        None => {}
                    }
                }
                '$' => {
                    let text = self.read_dollar()?;
                    word.text.push_str(&text);
                    word.dynamic = true;
                }
                '`' => {
                    self.pos += 1;
                    let inner = self.read_backticks()?;
                    self.substitutions.push(inner.clone());
                    word.text.push_str(&format!("`{inner}`"));
                    word.dynamic = true;
                }
                other => {
                    word.text.push(other);
                    self.pos += 1;
                }
            }
        }
        Ok(any.then_some(word))
    }

    /// A redirection operator at the cursor (with an optional fd number already in `prefix`).
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

    /// Skip the bodies of heredocs announced on the line that just ended.
    fn skip_heredoc_bodies(&mut self) {
        for (delimiter, strip_tabs) in std::mem::take(&mut self.heredocs) {
            loop {
                let start = self.pos;
                while self.peek().is_some_and(|c| c != '\n') {
                    self.pos += 1;
                }
                let line: String = self.chars[start..self.pos].iter().collect();
                if self.peek() == Some('\n') {
                    self.pos += 1;
                }
                let line = if strip_tabs { line.trim_start_matches('\t') } else { line.as_str() };
                if line == delimiter || self.peek().is_none() {
                    break;
                }
            }
        }
    }
}

/// Every simple command in `line`, including those inside substitutions.
pub fn parse(line: &str) -> Result<Vec<Simple>, Unparsable> {
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
        if let Some(op) = lexer.read_redirect_op() {
            lexer.skip_blanks();
            let target = lexer.read_word()?.unwrap_or_default();
            if op.starts_with("<<") && op != "<<<" {
                lexer.heredocs.push((target.text.clone(), op == "<<-"));
            }
            current.redirects.push(Redirect { op, target });
            continue;
        }
        if is_operator(c) {
            lexer.pos += 1;
            finish(&mut current, &mut commands);
            if c == '\n' {
                lexer.skip_heredoc_bodies();
            }
            continue;
        }
        match lexer.read_word()? {
            // A number directly followed by a redirection is a file descriptor, not an argument.
            Some(word)
                if !word.dynamic
                    && word.text.chars().all(|c| c.is_ascii_digit())
                    && matches!(lexer.peek(), Some('<' | '>')) => {}
            Some(word)
                if current.argv.is_empty()
                    && matches!(word.text.as_str(), "{" | "}" | "!" | "then" | "do" | "else") => {}
            Some(word) => current.argv.push(word),
            None => lexer.pos += 1,
        }
    }
    finish(&mut current, &mut commands);
    for inner in std::mem::take(&mut lexer.substitutions) {
        commands.extend(parse(&inner)?);
    }
    Ok(commands)
}

/// A simple command built from literal words (for commands given as strings, like `sh -c`).
pub fn literal(words: &[&str]) -> Simple {
    Simple { argv: words.iter().map(|w| Word::literal(w)).collect(), redirects: Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argvs(line: &str) -> Vec<Vec<String>> {
        parse(line).unwrap().iter().map(|c| c.argv.iter().map(|w| w.text.clone()).collect()).collect()
    }

    #[test]
    fn quotes_are_removed_so_they_cannot_hide_words() {
        assert_eq!(argvs("rm '-rf' /"), vec![vec!["rm", "-rf", "/"]]);
        assert_eq!(argvs("r''m -r\"f\" /tmp/x"), vec![vec!["rm", "-rf", "/tmp/x"]]);
        assert_eq!(argvs(r"r\m -rf \/"), vec![vec!["rm", "-rf", "/"]]);
        assert_eq!(argvs("echo \"a b\" 'c d'"), vec![vec!["echo", "a b", "c d"]]);
    }

    #[test]
    fn operators_split_commands_and_substitutions_are_commands_too() {
        assert_eq!(
            argvs("cd src && ls -la | grep x; echo done &"),
            vec![vec!["cd", "src"], vec!["ls", "-la"], vec!["grep", "x"], vec!["echo", "done"]]
        );
        assert_eq!(argvs("(cd a; make) || true"), vec![vec!["cd", "a"], vec!["make"], vec!["true"]]);
        let parsed = parse("$(echo rm) -rf /").unwrap();
        assert!(parsed[0].argv[0].dynamic);
        assert_eq!(parsed[1].args(), vec!["echo", "rm"]);
        assert_eq!(argvs("echo `whoami`")[1], vec!["whoami"]);
        assert_eq!(argvs("echo \"$(cat .env)\"")[1], vec!["cat", ".env"]);
    }

    #[test]
    fn redirections_keep_their_targets_and_fd_numbers_are_not_arguments() {
        let parsed = parse("make 2>&1 > build.log").unwrap();
        assert_eq!(parsed[0].args(), vec!["make"]);
        let targets: Vec<(&str, &str)> =
            parsed[0].redirects.iter().map(|r| (r.op.as_str(), r.target.text.as_str())).collect();
        assert_eq!(targets, vec![(">&", "1"), (">", "build.log")]);
        assert_eq!(parse("echo x >/dev/sda").unwrap()[0].redirects[0].target.text, "/dev/sda");
    }

    #[test]
    fn heredoc_bodies_and_comments_are_not_commands() {
        let line = "cat <<'EOF' > notes.txt\nrm -rf /\nEOF\necho after # rm -rf /";
        assert_eq!(argvs(line), vec![vec!["cat"], vec!["echo", "after"]]);
    }

    #[test]
    fn unterminated_quotes_are_unparsable() {
        assert!(parse("echo 'oops").is_err());
        assert!(parse("echo \"oops").is_err());
        assert!(parse("echo $(oops").is_err());
    }
}
