//! The text encodings of files the tools read and write: UTF-8 (a byte-order mark is kept as the character
//! U+FEFF at the start of the text, so it survives edits) and UTF-16, little or big endian, recognised by its
//! byte-order mark and written back in the same encoding. Text without one of these marks is UTF-8 (invalid
//! bytes are replaced when shown).
//!
//! Owns decoding and encoding. Must not open files.

/// How a file's text is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoding {
    #[default]
    Utf8,
    Utf16Le,
    Utf16Be,
}

const BOM: char = '\u{feff}';

impl Encoding {
    /// The encoding the first bytes of a file show. UTF-32's mark (`FF FE 00 00`) is not taken for UTF-16.
    pub fn detect(bytes: &[u8]) -> Encoding {
        match bytes {
            [0xFF, 0xFE, 0, 0, ..] => Encoding::Utf8,
            [0xFF, 0xFE, ..] => Encoding::Utf16Le,
            [0xFE, 0xFF, ..] => Encoding::Utf16Be,
            _ => Encoding::Utf8,
        }
    }

    /// A short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Utf8 => "UTF-8",
            Encoding::Utf16Le => "UTF-16LE",
            Encoding::Utf16Be => "UTF-16BE",
        }
    }
}

/// The text of `bytes` and the encoding it was stored in. A UTF-16 text keeps its mark as a leading U+FEFF.
pub fn decode(bytes: &[u8]) -> (String, Encoding) {
    let encoding = Encoding::detect(bytes);
    let text = match encoding {
        Encoding::Utf8 => String::from_utf8_lossy(bytes).into_owned(),
        Encoding::Utf16Le | Encoding::Utf16Be => {
            let units = bytes.chunks(2).map(|pair| match (encoding, pair) {
                (Encoding::Utf16Le, [lo, hi]) => u16::from_le_bytes([*lo, *hi]),
                (_, [hi, lo]) => u16::from_be_bytes([*hi, *lo]),
                // An odd trailing byte cannot be a character.
                _ => 0xFFFD,
            });
            char::decode_utf16(units).map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER)).collect()
        }
    };
    (text, encoding)
}

/// [`decode`] taking the bytes: valid UTF-8 becomes the text without a copy.
pub fn decode_owned(bytes: Vec<u8>) -> (String, Encoding) {
    match Encoding::detect(&bytes) {
        Encoding::Utf8 => match String::from_utf8(bytes) {
            Ok(text) => (text, Encoding::Utf8),
            Err(e) => (String::from_utf8_lossy(e.as_bytes()).into_owned(), Encoding::Utf8),
        },
        _ => decode(&bytes),
    }
}

/// `text` as bytes in `encoding`. A UTF-16 file always starts with its mark, so it is recognised next time.
pub fn encode(text: &str, encoding: Encoding) -> Vec<u8> {
    let units = |text: &str| -> Vec<u16> {
        let body = text.strip_prefix(BOM).unwrap_or(text);
        std::iter::once(BOM as u16).chain(body.encode_utf16()).collect()
    };
    match encoding {
        Encoding::Utf8 => text.as_bytes().to_vec(),
        Encoding::Utf16Le => units(text).into_iter().flat_map(u16::to_le_bytes).collect(),
        Encoding::Utf16Be => units(text).into_iter().flat_map(u16::to_be_bytes).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_with_a_mark_round_trips_in_both_byte_orders() {
        let text = "\u{feff}héllo\r\nwörld 🦀\n";
        for encoding in [Encoding::Utf16Le, Encoding::Utf16Be] {
            let bytes = encode(text, encoding);
            assert_eq!(Encoding::detect(&bytes), encoding);
            assert_eq!(decode(&bytes), (text.to_string(), encoding));
        }
        assert_eq!(encode("ab", Encoding::Utf16Le), vec![0xFF, 0xFE, b'a', 0, b'b', 0], "the mark is added");
        assert_eq!(encode("ab", Encoding::Utf16Be), vec![0xFE, 0xFF, 0, b'a', 0, b'b']);
    }

    #[test]
    fn utf8_stays_utf8_and_utf32_is_not_taken_for_utf16() {
        assert_eq!(decode("\u{feff}x".as_bytes()), ("\u{feff}x".to_string(), Encoding::Utf8));
        assert_eq!(Encoding::detect(&[0xFF, 0xFE, 0, 0, b'a', 0, 0, 0]), Encoding::Utf8);
        assert_eq!(encode("x", Encoding::Utf8), b"x".to_vec());
    }

    #[test]
    fn decoding_owned_bytes_gives_what_decoding_borrowed_bytes_gives() {
        let samples: [&[u8]; 4] = [
            b"plain\n",
            b"bad \xff\xfe bytes \xe2\x82",
            &[0xFF, 0xFE, b'a', 0],
            &[0xFE, 0xFF, 0, b'a', 0x41],
        ];
        for bytes in samples {
            assert_eq!(decode_owned(bytes.to_vec()), decode(bytes));
        }
    }

    #[test]
    fn broken_utf16_is_replaced_not_refused() {
        // A lone high surrogate, then an odd trailing byte.
        let bytes = [0xFF, 0xFE, 0x3D, 0xD8, b'a', 0, 0x41];
        assert_eq!(decode(&bytes).0, "\u{feff}\u{fffd}a\u{fffd}");
    }
}
