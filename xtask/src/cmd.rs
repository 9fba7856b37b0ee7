//! The one place xtask spawns processes.

use std::{ffi::OsString, path::Path};

/// `program args...` through duct. A bare name is looked up on PATH even
/// when it comes as a `Path`: duct would run `Path::new("rocprofv3")` as
/// `./rocprofv3`, so the program goes to duct as a plain string.
#[allow(clippy::disallowed_methods, reason = "this is xtask's process helper")]
pub(crate) fn cmd<P, I, S>(program: P, args: I) -> duct::Expression
where
    P: AsRef<std::ffi::OsStr>,
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    duct::cmd(program.as_ref().to_os_string(), args)
}

pub(crate) fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Run and fail with the command line when it fails.
pub(crate) fn run(dir: &Path, program: &str, args: &[&str]) -> Result<(), String> {
    let line = format!("{program} {}", args.join(" "));
    eprintln!("$ {line}");
    cmd(program, args).dir(dir).run().map_err(|e| format!("`{line}` failed: {e}"))?;
    Ok(())
}

pub(crate) fn ci(root: &Path) -> Result<(), String> {
    let cargo = cargo();
    run(root, &cargo, &["fmt", "--all", "--check"])?;
    run(
        root,
        &cargo,
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--locked",
            "--",
            "-D",
            "warnings",
        ],
    )?;
    // The API docs other crates read: broken links and bad markup fail.
    let args = ["doc", "--workspace", "--no-deps", "--locked"];
    eprintln!("$ RUSTDOCFLAGS='-D warnings' {cargo} {}", args.join(" "));
    cmd(&cargo, args)
        .dir(root)
        .env("RUSTDOCFLAGS", "-D warnings")
        .run()
        .map_err(|e| format!("`cargo doc` failed (RUSTDOCFLAGS='-D warnings'): {e}"))?;
    test(root, &cargo, &["test", "--workspace", "--locked"], None, "tests")?;
    // The CLI's suite again, against `madengine` as `cargo install` builds
    // it: release, and no dev-dependency turning a dependency's feature on
    // (a regex the tests passed once panicked there).
    run(root, &cargo, &["build", "--release", "--locked", "-p", "madengine-cli"])?;
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or(root.join("target"), |t| root.join(t));
    let shipped = target.join("release/madengine");
    if !shipped.is_file() {
        return Err(format!("cargo build --release made no {}", shipped.display()));
    }
    let args = ["test", "--locked", "-p", "madengine-cli", "--test", "it"];
    test(root, &cargo, &args, Some(&shipped), "tests of the shipped binary")
}

/// `cargo <args>`, streamed (with `MADENGINE_TEST_BINARY=binary` where
/// given), then one closing line, `<what>: N passed, N failed, N skipped`,
/// with the totals over every test binary (cargo's own last line is that of
/// the last binary only).
fn test(
    root: &Path,
    cargo: &str,
    args: &[&str],
    binary: Option<&Path>,
    what: &str,
) -> Result<(), String> {
    use std::io::{BufRead, BufReader};
    let shown = binary.map(|b| format!("MADENGINE_TEST_BINARY={} ", b.display()));
    eprintln!("$ {}{cargo} {}", shown.unwrap_or_default(), args.join(" "));
    let mut expression = cmd(cargo, args).dir(root);
    if let Some(binary) = binary {
        expression = expression.env("MADENGINE_TEST_BINARY", binary);
    }
    let reader = expression
        .stderr_to_stdout()
        .unchecked()
        .reader()
        .map_err(|e| format!("cannot start cargo test: {e}"))?;
    let (mut passed, mut failed, mut ignored) = (0u64, 0u64, 0u64);
    let mut lines = BufReader::new(&reader);
    let mut line = String::new();
    while lines.read_line(&mut line).map_err(|e| format!("reading cargo test's output: {e}"))? > 0 {
        print!("{line}");
        if let Some(rest) = line.trim().strip_prefix("test result: ") {
            for part in rest.split(';') {
                let mut words = part.split_whitespace().rev();
                let (Some(word), Some(n)) = (words.next(), words.next()) else { continue };
                let n: u64 = n.parse().unwrap_or(0);
                match word {
                    "passed" => passed += n,
                    "failed" => failed += n,
                    "ignored" => ignored += n,
                    _ => {}
                }
            }
        }
        line.clear();
    }
    let status = reader.try_wait().map_err(|e| format!("cargo test: {e}"))?.map(|o| o.status);
    println!("{what}: {passed} passed, {failed} failed, {ignored} skipped");
    match status {
        Some(s) if s.success() => Ok(()),
        _ => Err(format!("{what} failed")),
    }
}
