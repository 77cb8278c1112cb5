//! What the reading tools (`read`, `grep`, `glob`) ask before they look at a path. The path is resolved
//! (every symlink, see `workspace::boundary`), then:
//! - a secret file named explicitly asks under `secret-read`, every time (no "always");
//! - a path outside the session's directories asks under `external_directory`, with the directory as the
//!   permission pattern (`/dir/**`), so "always" covers that directory and the ones below it;
//! - anything else stays a plain `read`.
//!
//! With nobody to ask (no permission service), secret and outside reads are refused: fail closed.
//!
//! Owns that decision and how the ask presents it. Must not read file contents.

use std::path::{Path, PathBuf};

use crate::display::{Content, Presentation};
use crate::permission::Category;
use crate::tool::{Context, ToolError};
use crate::workspace::secret_files;

/// The resolved path a reading tool works on, carried from its preview to its execution.
pub struct Target(pub PathBuf);

/// How a read of one path is asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// The resolved path.
    pub path: PathBuf,
    /// `None` keeps the tool's own category (`read`).
    pub category: Option<Category>,
    /// The values the permission rules see.
    pub patterns: Vec<String>,
    /// What the ask adds to the call's content.
    pub note: Option<String>,
}

impl Access {
    /// Apply this decision to the call's presentation: rules see the resolved path (or directory).
    pub fn present(&self, presentation: &mut Presentation) {
        presentation.patterns = self.patterns.clone();
        if let Some(note) = &self.note {
            presentation.content.push(Content::Text(note.clone()));
        }
    }
}

/// The directory an outside read is asked about: the path itself when it is a directory, else its parent.
fn directory_of(path: &Path) -> PathBuf {
    if path.is_dir() {
        return path.to_path_buf();
    }
    path.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("/"))
}

/// The permission pattern that covers `dir` and everything below it.
pub fn directory_pattern(dir: &Path) -> String {
    format!("{}/**", dir.display().to_string().trim_end_matches('/'))
}

/// Decide how reading `given` (absolute, as the model named it) is asked about. `secret_check`: whether a
/// secret name counts (a file named explicitly; a directory is walked with its secrets left out instead).
pub fn decide(ctx: &Context, given: &Path, secret_check: bool) -> Result<Access, ToolError> {
    let located = ctx.files.locate(given)?;
    let path = located.path;
    let kind = secret_check
        .then(|| secret_files::secret_kind(given).or_else(|| secret_files::secret_kind(&path)))
        .flatten();
    let nobody = ctx.perms.is_none();
    if let Some(kind) = kind {
        if nobody {
            return Err(ToolError::retry(format!(
                "Blocked: {} is a secret file ({kind}) and there is no one to ask for permission.",
                path.display()
            )));
        }
        return Ok(Access {
            patterns: vec![path.to_string_lossy().into_owned()],
            note: Some(format!(
                "**Secret file** ({kind}): {}. Its contents will be sent to the model.",
                path.display()
            )),
            category: Some(Category::SecretRead),
            path,
        });
    }
    if located.inside {
        return Ok(Access {
            patterns: vec![path.to_string_lossy().into_owned()],
            category: None,
            note: None,
            path,
        });
    }
    if nobody {
        return Err(ToolError::retry(format!(
            "Blocked: {} is outside the workspace and there is no one to ask for permission.",
            path.display()
        )));
    }
    let dir = directory_of(&path);
    Ok(Access {
        patterns: vec![directory_pattern(&dir)],
        note: Some(format!("**Outside the workspace:** {}.", dir.display())),
        category: Some(Category::ExternalDirectory),
        path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_pattern_covers_the_directory_and_below() {
        assert_eq!(directory_pattern(Path::new("/data/logs")), "/data/logs/**");
        assert_eq!(directory_pattern(Path::new("/")), "/**");
    }
}
