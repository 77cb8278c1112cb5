//! A tool result as the history keeps it: text in which an image travels as a `data:image/…;base64,…` URI standing
//! alone in its paragraph (paragraphs are separated by a blank line). A whole result that is one such URI (the
//! `read` tool on an image) is the simplest case; an MCP result puts its images after its text. Each wire format
//! decides how the parts travel: Anthropic Messages and OpenAI Responses put images inside the tool result, Chat
//! Completions (no images in `tool` messages) attaches them to a user message right after the tool results.
//!
//! Owns the convention (what counts as an image: an `image/` MIME type and base64 data, nothing else). The wire
//! formats own their JSON; the turn owns what a model that cannot see gets instead.

/// One part of a tool result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part<'a> {
    Text(&'a str),
    Image { mime: &'a str, data: &'a str },
}

const SEPARATOR: &str = "\n\n";

fn is_base64(data: &str) -> bool {
    !data.is_empty() && data.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
}

fn is_image_mime(mime: &str) -> bool {
    mime.strip_prefix("image/").is_some_and(|sub| {
        !sub.is_empty() && sub.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'-'))
    })
}

/// `(mime, data)` when `paragraph` is exactly an image data URI.
pub fn image_data_uri(paragraph: &str) -> Option<(&str, &str)> {
    let rest = paragraph.strip_prefix("data:")?;
    let (mime, data) = rest.split_once(";base64,")?;
    (is_image_mime(mime) && is_base64(data)).then_some((mime, data))
}

/// The data URI of an image (what a tool puts in its result to send the model an image).
pub fn data_uri(mime: &str, data: &str) -> String {
    format!("data:{mime};base64,{data}")
}

/// Can `mime` and `data` travel as an image (the checks [`parts`] makes)?
pub fn is_image(mime: &str, data: &str) -> bool {
    is_image_mime(mime) && is_base64(data)
}

/// The result's parts in order: runs of text paragraphs (kept as written) and images.
pub fn parts(content: &str) -> Vec<Part<'_>> {
    if !content.contains("data:image/") {
        return vec![Part::Text(content)];
    }
    let mut parts = Vec::new();
    let mut text_start: Option<usize> = None;
    let mut text_end = 0;
    let mut offset = 0;
    for paragraph in content.split(SEPARATOR) {
        let start = offset;
        offset += paragraph.len() + SEPARATOR.len();
        match image_data_uri(paragraph) {
            Some((mime, data)) => {
                if let Some(from) = text_start.take() {
                    parts.push(Part::Text(&content[from..text_end]));
                }
                parts.push(Part::Image { mime, data });
            }
            None => {
                text_start.get_or_insert(start);
                text_end = start + paragraph.len();
            }
        }
    }
    if let Some(from) = text_start {
        parts.push(Part::Text(&content[from..text_end]));
    }
    parts
}

/// Does the result carry an image?
pub fn has_images(content: &str) -> bool {
    parts(content).iter().any(|p| matches!(p, Part::Image { .. }))
}

/// The result with each image replaced by `note`.
pub fn replace_images(content: &str, note: &str) -> String {
    parts(content)
        .iter()
        .map(|part| match part {
            Part::Text(text) => *text,
            Part::Image { .. } => note,
        })
        .collect::<Vec<_>>()
        .join(SEPARATOR)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_data_uri_is_one_image_and_plain_text_is_one_text() {
        assert_eq!(
            parts("data:image/png;base64,QUJD"),
            vec![Part::Image { mime: "image/png", data: "QUJD" }]
        );
        assert_eq!(parts("just text\n\nmore"), vec![Part::Text("just text\n\nmore")]);
        assert_eq!(parts(""), vec![Part::Text("")]);
    }

    #[test]
    fn images_in_their_own_paragraphs_split_the_text_around_them() {
        let content =
            "a red dot\n\nsecond line\n\ndata:image/png;base64,QUJD\n\ndata:image/jpeg;base64,REVG\n\nafter";
        assert_eq!(
            parts(content),
            vec![
                Part::Text("a red dot\n\nsecond line"),
                Part::Image { mime: "image/png", data: "QUJD" },
                Part::Image { mime: "image/jpeg", data: "REVG" },
                Part::Text("after"),
            ]
        );
        assert_eq!(
            replace_images(content, "[image]"),
            "a red dot\n\nsecond line\n\n[image]\n\n[image]\n\nafter"
        );
        assert!(has_images(content));
    }

    #[test]
    fn data_uris_inside_text_or_with_other_types_or_bad_data_stay_text() {
        for content in [
            "see data:image/png;base64,QUJD here",
            "data:text/plain;base64,QUJD",
            "data:image/png;base64,QU JD",
            "data:image/png;base64,",
            "data:image/;base64,QUJD",
            "data:image/png;base64,QUJD!",
        ] {
            assert_eq!(parts(content), vec![Part::Text(content)], "{content}");
            assert!(!has_images(content));
        }
    }
}
