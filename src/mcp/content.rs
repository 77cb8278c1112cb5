//! What an MCP tool result becomes: the model's text (text as is, audio as a one-line note, text resources with
//! their URI, blobs and links as references, structured content as JSON when there is nothing else), the images
//! the model is sent (as data URIs after the text, see `llm::tool_content`; one that is not base64 or is over
//! [`MAX_IMAGE_BYTES`] stays a note), and the user's card (the same text, images as images).
//!
//! Owns that mapping. Truncation happens later (the text only: see `adapter`).

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

use crate::display::Content;
use crate::llm::tool_content;

/// The largest image (decoded) sent to the model; providers refuse larger ones.
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// One tool result, rendered.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// The model's text.
    pub text: String,
    /// The images for the model, as data URIs.
    pub images: Vec<String>,
    /// The card's content.
    pub display: Vec<Content>,
    /// The server marked the result an error.
    pub failed: bool,
}

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

/// The model's text and images and the card's content for one result.
pub fn render(result: &CallToolResult) -> Rendered {
    let mut texts = Vec::new();
    let mut images = Vec::new();
    let mut display = Vec::new();
    for block in &result.content {
        match block {
            ContentBlock::Text(text) => {
                texts.push(text.text.clone());
                display.push(Content::Text(text.text.clone()));
            }
            ContentBlock::Image(image) => {
                let bytes = decoded_len(&image.data);
                if tool_content::is_image(&image.mime_type, &image.data) && bytes <= MAX_IMAGE_BYTES {
                    images.push(tool_content::data_uri(&image.mime_type, &image.data));
                } else {
                    texts.push(format!("[image {}, {bytes} bytes, not sent to the model]", image.mime_type));
                }
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
        && images.is_empty()
        && let Some(structured) = &result.structured_content
    {
        let json = serde_json::to_string_pretty(structured).unwrap_or_default();
        display.push(Content::Text(json.clone()));
        texts.push(json);
    }
    let text = if texts.is_empty() && images.is_empty() {
        "(the tool returned nothing)".to_string()
    } else {
        texts.join("\n\n")
    };
    Rendered { text, images, display, failed: result.is_error == Some(true) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(value: serde_json::Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_images_and_resources_become_text_and_images_for_the_model_and_the_card() {
        let Rendered { text, images, display, failed } = render(&result(json!({
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
            "hello\n\n[resource file:///a.txt]\nA\n\n[resource file:///b.bin: application/zip, 3 bytes of binary data]\n\n[resource link file:///c: c]"
        );
        assert_eq!(images, vec!["data:image/png;base64,iVBORw0KGgo=".to_string()]);
        assert_eq!(display[1], Content::Image { data: "iVBORw0KGgo=".into(), mime_type: "image/png".into() });
        assert_eq!(display[4], Content::Text("[c](file:///c)".into()));
        assert!(!failed);
    }

    #[test]
    fn an_image_that_is_not_base64_stays_a_note_for_the_model() {
        let rendered = render(&result(
            json!({"content": [{"type": "image", "data": "not base64!", "mimeType": "image/png"}]}),
        ));
        assert_eq!(rendered.text, "[image image/png, 8 bytes, not sent to the model]");
        assert!(rendered.images.is_empty());
    }

    #[test]
    fn structured_content_stands_in_for_empty_content_and_errors_are_flagged() {
        let rendered =
            render(&result(json!({"content": [], "structuredContent": {"n": 1}, "isError": true})));
        assert_eq!(rendered.text, "{\n  \"n\": 1\n}");
        assert!(rendered.failed);
        let Rendered { text, display, .. } = render(&result(json!({"content": []})));
        assert_eq!((text.as_str(), display), ("(the tool returned nothing)", vec![]));
    }
}
