//! What `tinycode run` settles before the agent starts: the prompt (words, stdin), the project directory, and
//! which stored session `--continue` or `--session` means (read from the store).
//!
//! Owns those rules; the run itself is `acp::headless`.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;

use super::{Exit, RunArgs};
use crate::config::Sources;

/// The prompt from its words: `-` stands for stdin; no words read stdin when it is not a terminal.
pub fn prompt_text(words: &[String]) -> Result<String, String> {
    let stdin_wanted = words.iter().any(|w| w == "-") || words.is_empty();
    let piped = if stdin_wanted {
        if std::io::stdin().is_terminal() {
            if words.is_empty() {
                return Err("run needs a prompt: words, or `-` to read it from stdin".into());
            }
            return Err("`-` reads the prompt from stdin, but stdin is a terminal".into());
        }
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read the prompt from stdin: {e}"))?;
        text
    } else {
        String::new()
    };
    let prompt = if words.is_empty() {
        piped.trim_end().to_string()
    } else {
        let parts: Vec<&str> =
            words.iter().map(|w| if w == "-" { piped.trim_end() } else { w.as_str() }).collect();
        parts.join(" ")
    };
    if prompt.trim().is_empty() {
        return Err("the prompt is empty".into());
    }
    Ok(prompt)
}

pub fn absolute_dir(dir: Option<PathBuf>) -> Result<PathBuf, String> {
    let dir = dir.map(Ok).unwrap_or_else(std::env::current_dir).map_err(|e| e.to_string())?;
    std::fs::canonicalize(&dir).map_err(|e| format!("cannot use the directory {}: {e}", dir.display()))
}

/// Which stored session `--session`/`--continue` mean, and the directory it belongs to.
pub async fn stored_session(
    sources: &Sources,
    args: &RunArgs,
) -> Result<(Option<String>, PathBuf), (Exit, String)> {
    let cwd = args.cwd.clone();
    let usage = |e: String| (Exit::Usage, e);
    if args.session.is_none() && !args.continue_last {
        return Ok((None, absolute_dir(cwd).map_err(usage)?));
    }
    let database = crate::store::database_path(&sources.data_dir());
    let store = super::sessions::open_existing(&database).map_err(|e| (Exit::Failed, e.to_string()))?;
    let failed = |e: crate::store::StoreError| (Exit::Failed, e.to_string());
    if let Some(id) = &args.session {
        let row = match &store {
            Some(store) => store.session(id).await.map_err(failed)?,
            None => None,
        };
        let Some(row) = row else {
            return Err((
                Exit::Failed,
                format!("no stored session {id} (`tinycode sessions --all` lists them)"),
            ));
        };
        let cwd = match cwd {
            Some(dir) => absolute_dir(Some(dir)).map_err(usage)?,
            None => PathBuf::from(row.cwd),
        };
        return Ok((Some(row.id), cwd));
    }
    let cwd = absolute_dir(cwd).map_err(usage)?;
    let newest = match &store {
        Some(store) => super::sessions::newest(store, Some(&cwd), 1).await.map_err(failed)?,
        None => Vec::new(),
    };
    match newest.into_iter().next() {
        Some(row) => Ok((Some(row.id), cwd)),
        None => Err((Exit::Failed, format!("no stored session in {} to continue", cwd.display()))),
    }
}
