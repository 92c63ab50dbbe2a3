//! How an upload's bytes are kept on disk: as they came, or compressed with zstd when
//! they are not compressed already. The rules only; the storage does the work.

use serde::Serialize;

/// How a blob's bytes are stored. Its name (the sha256) is always that of the original
/// bytes, whichever the encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BlobEncoding {
    /// The bytes as uploaded (files already compressed, and every blob stored before
    /// compression was introduced).
    Identity,
    /// One zstd stream that decompresses to the bytes as uploaded.
    Zstd,
}

impl BlobEncoding {
    /// The name kept in the database.
    pub fn slug(self) -> &'static str {
        match self {
            BlobEncoding::Identity => "identity",
            BlobEncoding::Zstd => "zstd",
        }
    }

    /// Reads a stored name back; anything else is refused with what was found.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "identity" => Ok(BlobEncoding::Identity),
            "zstd" => Ok(BlobEncoding::Zstd),
            other => Err(format!(
                "unknown blob encoding {other:?} (expected identity or zstd)"
            )),
        }
    }

    /// The content's other way of being stored.
    pub fn other(self) -> Self {
        match self {
            BlobEncoding::Identity => BlobEncoding::Zstd,
            BlobEncoding::Zstd => BlobEncoding::Identity,
        }
    }

    /// The ending of the stored object's name: a zstd blob and an identity blob of the
    /// same content can never be taken for one another.
    pub fn suffix(self) -> &'static str {
        match self {
            BlobEncoding::Identity => "",
            BlobEncoding::Zstd => ".zst",
        }
    }

    /// The encoding a stored object's file name (`<sha256>` or `<sha256>.zst`) says, with
    /// the hash; `None` for a name that is neither.
    pub fn from_file_name(name: &str) -> Option<(&str, BlobEncoding)> {
        let (sha, encoding) = match name.strip_suffix(BlobEncoding::Zstd.suffix()) {
            Some(sha) => (sha, BlobEncoding::Zstd),
            None => (name, BlobEncoding::Identity),
        };
        let hex = sha.len() == 64 && sha.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        hex.then_some((sha, encoding))
    }
}

/// Leading bytes of formats that are compressed already: compressing them again costs
/// time and saves next to nothing, so they are stored as they came.
const COMPRESSED_MAGIC: &[&[u8]] = &[
    &[0x1f, 0x8b],                         // gzip
    &[0x28, 0xb5, 0x2f, 0xfd],             // zstd
    b"PK\x03\x04",                         // zip (and the formats built on it)
    b"PK\x05\x06",                         // an empty zip
    b"PK\x07\x08",                         // a spanned zip
    &[0xfd, b'7', b'z', b'X', b'Z', 0x00], // xz
    b"BZh",                                // bzip2
    &[0x04, 0x22, 0x4d, 0x18],             // lz4 frame
    &[b'7', b'z', 0xbc, 0xaf, 0x27, 0x1c], // 7-zip
    &[0x5d, 0x00, 0x00],                   // lzma (alone)
];

/// Whether the upload's first bytes name a compressed format.
pub fn is_compressed(head: &[u8]) -> bool {
    COMPRESSED_MAGIC.iter().any(|magic| head.starts_with(magic))
}

/// How to store an upload whose first bytes are `head`: zstd unless it is compressed
/// already. An empty upload is kept as it is (there is nothing to compress).
pub fn encoding_for(head: &[u8]) -> BlobEncoding {
    if head.is_empty() || is_compressed(head) {
        BlobEncoding::Identity
    } else {
        BlobEncoding::Zstd
    }
}

/// The zstd level uploads are compressed at: level 1 keeps up with a fast network on one
/// core (hundreds of MB/s on JSON traces) and still takes a trace to about a tenth.
pub const ZSTD_LEVEL: i32 = 1;

/// What the disk holds for an artifact, as its page says it: `None` for a blob stored as
/// uploaded (the size says it all), else e.g. "stored as zstd, 1.2 MB on disk (8% of
/// the original)".
pub fn stored_note(encoding: BlobEncoding, original: u64, stored: u64) -> Option<String> {
    match encoding {
        BlobEncoding::Identity => None,
        BlobEncoding::Zstd => {
            let size = crate::fmt::bytes(stored as f64, crate::fmt::ByteStyle::Size);
            let share = if original == 0 {
                100.0
            } else {
                stored as f64 * 100.0 / original as f64
            };
            // Below 1 % one decimal says more than "0 %".
            let share = if share < 1.0 {
                format!("{share:.1}")
            } else {
                format!("{share:.0}")
            };
            Some(format!(
                "stored as zstd, {size} on disk ({share}% of the original)"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_formats_are_stored_as_they_came_and_text_is_compressed() {
        assert_eq!(encoding_for(&[0x1f, 0x8b, 8, 0]), BlobEncoding::Identity);
        assert_eq!(
            encoding_for(&[0x28, 0xb5, 0x2f, 0xfd, 0]),
            BlobEncoding::Identity
        );
        assert_eq!(encoding_for(b"PK\x03\x04rest"), BlobEncoding::Identity);
        assert_eq!(encoding_for(b"BZh91AY"), BlobEncoding::Identity);
        assert_eq!(encoding_for(b""), BlobEncoding::Identity);
        assert_eq!(encoding_for(b"{\"traceEvents\": ["), BlobEncoding::Zstd);
        assert_eq!(encoding_for(b"P"), BlobEncoding::Zstd);
        assert_eq!(encoding_for(&[0x1f]), BlobEncoding::Zstd);
    }

    #[test]
    fn encodings_round_trip_through_their_names() {
        for e in [BlobEncoding::Identity, BlobEncoding::Zstd] {
            assert_eq!(BlobEncoding::parse(e.slug()), Ok(e));
        }
        assert!(BlobEncoding::parse("gzip")
            .unwrap_err()
            .contains("\"gzip\""));
        let sha = "ab".repeat(32);
        assert_eq!(
            BlobEncoding::from_file_name(&format!("{sha}.zst")),
            Some((sha.as_str(), BlobEncoding::Zstd))
        );
        assert_eq!(
            BlobEncoding::from_file_name(&sha),
            Some((sha.as_str(), BlobEncoding::Identity))
        );
        assert_eq!(BlobEncoding::from_file_name("abc.zst"), None);
        assert_eq!(BlobEncoding::from_file_name(&format!("{sha}.gz")), None);
    }

    #[test]
    fn the_note_names_the_encoding_the_size_with_its_unit_and_the_share() {
        assert_eq!(stored_note(BlobEncoding::Identity, 100, 100), None);
        let note = stored_note(BlobEncoding::Zstd, 10_000_000, 800_000).unwrap();
        assert!(note.starts_with("stored as zstd, "), "{note}");
        assert!(note.contains(" on disk (8% of the original)"), "{note}");
        assert!(
            note.contains("kB") || note.contains("KB") || note.contains("MB"),
            "{note}"
        );
        let tiny = stored_note(BlobEncoding::Zstd, 100_000_000, 400_000).unwrap();
        assert!(tiny.contains("(0.4% of"), "{tiny}");
    }
}
