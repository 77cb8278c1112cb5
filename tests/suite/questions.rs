//! The `question` tool through ACP: `elicitation/create` forms (accept, decline, cancel), the permission
//! fallback for choices, the end-turn fallback for free text, and cancelling while a question is open.

use agent_client_protocol::v1::schema as acp;
use serde_json::{Value, json};
use tinycode::bus::Event;

use super::turn::{stop, tool_result};
use crate::support::client::{Answer, Elicit, Harness, Setup};
use crate::support::fake_model::{Reply, answer, calls};

fn ask(question: &str, options: &[&str]) -> Reply {
    ask_as("q1", question, options)
}

fn ask_as(id: &str, question: &str, options: &[&str]) -> Reply {
    let args = if options.is_empty() {
        json!({"question": question})
    } else {
        json!({"question": question, "options": options})
    };
    calls(&[(id, "question", &args.to_string())])
}

fn forms() -> acp::ClientCapabilities {
    acp::ClientCapabilities::new()
        .elicitation(acp::ElicitationCapabilities::new().form(acp::ElicitationFormCapabilities::new()))
}

async fn with_forms(script: Vec<Reply>) -> Harness {
    Setup::new(script).capabilities(forms()).start().await
}

#[tokio::test]
async fn a_free_text_question_becomes_a_form_and_the_answer_reaches_the_model() {
    let h = with_forms(vec![ask("Which branch should I target?", &[]), answer(&["Targeting main."])]).await;
    h.client.log.elicit_answers.lock().unwrap().push_back(Elicit::Accept("main"));
    let mut events = h.bus.subscribe();
    let session = h.session().await;
    h.client.prompt(&session, "open a PR").await.unwrap();

    let form = serde_json::to_value(&h.client.log.elicitations.lock().unwrap()[0]).unwrap();
    assert_eq!(
        form,
        json!({
            "mode": "form",
            "sessionId": session.0.as_ref(),
            "toolCallId": "q1",
            "message": "Which branch should I target?",
            "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string", "title": "Answer"}}, "required": ["answer"]}
        })
    );
    assert_eq!(tool_result(&h.model.messages(1), "q1"), "The user answered: main");
    let mut seen = Vec::new();
    while let Ok(event) = events.try_recv() {
        match event {
            Event::QuestionAsked { question, options, .. } => {
                seen.push(format!("asked {question} {options:?}"))
            }
            Event::QuestionReplied { answer, .. } => seen.push(format!("replied {answer:?}")),
            _ => {}
        }
    }
    assert_eq!(seen, vec!["asked Which branch should I target? []", "replied Some(\"main\")"]);
}

#[tokio::test]
async fn choices_become_an_enum_and_declining_or_closing_the_form_is_told_to_the_model() {
    let h = with_forms(vec![
        ask_as("q1", "Which database?", &["sqlite", "postgres"]),
        answer(&["ok"]),
        ask_as("q2", "Which database?", &["sqlite", "postgres"]),
        answer(&["ok"]),
        ask_as("q3", "Which database?", &["sqlite", "postgres"]),
        answer(&["ok"]),
    ])
    .await;
    h.client.log.elicit_answers.lock().unwrap().extend([
        Elicit::Accept("postgres"),
        Elicit::Decline,
        Elicit::Cancel,
    ]);
    let session = h.session().await;
    for _ in 0..3 {
        h.client.prompt(&session, "set up storage").await.unwrap();
    }
    let form = serde_json::to_value(&h.client.log.elicitations.lock().unwrap()[0]).unwrap();
    assert_eq!(
        form["requestedSchema"]["properties"]["answer"],
        json!({"type": "string", "title": "Answer", "enum": ["sqlite", "postgres"]})
    );
    let results: Vec<String> = [(1, "q1"), (3, "q2"), (5, "q3")]
        .iter()
        .map(|(n, id)| tool_result(&h.model.messages(*n), id))
        .collect();
    assert_eq!(
        results,
        vec![
            "The user answered: postgres",
            "The user declined to answer. Go on with a sensible default and say which, or explain what you need.",
            "The user closed the question without answering. Go on with a sensible default and say which, or explain what you need.",
        ]
    );
}

#[tokio::test]
async fn without_forms_choices_are_asked_as_a_permission_with_one_option_per_choice() {
    let h = Harness::start(vec![
        ask_as("q1", "Which database?", &["sqlite", "postgres"]),
        answer(&["ok"]),
        ask_as("q2", "Which database?", &["sqlite", "postgres"]),
        answer(&["ok"]),
    ])
    .await;
    h.client.answer_permissions(&[Answer::Option("choice_1"), Answer::Option("skip")]);
    let session = h.session().await;
    h.client.prompt(&session, "set up storage").await.unwrap();
    h.client.prompt(&session, "again").await.unwrap();

    let asked = serde_json::to_value(&h.client.log.permission_requests.lock().unwrap()[0]).unwrap();
    assert_eq!(
        asked,
        json!({
            "sessionId": session.0.as_ref(),
            "toolCall": {"toolCallId": "q1", "title": "Which database?", "kind": "other", "status": "pending"},
            "options": [
                {"optionId": "choice_0", "name": "sqlite", "kind": "allow_once"},
                {"optionId": "choice_1", "name": "postgres", "kind": "allow_once"},
                {"optionId": "skip", "name": "Don't answer", "kind": "reject_once"}
            ]
        })
    );
    assert_eq!(tool_result(&h.model.messages(1), "q1"), "The user answered: postgres");
    assert_eq!(
        tool_result(&h.model.messages(3), "q2"),
        "The user closed the question without answering. Go on with a sensible default and say which, or explain what you need."
    );
}

#[tokio::test]
async fn without_forms_a_free_text_question_is_said_and_the_turn_ends_for_the_answer() {
    let h = Harness::start(vec![
        ask("What should the new command be called?", &[]),
        answer(&["Naming it sync."]),
    ])
    .await;
    let session = h.session().await;
    let response = h.client.prompt(&session, "add a command").await.unwrap();
    assert_eq!(stop(&response), json!("end_turn"));
    assert_eq!(h.said(&session), vec!["What should the new command be called?"]);
    assert_eq!(h.model.requests().len(), 1, "the turn ended without asking the model again");

    h.client.prompt(&session, "call it sync").await.unwrap();
    let messages = h.model.messages(1);
    let tail: Vec<Value> = messages[messages.len() - 3..].to_vec();
    assert_eq!(
        tail,
        vec![
            json!({"role": "tool", "tool_call_id": "q1", "content": "This editor cannot show questions, so the question was sent to the user as a message and the turn ends here. Their answer will arrive as their next message."}),
            json!({"role": "assistant", "content": "What should the new command be called?"}),
            json!({"role": "user", "content": "call it sync"}),
        ]
    );
}

#[tokio::test]
async fn cancelling_while_a_question_is_open_ends_the_turn_as_cancelled() {
    let h = Harness::start(vec![ask("Deploy to which region?", &["eu", "us"])]).await;
    h.client.answer_permissions(&[Answer::Hold]);
    let session = h.session().await;
    let turn = h.client.prompt_later(&session, "deploy");
    h.client.wait_log("the open question", |log| !log.held.lock().unwrap().is_empty()).await;
    h.client.cancel(&session);
    assert_eq!(stop(&turn.await.unwrap().unwrap()), json!("cancelled"));
    let last = h.transcript(&session).into_iter().rfind(|u| u["toolCallId"] == "q1").unwrap();
    assert_eq!(last["status"], "failed");
    h.model.assert_done();
}

#[tokio::test]
async fn a_form_the_editor_fails_to_show_falls_back_to_a_message_and_ends_the_turn() {
    let h = with_forms(vec![ask("Which port?", &["8080", "9090"])]).await;
    h.client.log.elicit_answers.lock().unwrap().push_back(Elicit::Fail);
    let session = h.session().await;
    assert_eq!(stop(&h.client.prompt(&session, "serve").await.unwrap()), json!("end_turn"));
    assert_eq!(h.said(&session), vec!["Which port?\n1. 8080\n2. 9090"]);
    h.model.assert_done();
}
