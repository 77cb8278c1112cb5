//! Tool-call ids as each provider accepts them. History crosses providers when the user switches models, and
//! ids from one provider can be refused by another: Mistral wants exactly 9 letters or digits, Anthropic only
//! letters, digits, `_` and `-` (PROVIDERS.md §1.1). Ids are rewritten deterministically, so a call and its
//! result always get the same new id.
//!
//! Owns the id shapes; knows nothing else of the wire formats.

const ALPHANUMERIC: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// A 9-character alphanumeric id, acceptable to every provider (Mistral requires exactly this shape).
pub fn generate() -> String {
    nine_from(uuid::Uuid::new_v4().as_u128())
}

fn nine_from(mut n: u128) -> String {
    (0..9)
        .map(|_| {
            let c = ALPHANUMERIC[(n % ALPHANUMERIC.len() as u128) as usize] as char;
            n /= ALPHANUMERIC.len() as u128;
            c
        })
        .collect()
}

/// Is `id` already in Mistral's shape?
fn mistral_shaped(id: &str) -> bool {
    id.len() == 9 && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// `id` in Mistral's shape: unchanged when it already is, else 9 characters derived from a hash of it.
pub fn for_mistral(id: &str) -> String {
    if mistral_shaped(id) {
        return id.to_string();
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, id.as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest.as_ref()[..16]);
    nine_from(u128::from_le_bytes(bytes))
}

/// `id` with every character Anthropic refuses replaced by `_` (an empty id becomes a generated one).
pub fn for_anthropic(id: &str) -> String {
    if id.is_empty() {
        return format!("toolu_{}", for_mistral("empty"));
    }
    id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mistral_ids_are_nine_alphanumerics_and_stable_for_the_same_input() {
        assert_eq!(for_mistral("abcDEF123"), "abcDEF123");
        let rewritten = for_mistral("call_wteop8bt");
        assert!(mistral_shaped(&rewritten), "{rewritten}");
        assert_eq!(for_mistral("call_wteop8bt"), rewritten);
        assert_ne!(for_mistral("toolu_01A"), rewritten);
        assert!(mistral_shaped(&generate()));
    }

    #[test]
    fn anthropic_ids_keep_letters_digits_underscores_and_dashes() {
        assert_eq!(for_anthropic("call_a-1"), "call_a-1");
        assert_eq!(for_anthropic("fc.1:2/3"), "fc_1_2_3");
        assert!(for_anthropic("").starts_with("toolu_"));
    }
}
