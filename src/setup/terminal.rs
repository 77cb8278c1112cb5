//! The terminal side of `tinycode setup`: reading answers line by line, with echo turned off while a key is typed
//! (when the input is a terminal), and writing prompts.
//!
//! Owns terminal input and output only; what is asked belongs to the flow.

use std::io::{BufRead, Write};

/// Where the flow reads answers and writes prompts. Tests drive it through a pseudo-terminal.
pub struct Terminal<'a> {
    pub input: &'a mut dyn BufRead,
    pub output: &'a mut dyn Write,
    /// File descriptor of the input, when it is a terminal whose echo can be turned off.
    pub tty: Option<i32>,
}

/// Turns echo back on when dropped.
struct EchoOff {
    fd: i32,
    saved: libc::termios,
}

impl EchoOff {
    fn new(fd: i32) -> Option<EchoOff> {
        // SAFETY: termios is plain data; tcgetattr fills it for a valid descriptor or fails.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(fd, &mut saved) } != 0 {
            return None;
        }
        let mut quiet = saved;
        quiet.c_lflag &= !libc::ECHO;
        quiet.c_lflag |= libc::ECHONL;
        // SAFETY: `quiet` is a copy of the terminal's own settings with echo cleared.
        (unsafe { libc::tcsetattr(fd, libc::TCSANOW, &quiet) } == 0).then_some(EchoOff { fd, saved })
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        // SAFETY: restores the settings read from the same descriptor.
        unsafe { libc::tcsetattr(self.fd, libc::TCSANOW, &self.saved) };
    }
}

impl Terminal<'_> {
    /// Write `text` (no newline added).
    pub fn say(&mut self, text: &str) {
        let _ = self.output.write_all(text.as_bytes());
        let _ = self.output.flush();
    }

    /// Ask and read one line, trimmed; `None` at the end of input.
    pub fn ask(&mut self, question: &str) -> Option<String> {
        self.say(question);
        let mut line = String::new();
        match self.input.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim().to_string()),
        }
    }

    /// Ask for a secret: echo is off while it is typed.
    pub fn ask_secret(&mut self, question: &str) -> Option<String> {
        let _quiet = self.tty.and_then(EchoOff::new);
        self.ask(question)
    }

    /// Ask a yes/no question; an empty answer takes `default`.
    pub fn confirm(&mut self, question: &str, default: bool) -> Option<bool> {
        let hint = if default { "[Y/n]" } else { "[y/N]" };
        let answer = self.ask(&format!("{question} {hint}: "))?;
        Some(match answer.to_ascii_lowercase().as_str() {
            "" => default,
            a => a.starts_with('y'),
        })
    }
}

/// Is `fd` a terminal?
pub fn is_tty(fd: i32) -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(fd) == 1 }
}
