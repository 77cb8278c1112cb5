//! Permission rules remembered from "always" answers, per project, so they survive restarts and can be listed
//! and revoked.
//!
//! Owns the `permission_rules` table. The rule semantics belong to `permission`.

use rusqlite::params;

use super::{Store, StoreError};

/// A remembered rule: (permission, pattern, action).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRule {
    pub id: i64,
    pub permission: String,
    pub pattern: String,
    pub action: String,
}

impl Store {
    /// Remember a rule for `project`; the same (permission, pattern) is replaced and moves to the end.
    pub async fn add_rule(
        &self,
        project: &str,
        permission: &str,
        pattern: &str,
        action: &str,
        at: i64,
    ) -> Result<(), StoreError> {
        let values = (project.to_string(), permission.to_string(), pattern.to_string(), action.to_string());
        self.call(move |c| {
            let tx = c.transaction()?;
            tx.execute(
                "DELETE FROM permission_rules WHERE project = ?1 AND permission = ?2 AND pattern = ?3",
                params![values.0, values.1, values.2],
            )?;
            tx.execute(
                "INSERT INTO permission_rules (project, permission, pattern, action, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![values.0, values.1, values.2, values.3, at],
            )?;
            tx.commit()
        })
        .await
    }

    /// The project's rules, in the order they were remembered.
    pub async fn rules(&self, project: &str) -> Result<Vec<StoredRule>, StoreError> {
        let project = project.to_string();
        self.call(move |c| {
            let mut statement = c.prepare_cached(
                "SELECT id, permission, pattern, action FROM permission_rules WHERE project = ?1 ORDER BY id",
            )?;
            let rules = statement
                .query_map([project], |r| {
                    Ok(StoredRule {
                        id: r.get(0)?,
                        permission: r.get(1)?,
                        pattern: r.get(2)?,
                        action: r.get(3)?,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rules)
        })
        .await
    }

    /// Forget the project's rule for (permission, pattern). Returns whether there was one.
    pub async fn remove_rule(
        &self,
        project: &str,
        permission: &str,
        pattern: &str,
    ) -> Result<bool, StoreError> {
        let values = (project.to_string(), permission.to_string(), pattern.to_string());
        self.call(move |c| {
            c.execute(
                "DELETE FROM permission_rules WHERE project = ?1 AND permission = ?2 AND pattern = ?3",
                params![values.0, values.1, values.2],
            )
            .map(|n| n > 0)
        })
        .await
    }

    pub async fn clear_rules(&self, project: &str) -> Result<usize, StoreError> {
        let project = project.to_string();
        self.call(move |c| c.execute("DELETE FROM permission_rules WHERE project = ?1", [project])).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn rules_are_kept_per_project_and_can_be_revoked_or_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        store.add_rule("/p", "shell", "git commit", "allow", 1).await.unwrap();
        store.add_rule("/p", "edit", "/p/src/**", "allow", 2).await.unwrap();
        store.add_rule("/p", "shell", "git commit", "deny", 3).await.unwrap();
        store.add_rule("/q", "shell", "ls", "allow", 4).await.unwrap();
        let rules = store.rules("/p").await.unwrap();
        let shown: Vec<(&str, &str, &str)> =
            rules.iter().map(|r| (r.permission.as_str(), r.pattern.as_str(), r.action.as_str())).collect();
        assert_eq!(shown, vec![("edit", "/p/src/**", "allow"), ("shell", "git commit", "deny")]);
        assert!(store.remove_rule("/p", "edit", "/p/src/**").await.unwrap());
        assert!(!store.remove_rule("/p", "edit", "/p/src/**").await.unwrap());
        assert!(
            !store.remove_rule("/q", "shell", "git commit").await.unwrap(),
            "another project's rule is not touched"
        );
        assert_eq!(store.clear_rules("/p").await.unwrap(), 1);
        assert_eq!(store.rules("/q").await.unwrap().len(), 1);
    }
}
