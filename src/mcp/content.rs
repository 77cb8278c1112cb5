//! What an MCP tool result becomes: the model's text (text as is, images and audio as a one-line note, text
//! resources with their URI, blobs and links as references, structured content as JSON when there is nothing
//! else) and the user's card (the same text, images as images).
//!
//! Owns that mapping. Truncation happens later, in the tool framework.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

use crate::display::Content;

/// Base64 text's decoded size.
fn decoded_len(base64: &str) -> usize {
    base64.trim_end_matches('=').len() * 3 / 4
}

/// A resource's contents as text for the model.
pub fn resource_text(resource: &ResourceContents) -> String {
    match resource {
        ResourceContents::TextResourceContents { uri, text, .. } => format!("[resource {uri}]\n{text}"),
        ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => format!(
            "[resource {uri}: {}, {} bytes of binary data]",
            mime_type.as_deref().unwrap_or("application/octet-stream"),
            decoded_len(blob)
        ),
        _ => "[resource]".into(),
    }
}

/// The model's text and the card's content for one result; `true` when the server marked it an error.
pub fn render(result: &CallToolResult) -> (String, Vec<Content>, bool) {
    let mut texts = Vec::new();
    let mut display = Vec::new();
    for block in &result.content {
        match block {
            ContentBlock::Text(text) => {
                texts.push(text.text.clone());
                display.push(Content::Text(text.text.clone()));
            }
            ContentBlock::Image(image) => {
                texts.push(format!("[image {}, {} bytes]", image.mime_type, decoded_len(&image.data)));
                display.push(Content::Image { data: image.data.clone(), mime_type: image.mime_type.clone() });
            }
            ContentBlock::Audio(audio) => {
                let note = format!("[audio {}, {} bytes]", audio.mime_type, decoded_len(&audio.data));
                display.push(Content::Text(note.clone()));
                texts.push(note);
            }
            ContentBlock::Resource(resource) => {
                let text = resource_text(&resource.resource);
                display.push(Content::Text(text.clone()));
                texts.push(text);
            }
            ContentBlock::ResourceLink(link) => {
                let note = format!("[resource link {}: {}]", link.uri, link.name);
                display.push(Content::Text(format!("[{}]({})", link.name, link.uri)));
                texts.push(note);
            }
            _ => texts.push("[content of a kind tinycode does not know]".into()),
        }
    }
    if texts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        let json = serde_json::to_string_pretty(structured).unwrap_or_default();
        display.push(Content::Text(json.clone()));
        texts.push(json);
    }
    let text = if texts.is_empty() { "(the tool returned nothing)".to_string() } else { texts.join("\n\n") };
    (text, display, result.is_error == Some(true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(value: serde_json::Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_images_and_resources_become_text_for_the_model_and_images_for_the_card() {
        let (text, display, error) = render(&result(json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "A"}},
                {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAAA", "mimeType": "application/zip"}},
                {"type": "resource_link", "uri": "file:///c", "name": "c"}
            ]
        })));
        assert_eq!(
            text,
            "hello\n\n[image image/png, 8 bytes]\n\n[resource file:///a.txt]\nA\n\n[resource file:///b.bin: application/zip, 3 bytes of binary data]\n\n[resource link file:///c: c]"
        );
        assert_eq!(display[1], Content::Image { data: "iVBORw0KGgo=".into(), mime_type: "image/png".into() });
        assert_eq!(display[4], Content::Text("[c](file:///c)".into()));
        assert!(!error);
    }

    #[test]
    fn structured_content_stands_in_for_empty_content_and_errors_are_flagged() {
        let (text, _, error) =
            render(&result(json!({"content": [], "structuredContent": {"n": 1}, "isError": true})));
        assert_eq!(text, "{\n  \"n\": 1\n}");
        assert!(error);
        let (text, display, _) = render(&result(json!({"content": []})));
        assert_eq!((text.as_str(), display), ("(the tool returned nothing)", vec![]));
    }
}
