//! Skills (agentskills.io `SKILL.md`): a folder named after the skill holding `SKILL.md`, whose frontmatter gives
//! `name` (1–64 of `[a-z0-9-]`, matching the folder) and `description` (1–1024 characters: what it does and when
//! to use it). Only names and descriptions go into the system prompt; the body is read when the skill is used.
//! Files are read leniently: a name that does not match its folder or breaks the rules is used under the folder's
//! name with a warning; a file without a description, or with broken frontmatter, is reported and left out.
//!
//! Owns the skill format and discovery.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::frontmatter;
use super::{Origin, Problem, Root};
use crate::workspace::project_file;

pub const FILE: &str = "SKILL.md";
pub const MAX_NAME: usize = 64;
pub const MAX_DESCRIPTION: usize = 1024;
/// Folders looked at per root, so a huge directory cannot stall a session.
const MAX_PER_ROOT: usize = 500;

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The `SKILL.md` file.
    pub path: PathBuf,
    /// The skill's folder: relative paths in the skill start here.
    pub dir: PathBuf,
    pub origin: Origin,
    /// Where its files may lead (its root's).
    pub reach: project_file::Scope,
    /// What was wrong but forgiven (shown by `/skills`).
    pub warnings: Vec<String>,
}

/// Is `name` a valid skill name by the specification?
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

fn read(path: &Path, folder: &str, root: &Root) -> Result<Skill, String> {
    let text = super::read_text(path, &root.reach)?;
    let document = frontmatter::parse(&text)?;
    let mut warnings = Vec::new();
    let Some(description) = document.get("description") else {
        return Err("its frontmatter has no `description` (what the skill does and when to use it)".into());
    };
    let mut description = description.trim().to_string();
    if description.chars().count() > MAX_DESCRIPTION {
        warnings.push(format!("the description is longer than {MAX_DESCRIPTION} characters and was cut"));
        description = description.chars().take(MAX_DESCRIPTION).collect();
    }
    match document.get("name") {
        None => warnings.push(format!("the frontmatter has no `name`; the folder's name `{folder}` is used")),
        Some(name) if name != folder => warnings.push(format!(
            "its name `{name}` does not match its folder; the folder's name `{folder}` is used"
        )),
        Some(_) => {}
    }
    if !valid_name(folder) {
        warnings.push(format!(
            "`{folder}` is not a valid skill name (1-{MAX_NAME} of a-z, 0-9 and single hyphens inside)"
        ));
    }
    Ok(Skill {
        name: folder.to_string(),
        description,
        path: path.to_path_buf(),
        dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
        origin: root.origin,
        reach: root.reach.clone(),
        warnings,
    })
}

fn folders(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found: Vec<PathBuf> =
        entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| super::present(&p.join(FILE))).collect();
    found.sort();
    found.truncate(MAX_PER_ROOT);
    found
}

/// The skills under `roots` (highest precedence first; a name is taken by its first skill) and the files that
/// could not be used.
pub fn discover(roots: &[Root]) -> (Vec<Skill>, Vec<Problem>) {
    let mut skills = Vec::new();
    let mut problems = Vec::new();
    let mut seen = HashSet::new();
    for root in roots {
        for folder in folders(&root.dir) {
            let name = folder.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let path = folder.join(FILE);
            if name.chars().any(char::is_whitespace) {
                problems.push(Problem { path, reason: "its folder name contains whitespace".into() });
                continue;
            }
            if seen.contains(&name) {
                continue;
            }
            match read(&path, &name, root) {
                Ok(skill) => {
                    seen.insert(name);
                    skills.push(skill);
                }
                Err(reason) => problems.push(Problem { path, reason }),
            }
        }
    }
    (skills, problems)
}

/// What a used skill gives the model: its body (arguments put in) and where its files are.
pub fn activate(skill: &Skill, arguments: &str) -> Result<String, String> {
    let text =
        super::read_text(&skill.path, &skill.reach).map_err(|e| format!("{}: {e}", skill.path.display()))?;
    let document = frontmatter::parse(&text).map_err(|e| format!("{}: {e}", skill.path.display()))?;
    let body = super::arguments::expand(document.body.trim(), arguments, skill.origin.style());
    Ok(format!(
        "<skill name=\"{}\">\n{body}\n\nBase directory for this skill: {}. Relative paths in this skill (e.g., scripts/, references/) are relative to this base directory.\n</skill>",
        skill.name,
        skill.dir.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extensions::Scope;

    const PROJECT: Origin = Origin { scope: Scope::Project, claude: false };
    const USER: Origin = Origin { scope: Scope::User, claude: true };

    fn root(dir: &Path, origin: Origin) -> Root {
        Root { dir: dir.to_path_buf(), origin, reach: project_file::Scope::within(dir) }
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn skills_are_found_by_folder_and_the_first_root_wins_a_name() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        write(&a.join("pdf/SKILL.md"), "---\nname: pdf\ndescription: Work with PDFs.\n---\nUse pdftotext.\n");
        write(&b.join("pdf/SKILL.md"), "---\nname: pdf\ndescription: Another.\n---\n");
        write(&b.join("Review/SKILL.md"), "---\nname: review\ndescription: Reviews.\n---\n");
        write(&b.join("broken/SKILL.md"), "---\nname: broken\n");
        write(&b.join("nodesc/SKILL.md"), "---\nname: nodesc\n---\nbody\n");
        write(&b.join("notaskill/README.md"), "x");
        let roots = [root(&a, PROJECT), root(&b, USER)];
        let (skills, problems) = discover(&roots);
        let names: Vec<(&str, &str)> =
            skills.iter().map(|s| (s.name.as_str(), s.description.as_str())).collect();
        assert_eq!(names, [("pdf", "Work with PDFs."), ("Review", "Reviews.")]);
        assert_eq!(skills[0].dir, a.join("pdf"));
        assert_eq!(
            skills[1].warnings,
            [
                "its name `review` does not match its folder; the folder's name `Review` is used".to_string(),
                "`Review` is not a valid skill name (1-64 of a-z, 0-9 and single hyphens inside)".to_string()
            ]
        );
        assert_eq!(
            problems,
            [
                Problem {
                    path: b.join("broken/SKILL.md"),
                    reason: "the frontmatter that starts with `---` is never closed".into()
                },
                Problem {
                    path: b.join("nodesc/SKILL.md"),
                    reason: "its frontmatter has no `description` (what the skill does and when to use it)"
                        .into()
                },
            ]
        );
    }

    #[test]
    fn an_activated_skill_gives_its_body_with_arguments_and_its_base_directory() {
        let dir = tempfile::tempdir().unwrap();
        write(
            &dir.path().join("fix/SKILL.md"),
            "---\nname: fix\ndescription: d\n---\nFix issue $1 ($ARGUMENTS).\n",
        );
        let (skills, _) = discover(&[root(dir.path(), PROJECT)]);
        assert_eq!(
            activate(&skills[0], "42 fast").unwrap(),
            format!(
                "<skill name=\"fix\">\nFix issue 42 fast (42 fast).\n\nBase directory for this skill: {}. Relative paths in this skill (e.g., scripts/, references/) are relative to this base directory.\n</skill>",
                dir.path().join("fix").display()
            )
        );
        assert!(valid_name("pdf-tools-2") && !valid_name("-a") && !valid_name("a--b") && !valid_name("A"));
    }
}
