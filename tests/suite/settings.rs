//! The mode, model and reasoning pickers through ACP: round trips, persistence across a restart, the provider's
//! model list (arriving late, or failing), and option updates the agent sends on its own.

use agent_client_protocol::v1::schema as acp;
use serde_json::{Value, json};
use tinycode::bus::Event;

use crate::support::client::{Harness, PATIENCE, Setup, TestClient};
use crate::support::fake_model::answer;

fn code(error: &agent_client_protocol::Error) -> i64 {
    serde_json::to_value(error.code).unwrap().as_i64().unwrap()
}

fn mode_option(current: &str) -> Value {
    let modes = [
        ("build", "Build", "Reads freely; asks before edits and commands"),
        ("plan", "Plan", "Reads and plans; never edits files or runs commands that change anything"),
        ("accept-edits", "Accept edits", "Edits without asking; still asks before commands"),
        ("yolo", "Yolo", "Does everything without asking, except commands touching secret files"),
    ];
    let options: Vec<Value> = modes
        .iter()
        .map(|(id, name, what)| json!({"value": id, "name": name, "description": what}))
        .collect();
    json!({"id": "mode", "name": "Mode", "description": "What the agent may do without asking", "category": "mode", "type": "select", "currentValue": current, "options": options})
}

fn model_option(current: &str, models: &[&str]) -> Value {
    let options: Vec<Value> = models.iter().map(|m| json!({"value": m, "name": m})).collect();
    json!({"id": "model", "name": "Model", "description": "The model answering in this session", "category": "model", "type": "select", "currentValue": current, "options": options})
}

fn reasoning_option(current: &str) -> Value {
    let options: Vec<Value> =
        ["low", "medium", "high"].iter().map(|l| json!({"value": l, "name": l})).collect();
    json!({"id": "thought_level", "name": "Reasoning", "description": "How much the model thinks before answering", "category": "thought_level", "type": "select", "currentValue": current, "options": options})
}

async fn set(client: &TestClient, session: &acp::SessionId, option: &str, value: &str) -> Result<Value, i64> {
    let request = acp::SetSessionConfigOptionRequest::new(
        session.clone(),
        option.to_string(),
        acp::SessionConfigOptionValue::value_id(value.to_string()),
    );
    match client.call(request).await {
        Ok(response) => Ok(serde_json::to_value(response.config_options).unwrap()),
        Err(e) => Err(code(&e)),
    }
}

/// Wait for the provider's model list to have been fetched (or to have failed).
async fn models_listed(events: &mut tokio::sync::broadcast::Receiver<Event>) -> Option<Vec<String>> {
    let wait = async {
        loop {
            if let Ok(Event::ModelsListed { models, .. }) = events.recv().await {
                return models;
            }
        }
    };
    tokio::time::timeout(PATIENCE, wait).await.expect("the model list was never fetched")
}

fn of_kind(client: &TestClient, session: &acp::SessionId, kind: &str) -> Vec<Value> {
    client.updates(session).into_iter().filter(|u| u["sessionUpdate"] == kind).collect()
}

#[tokio::test]
async fn choosing_a_model_and_a_mode_round_trips_and_survives_a_restart() {
    let mut h = Harness::start(vec![answer(&["ok"])]).await;
    let mut events = h.bus.subscribe();
    let session = h.session().await;
    assert_eq!(models_listed(&mut events).await, Some(vec!["fake-model".into(), "fake-model-large".into()]));

    let options = set(&h.client, &session, "model", "fake-model-large").await.unwrap();
    let models = ["fake-model", "fake-model-large"];
    assert_eq!(options, json!([mode_option("build"), model_option("fake-model-large", &models)]));
    let options = set(&h.client, &session, "mode", "accept-edits").await.unwrap();
    assert_eq!(options, json!([mode_option("accept-edits"), model_option("fake-model-large", &models)]));
    assert_eq!(
        of_kind(&h.client, &session, "current_mode_update"),
        vec![json!({"sessionUpdate": "current_mode_update", "currentModeId": "accept-edits"})],
        "the mode picker follows a mode chosen through the options"
    );
    h.client.call(acp::SetSessionModeRequest::new(session.clone(), "plan")).await.unwrap();
    let echoed = of_kind(&h.client, &session, "config_option_update");
    assert_eq!(
        echoed.last().unwrap(),
        &json!({"sessionUpdate": "config_option_update", "configOptions": [mode_option("plan"), model_option("fake-model-large", &models)]}),
        "the options follow a mode chosen through the legacy mode picker"
    );

    h.client.prompt(&session, "hi").await.unwrap();
    assert_eq!(h.model.requests()[0].body["model"], "fake-model-large");

    h.restart().await;
    let loaded = h.client.call(acp::LoadSessionRequest::new(session.clone(), h.cwd.clone())).await.unwrap();
    assert_eq!(loaded.modes.unwrap().current_mode_id.0.as_ref(), "plan");
    let options = serde_json::to_value(loaded.config_options.unwrap()).unwrap();
    assert_eq!(options[0]["currentValue"], "plan");
    assert_eq!(options[1]["currentValue"], "fake-model-large");
}

#[tokio::test]
async fn bad_choices_are_invalid_params_and_change_nothing() {
    let h = Harness::start(vec![]).await;
    let session = h.session().await;
    assert_eq!(set(&h.client, &session, "mode", "reckless").await, Err(-32602));
    assert_eq!(set(&h.client, &session, "colour", "blue").await, Err(-32602));
    assert_eq!(set(&h.client, &session, "model", " ").await, Err(-32602));
    assert_eq!(
        set(&h.client, &session, "thought_level", "high").await,
        Err(-32602),
        "fake-model does not reason"
    );
    let error =
        h.client.call(acp::SetSessionModeRequest::new(session.clone(), "reckless")).await.unwrap_err();
    assert_eq!((code(&error), error.message.as_str()), (-32602, "unknown mode \"reckless\""));
    let options = set(&h.client, &session, "mode", "build").await.unwrap();
    assert_eq!(options[0]["currentValue"], "build");
    assert_eq!(options[1]["currentValue"], "fake-model");
}

#[tokio::test]
async fn a_reasoning_model_offers_a_reasoning_level_that_reaches_the_provider() {
    let h = Harness::start(vec![answer(&["thought hard"])]).await;
    h.model.set_models(Some(vec!["fake-model".into(), "o4-mini".into()]));
    let session = h.session().await;
    let options = set(&h.client, &session, "model", "o4-mini").await.unwrap();
    assert_eq!(options.as_array().unwrap().last().unwrap(), &reasoning_option("medium"));
    let options = set(&h.client, &session, "thought_level", "high").await.unwrap();
    assert_eq!(options[2], reasoning_option("high"));
    h.client.prompt(&session, "think").await.unwrap();
    let body = &h.model.requests()[0].body;
    assert_eq!((&body["model"], &body["reasoning_effort"]), (&json!("o4-mini"), &json!("high")));
    let options = set(&h.client, &session, "model", "fake-model").await.unwrap();
    assert_eq!(options.as_array().unwrap().len(), 2, "no reasoning option for a model that does not reason");
}

#[tokio::test]
async fn the_picker_offers_the_configured_models_when_the_provider_cannot_list_them_and_grows_when_it_can() {
    let h = Setup::new(vec![]).config("models = [\"team-model\"]").start().await;
    h.model.set_models(None);
    let mut events = h.bus.subscribe();
    let first = h.session().await;
    assert_eq!(models_listed(&mut events).await, None);
    let options = set(&h.client, &first, "mode", "build").await.unwrap();
    assert_eq!(options[1], model_option("fake-model", &["fake-model", "team-model"]));
    assert_eq!(of_kind(&h.client, &first, "config_option_update"), Vec::<Value>::new());

    // The next session tries again; this time the provider answers and every open picker grows.
    h.model.set_models(Some(vec!["fake-model".into(), "new-model".into()]));
    let second = h.session().await;
    assert_eq!(models_listed(&mut events).await, Some(vec!["fake-model".into(), "new-model".into()]));
    let grown = model_option("fake-model", &["fake-model", "team-model", "new-model"]);
    let expected =
        json!({"sessionUpdate": "config_option_update", "configOptions": [mode_option("build"), grown]});
    h.client
        .wait_for("the grown model list", |all| {
            all.iter().any(|n| n["sessionId"] == first.0.as_ref() && n["update"] == expected)
        })
        .await;
    let options = set(&h.client, &second, "mode", "build").await.unwrap();
    assert_eq!(options[1], expected["configOptions"][1]);
    assert_eq!(h.model.model_listings(), 2);
}
