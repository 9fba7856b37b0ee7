//! `gunzip FILE.gz`: the content of a gzip file, as madengine reads
//! `.json.gz` traces ([`trace_sanitize::Gunzip`]: member after member, the
//! checksum checked), to stdout. `cargo xtask bench gzip` times it against
//! `gzip -dc` (and `pigz -dc` where installed).

#![allow(clippy::print_stderr, reason = "an example program")]

use std::io::{BufReader, Write};

fn main() {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: gunzip FILE.gz > OUT");
        std::process::exit(2);
    };
    let copied = std::fs::File::open(&path).and_then(|file| {
        let mut gunzip = trace_sanitize::Gunzip::new(BufReader::with_capacity(1 << 17, file));
        let mut out = std::io::stdout().lock();
        std::io::copy(&mut gunzip, &mut out)?;
        out.flush()
    });
    if let Err(err) = copied {
        eprintln!("gunzip: {}: {err}", std::path::Path::new(&path).display());
        std::process::exit(1);
    }
}
