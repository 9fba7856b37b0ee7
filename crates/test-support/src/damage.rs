//! Damage done to a file's bytes (a flipped bit, a cut, a block lost or
//! written twice, bytes put in), for the tests of every crate that reads
//! traces (included by path from the others' test binaries).

use std::io::{Read, Write};

use proptest::{prelude::*, sample::Index};

/// One piece of damage, at a position taken as a fraction of the length.
#[derive(Debug, Clone)]
pub enum Damage {
    /// Bits of one byte flipped.
    Flip(Index, u8),
    /// One byte set, to a value that means something to the format.
    Set(Index, u8),
    /// The rest cut off.
    Cut(Index),
    /// A block lost.
    Lose(Index, usize),
    /// A block written again right after itself.
    Twice(Index, usize),
    /// Bytes put in.
    Insert(Index, Vec<u8>),
}

pub fn damage() -> impl Strategy<Value = Damage> {
    // Bytes that mean something to JSON, varints and SQLite pages.
    let telling = prop_oneof![
        Just(b'"'),
        Just(b'\\'),
        Just(b'{'),
        Just(b'}'),
        Just(b'['),
        Just(b']'),
        Just(b','),
        Just(b':'),
        Just(b'-'),
        Just(b'9'),
        Just(0x00),
        Just(0x7f),
        Just(0x80),
        Just(0xff),
        any::<u8>(),
    ];
    prop_oneof![
        4 => (any::<Index>(), 1..=255u8).prop_map(|(at, bits)| Damage::Flip(at, bits)),
        4 => (any::<Index>(), telling.clone()).prop_map(|(at, b)| Damage::Set(at, b)),
        1 => any::<Index>().prop_map(Damage::Cut),
        2 => (any::<Index>(), 1..64usize).prop_map(|(at, n)| Damage::Lose(at, n)),
        2 => (any::<Index>(), 1..64usize).prop_map(|(at, n)| Damage::Twice(at, n)),
        2 => (any::<Index>(), proptest::collection::vec(telling, 1..12))
            .prop_map(|(at, b)| Damage::Insert(at, b)),
    ]
}

/// `bytes` gzipped, for a seed whose damage is to hit the deflate stream.
pub fn gzipped(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// `bytes` gunzipped (every member, as the readers take them).
pub fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes).read_to_end(&mut out).unwrap();
    out
}

pub fn damaged(original: &[u8], damages: &[Damage]) -> Vec<u8> {
    let mut bytes = original.to_vec();
    for d in damages {
        if bytes.is_empty() {
            break;
        }
        let len = bytes.len();
        match d {
            Damage::Flip(at, bits) => bytes[at.index(len)] ^= bits,
            Damage::Set(at, b) => bytes[at.index(len)] = *b,
            Damage::Cut(at) => bytes.truncate(at.index(len)),
            Damage::Lose(at, n) => {
                let at = at.index(len);
                bytes.drain(at..(at + n).min(len));
            }
            Damage::Twice(at, n) => {
                let at = at.index(len);
                let block = bytes[at..(at + n).min(len)].to_vec();
                bytes.splice(at..at, block);
            }
            Damage::Insert(at, b) => {
                let at = at.index(len + 1);
                bytes.splice(at..at, b.iter().copied());
            }
        }
    }
    bytes
}
