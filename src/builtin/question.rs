//! `question` (seed 000 §8.3): put a question to the user and wait for the answer or the turn's cancellation.
//! Publishes `question.asked` and `question.replied`. How the question reaches the user is the business of
//! `control::Asker`; when the editor has no way to ask, the question goes out as a message and the turn ends,
//! so the answer arrives as the next prompt.
//!
//! Owns the tool. The asking belongs to the `acp` layer.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::bus::Event;
use crate::control::{Answer, Question};
use crate::display::{Content, Kind, Presentation};
use crate::permission::Category;
use crate::tool::{Context, Def, ToolError, ToolOutput};

pub const ID: &str = "question";

pub fn def() -> Def {
    Def {
        id: ID.into(),
        description: include_str!("descriptions/question.md").into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "question": {"type": "string", "description": "The question, with the context needed to answer it"},
                "options": {"type": "array", "items": {"type": "string"}, "description": "Choices, for a multiple-choice question"}
            },
            "required": ["question"]
        }),
        permission: Some(Category::Read),
        present,
        preview: None,
        execute: Arc::new(|ctx, args| Box::pin(execute(ctx, args))),
    }
}

fn present(args: &Value, _cwd: &Path) -> Presentation {
    let question = args.get("question").and_then(Value::as_str).unwrap_or("").trim();
    let line = question.lines().next().unwrap_or("");
    let short: String = line.chars().take(80).collect();
    let title =
        if short.len() < question.len() { format!("Ask: {short}…") } else { format!("Ask: {short}") };
    Presentation { title, kind: Kind::Other, ..Presentation::default() }
}

fn parse(ctx: &Context, args: &Value) -> Result<Question, ToolError> {
    let question = args.get("question").and_then(Value::as_str).map(str::trim).unwrap_or("");
    if question.is_empty() {
        return Err(ToolError::retry("question must be a non-empty string"));
    }
    let mut options: Vec<String> = Vec::new();
    for option in args.get("options").and_then(Value::as_array).into_iter().flatten() {
        let Some(text) = option.as_str().map(str::trim).filter(|t| !t.is_empty()) else {
            return Err(ToolError::retry("options must be non-empty strings"));
        };
        if !options.iter().any(|o| o == text) {
            options.push(text.to_string());
        }
    }
    Ok(Question { call_id: ctx.call_id.clone(), question: question.to_string(), options })
}

/// The question as a message, for editors that cannot ask it.
fn as_message(question: &Question) -> String {
    let mut text = question.question.clone();
    for (n, option) in question.options.iter().enumerate() {
        text.push_str(&format!("\n{}. {option}", n + 1));
    }
    text
}

async fn execute(ctx: Context, args: Value) -> Result<ToolOutput, ToolError> {
    let question = parse(&ctx, &args)?;
    ctx.bus.publish(Event::QuestionAsked {
        session_id: ctx.session_id.clone(),
        call_id: ctx.call_id.clone(),
        question: question.question.clone(),
        options: question.options.clone(),
    });
    let answer = match ctx.control.asker() {
        Some(asker) => tokio::select! {
            answer = asker.ask(&question) => answer,
            () = ctx.cancel.cancelled() => Answer::Cancelled,
        },
        None => Answer::Unavailable,
    };
    let replied = match &answer {
        Answer::Text(text) => Some(text.clone()),
        _ => None,
    };
    ctx.bus.publish(Event::QuestionReplied {
        session_id: ctx.session_id.clone(),
        call_id: ctx.call_id.clone(),
        answer: replied,
    });
    let card = |answer: &str| vec![Content::Text(format!("{}\n\n→ {answer}", question.question))];
    let output = match answer {
        Answer::Text(text) => ToolOutput {
            display: card(&text),
            metadata: json!({"answer": text}),
            ..ToolOutput::text(format!("The user answered: {text}"))
        },
        Answer::Declined => ToolOutput {
            display: card("(declined)"),
            ..ToolOutput::text(
                "The user declined to answer. Go on with a sensible default and say which, or explain what you need.",
            )
        },
        Answer::Dismissed => ToolOutput {
            display: card("(closed without an answer)"),
            ..ToolOutput::text(
                "The user closed the question without answering. Go on with a sensible default and say which, or explain what you need.",
            )
        },
        Answer::Cancelled => return Err(ToolError::Cancelled),
        Answer::Unavailable => ToolOutput {
            end_turn: Some(as_message(&question)),
            ..ToolOutput::text(
                "This editor cannot show questions, so the question was sent to the user as a message and the turn ends here. Their answer will arrive as their next message.",
            )
        },
    };
    Ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> Context {
        crate::tool::tests::context(std::path::Path::new("/w"), None)
    }

    #[test]
    fn bad_questions_are_explained_and_repeated_choices_collapse() {
        let ctx = context();
        assert_eq!(
            parse(&ctx, &json!({"question": "  "})).unwrap_err(),
            ToolError::retry("question must be a non-empty string")
        );
        assert_eq!(
            parse(&ctx, &json!({})).unwrap_err(),
            ToolError::retry("question must be a non-empty string")
        );
        assert_eq!(
            parse(&ctx, &json!({"question": "Which?", "options": ["a", 3]})).unwrap_err(),
            ToolError::retry("options must be non-empty strings")
        );
        let question = parse(&ctx, &json!({"question": " Which? ", "options": ["a", " b ", "a"]})).unwrap();
        assert_eq!(
            question,
            Question {
                call_id: "c".into(),
                question: "Which?".into(),
                options: vec!["a".into(), "b".into()]
            }
        );
        assert_eq!(as_message(&question), "Which?\n1. a\n2. b");
    }
}
