//! `skill` (seed 000): load a skill's instructions by name, with `arguments` put into its `$1`, `$2`,
//! `$ARGUMENTS`. The session's skills are discovered by `extensions` and refreshed before each prompt; an unknown
//! name lists them.
//!
//! Owns the tool. Discovery and the file format belong to `extensions`.

use std::path::Path;
use std::sync::{Arc, RwLock};

use serde_json::{Value, json};

use crate::display::{Kind, Presentation};
use crate::extensions::{Catalog, skills};
use crate::permission::Category;
use crate::tool::{Def, ToolError, ToolOutput, arg_opt_str, arg_str};

pub const ID: &str = "skill";
const DESCRIPTION: &str = include_str!("descriptions/skill.md");

fn present(args: &Value, _cwd: &Path) -> Presentation {
    let name = args.get("name").and_then(Value::as_str).unwrap_or_default();
    Presentation {
        title: format!("Use skill {name}"),
        kind: Kind::Read,
        patterns: vec![name.to_string()],
        ..Presentation::default()
    }
}

/// The tool over the session's skills.
pub fn def(catalog: Arc<RwLock<Catalog>>) -> Def {
    Def {
        id: ID.into(),
        description: DESCRIPTION.into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The skill's name"},
                "arguments": {"type": "string", "description": "Space-separated arguments for the skill ($1, $2, $ARGUMENTS)"}
            },
            "required": ["name"]
        }),
        permission: Some(Category::Read),
        present,
        preview: None,
        execute: Arc::new(move |_ctx, args| {
            let catalog = catalog.clone();
            Box::pin(async move { run(&catalog, &args) })
        }),
    }
}

fn run(catalog: &RwLock<Catalog>, args: &Value) -> Result<ToolOutput, ToolError> {
    let name = arg_str(args, "name")?;
    let arguments = arg_opt_str(args, "arguments")?.unwrap_or_default();
    let skill = {
        let catalog = match catalog.read() {
            Ok(catalog) => catalog,
            Err(poisoned) => poisoned.into_inner(),
        };
        match catalog.skill(name.trim()) {
            Some(skill) => skill.clone(),
            None => {
                let names: Vec<&str> = catalog.skills.iter().map(|s| s.name.as_str()).collect();
                return Err(ToolError::Retry(if names.is_empty() {
                    format!("There is no skill named `{name}`; no skills are available.")
                } else {
                    format!("There is no skill named `{name}`. Available skills: {}.", names.join(", "))
                }));
            }
        }
    };
    let text = skills::activate(&skill, arguments).map_err(ToolError::execution)?;
    Ok(ToolOutput::text(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extensions::{Origin, Scope, Skill};
    use crate::tool::tests::context;

    #[tokio::test]
    async fn a_skill_loads_by_name_and_an_unknown_name_lists_the_skills() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("fix");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("SKILL.md"), "---\nname: fix\ndescription: d\n---\nFix $1.\n").unwrap();
        let skill = Skill {
            name: "fix".into(),
            description: "d".into(),
            path: folder.join("SKILL.md"),
            dir: folder.clone(),
            origin: Origin { scope: Scope::Project, claude: false },
            reach: crate::workspace::project_file::Scope::within(dir.path()),
            warnings: vec![],
        };
        let catalog = Arc::new(RwLock::new(Catalog { skills: vec![skill], ..Catalog::default() }));
        let registry = crate::tool::Registry::default();
        registry.register(def(catalog));
        let ctx = || context(dir.path(), None);
        let outcome = registry.execute(ID, ctx(), json!({"name": "fix", "arguments": "bug-7"})).await;
        assert!(!outcome.is_error);
        assert!(
            outcome.output.starts_with("<skill name=\"fix\">\nFix bug-7.\n\nBase directory for this skill: ")
        );
        let outcome = registry.execute(ID, ctx(), json!({"name": "nope"})).await;
        assert_eq!(
            (outcome.output.as_str(), outcome.is_error),
            ("There is no skill named `nope`. Available skills: fix.", true)
        );
    }
}
