//! Who may open a WebSocket to `tinycode serve`: the checks of the HTTP upgrade request, answered with an HTTP
//! status and nothing else. In order: the page's `Origin` (none, a loopback origin or one the user allowed, else
//! 403: a web page the user visits must not drive the agent), the token (else 401), and room for one more
//! connection (else 503).
//!
//! Owns the checks of the request; counting connections belongs to the accept loop.

use tokio_tungstenite::tungstenite::handshake::server::{Callback, ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;

use super::token_matches;

/// The hosts of the origins allowed without a flag.
const LOOPBACK_HOSTS: [&str; 3] = ["127.0.0.1", "localhost", "[::1]"];

/// An origin as the user wrote it for `--allow-origin`: `scheme://host[:port]`, compared case-insensitively.
pub fn parse_origin(text: &str) -> Result<String, String> {
    let origin = text.trim().trim_end_matches('/').to_ascii_lowercase();
    let valid = origin.split_once("://").is_some_and(|(scheme, rest)| {
        !scheme.is_empty()
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            && !rest.is_empty()
            && !rest.contains(['/', '?', '#', '@', ' '])
    });
    if !valid {
        return Err(format!(
            "`{text}` is not an origin: write it as scheme://host[:port], e.g. https://example.com"
        ));
    }
    Ok(origin)
}

/// Is `origin` (lower case) `http(s)://` a loopback host, with any port?
fn is_loopback(origin: &str) -> bool {
    let Some(rest) = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")) else {
        return false;
    };
    LOOPBACK_HOSTS.iter().any(|host| {
        rest.strip_prefix(host).is_some_and(|port| {
            port.is_empty()
                || port
                    .strip_prefix(':')
                    .is_some_and(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        })
    })
}

/// May a request carrying `origin` (the header's value, when there is one) connect?
pub fn origin_allowed(origin: Option<&str>, allowed: &[String]) -> bool {
    let Some(origin) = origin else { return true };
    let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
    is_loopback(&origin) || allowed.contains(&origin)
}

/// The token a handshake request presents: the `Authorization: Bearer` header, else `?token=` in the URL.
fn presented(request: &Request) -> Option<String> {
    let header = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(|t| t.trim().to_string());
    header.or_else(|| {
        request.uri().query()?.split('&').find_map(|pair| pair.strip_prefix("token=").map(str::to_string))
    })
}

fn refuse(status: StatusCode, text: &str) -> ErrorResponse {
    let mut response = ErrorResponse::new(Some(text.to_string()));
    *response.status_mut() = status;
    response
}

/// The checks of one upgrade request.
pub struct Gate<'a> {
    pub token: &'a str,
    pub allowed_origins: &'a [String],
    /// `Some(limit)` when the connection limit is reached.
    pub full: Option<usize>,
}

impl Callback for Gate<'_> {
    fn on_request(self, request: &Request, response: Response) -> Result<Response, ErrorResponse> {
        let origin = request.headers().get("origin").map(|v| v.to_str().unwrap_or("(not text)"));
        if !origin_allowed(origin, self.allowed_origins) {
            return Err(refuse(
                StatusCode::FORBIDDEN,
                "this origin may not connect (loopback pages only; more with --allow-origin)",
            ));
        }
        match presented(request) {
            Some(given) if token_matches(self.token, &given) => {}
            Some(_) => return Err(refuse(StatusCode::UNAUTHORIZED, "wrong token")),
            None => {
                return Err(refuse(
                    StatusCode::UNAUTHORIZED,
                    "a token is required: Authorization: Bearer <token>",
                ));
            }
        }
        if let Some(limit) = self.full {
            return Err(refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("too many connections: this server takes {limit} at once (--max-connections)"),
            ));
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_origin_and_loopback_origins_are_allowed_and_every_other_only_when_listed() {
        let none: Vec<String> = Vec::new();
        for ok in [
            None,
            Some("http://127.0.0.1:3000"),
            Some("http://localhost"),
            Some("HTTP://LOCALHOST:8080/"),
            Some("https://[::1]:9"),
        ] {
            assert!(origin_allowed(ok, &none), "{ok:?}");
        }
        for refused in [
            "https://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.evil.example:80",
            "http://127.0.0.1:80@evil.example",
            "http://localhost:",
            "null",
            "file://",
            "",
        ] {
            assert!(!origin_allowed(Some(refused), &none), "{refused}");
        }
        let listed = vec![parse_origin("https://Editor.Example/").unwrap()];
        assert_eq!(listed, ["https://editor.example"]);
        assert!(origin_allowed(Some("https://editor.example"), &listed));
        assert!(!origin_allowed(Some("http://editor.example"), &listed));
        assert!(parse_origin("editor.example").is_err());
        assert!(parse_origin("https://editor.example/path").is_err());
    }
}
