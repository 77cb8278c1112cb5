//! Tools that exist only in tests.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;
use tinycode::display::{Kind, Presentation};
use tinycode::permission::Category;
use tinycode::tool::{Def, Registry, ToolError};

/// The built-ins plus `block`, which runs until the turn is cancelled and then sets `saw_cancel`.
pub fn with_blocking_tool(saw_cancel: Arc<AtomicBool>) -> Registry {
    let registry = tinycode::builtin::registry();
    registry.register(Def {
        id: "block".into(),
        description: "Waits until cancelled.".into(),
        parameters: json!({"type": "object", "properties": {}}),
        permission: Some(Category::Read),
        present: |_, _| Presentation {
            title: "Block until cancelled".into(),
            kind: Kind::Other,
            ..Presentation::default()
        },
        preview: None,
        execute: Arc::new(move |ctx, _args| {
            let saw_cancel = saw_cancel.clone();
            Box::pin(async move {
                ctx.cancel.cancelled().await;
                saw_cancel.store(true, Ordering::SeqCst);
                Err(ToolError::Cancelled)
            })
        }),
    });
    registry
}

/// The built-ins plus `mark`, an `edit`-category tool that changes nothing and reports which path it "marked".
pub fn with_edit_tool() -> Registry {
    let registry = tinycode::builtin::registry();
    registry.register(Def {
        id: "mark".into(),
        description: "Marks a path.".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        permission: Some(Category::Edit),
        present: |args, _| {
            let path = args["path"].as_str().unwrap_or("?").to_string();
            Presentation {
                title: format!("Mark {path}"),
                kind: Kind::Edit,
                patterns: vec![path.clone()],
                content: vec![tinycode::display::Content::Text(format!("will mark {path}"))],
                ..Presentation::default()
            }
        },
        preview: None,
        execute: Arc::new(|_ctx, args| Box::pin(async move { Ok(tinycode::tool::ToolOutput::text(format!("marked {}", args["path"].as_str().unwrap_or("?")))) })),
    });
    registry
}

/// The built-ins plus `gate`, a read-category tool that waits for one permit of `gate` (the test opens it).
pub fn with_gate_tool(gate: Arc<tokio::sync::Semaphore>) -> Registry {
    let registry = tinycode::builtin::registry();
    registry.register(Def {
        id: "gate".into(),
        description: "Waits until the test lets it through.".into(),
        parameters: json!({"type": "object", "properties": {}}),
        permission: Some(Category::Read),
        present: |_, _| Presentation {
            title: "Wait at the gate".into(),
            kind: Kind::Other,
            ..Presentation::default()
        },
        preview: None,
        execute: Arc::new(move |ctx, _args| {
            let gate = gate.clone();
            Box::pin(async move {
                tokio::select! {
                    permit = gate.acquire() => {
                        permit.unwrap().forget();
                        Ok(tinycode::tool::ToolOutput::text("through the gate"))
                    }
                    () = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
                }
            })
        }),
    });
    registry
}
