//! Formatters from config (`[formatters]`, file extension → command), run after a write. A formatter failure is
//! reported to the model and never undoes the write.
//!
//! Owns running the formatter process. Must not write files itself. Formatters start through the session's
//! launcher (`shell::launch`): they wait until the project is trusted, and get the session's command environment
//! (no provider keys, no secrets).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::shell::launch::{LaunchError, Launcher, Purpose};

/// How long a formatter may run.
const FORMAT_TIMEOUT: Duration = Duration::from_secs(30);

/// The command configured for `path`'s extension, with `{file}` replaced by the path (or the path appended).
pub fn command_for(formatters: &BTreeMap<String, Vec<String>>, path: &Path) -> Option<Vec<String>> {
    let ext = path.extension()?.to_str()?;
    let template = formatters.get(ext).filter(|c| !c.is_empty())?;
    let file = path.to_string_lossy();
    let mut command: Vec<String> = template.iter().map(|a| a.replace("{file}", &file)).collect();
    if !template.iter().any(|a| a.contains("{file}")) {
        command.push(file.into_owned());
    }
    Some(command)
}

/// Run `command` in `cwd` through `launcher` (nothing runs while it waits for trust). `Err` carries a message for
/// the model.
pub async fn run(command: &[String], cwd: &Path, launcher: &Launcher) -> Result<(), String> {
    let Some((program, args)) = command.split_first() else { return Ok(()) };
    let mut builder = match launcher.prepare(Purpose::Formatter, program, cwd) {
        Ok(ready) => ready.command(),
        // Held until the project is trusted: the launcher told the user once; the write stands as written.
        Err(LaunchError::WaitsForTrust { .. }) => return Ok(()),
        Err(e) => return Err(e.to_string()),
    };
    let child = builder
        .args(args)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("could not start `{program}`: {e}"))?;
    let output = match tokio::time::timeout(FORMAT_TIMEOUT, child.wait_with_output()).await {
        Err(_) => return Err(format!("`{program}` did not finish within {} s", FORMAT_TIMEOUT.as_secs())),
        Ok(Err(e)) => return Err(format!("`{program}` failed: {e}")),
        Ok(Ok(output)) => output,
    };
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let detail = if stderr.trim().is_empty() { stdout.trim().to_string() } else { stderr.trim().to_string() };
    let detail = detail[..detail.floor_char_boundary(2_000)].to_string();
    Err(format!("`{}` exited with {}: {detail}", command.join(" "), output.status))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Arc;

    use super::*;
    use crate::shell::environment::Environment;

    #[test]
    fn the_file_is_substituted_or_appended() {
        let formatters = BTreeMap::from([
            ("rs".to_string(), vec!["rustfmt".to_string()]),
            ("py".to_string(), vec!["black".to_string(), "-q".to_string(), "{file}".to_string()]),
        ]);
        assert_eq!(
            command_for(&formatters, Path::new("/p/a.rs")),
            Some(vec!["rustfmt".into(), "/p/a.rs".into()])
        );
        assert_eq!(
            command_for(&formatters, Path::new("/p/a.py")),
            Some(vec!["black".into(), "-q".into(), "/p/a.py".into()])
        );
        assert_eq!(command_for(&formatters, Path::new("/p/a.go")), None);
    }

    fn trusted(env: Environment) -> Launcher {
        let launcher = Launcher::new(&[PathBuf::from("/nonexistent-project")], Arc::new(env));
        launcher.set_trusted(true);
        launcher
    }

    #[tokio::test]
    async fn a_failing_formatter_reports_its_output() {
        let dir = tempfile::tempdir().unwrap();
        let launcher = trusted(Environment::default());
        let err =
            run(&["sh".into(), "-c".into(), "echo bad syntax >&2; exit 3".into()], dir.path(), &launcher)
                .await
                .unwrap_err();
        assert_eq!(err, "`sh -c echo bad syntax >&2; exit 3` exited with exit status: 3: bad syntax");
        assert!(run(&["true".into()], dir.path(), &launcher).await.is_ok());
        assert_eq!(
            run(&["/nonexistent/fmt".into()], dir.path(), &launcher).await,
            Err("could not start `/nonexistent/fmt`: No such file or directory (os error 2)".into())
        );
        assert_eq!(
            run(&["no-such-formatter".into()], dir.path(), &launcher).await,
            Err("`no-such-formatter` was not found on PATH".into())
        );
    }

    #[tokio::test]
    async fn a_formatter_sees_the_filtered_environment_only() {
        let dir = tempfile::tempdir().unwrap();
        let vars = [
            ("DEPLOY_TOKEN".into(), "t".into()),
            ("EDITOR".into(), "vi".into()),
            ("PATH".into(), std::env::var_os("PATH").unwrap()),
        ];
        let launcher = trusted(Environment::from_vars(&crate::config::EnvPolicy::default(), vars));
        let script = "test -z \"$DEPLOY_TOKEN\" && test \"$EDITOR\" = vi && test \"$PAGER\" = cat || { env >&2; exit 1; }";
        assert_eq!(run(&["/bin/sh".into(), "-c".into(), script.into()], dir.path(), &launcher).await, Ok(()));
    }

    #[tokio::test]
    async fn in_an_untrusted_project_a_formatter_waits() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let launcher = Launcher::new(&[dir.path().to_path_buf()], Arc::new(Environment::default()));
        let command = ["/bin/sh".into(), "-c".into(), format!("touch {}", marker.display())];
        assert_eq!(run(&command, dir.path(), &launcher).await, Ok(()), "the write stands; nothing to report");
        assert!(!marker.exists());
    }
}
