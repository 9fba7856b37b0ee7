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
    // The CLI reference, the README's output and docs/schemas/ are what the
    // code makes now.
    crate::codegen::run(root, true)?;
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
    // Checks skipped for a missing tool are recorded here (test-support's
    // `skip::missing`): cargo shows no output of a test that passed.
    let skips = std::env::temp_dir().join(format!("madengine-test-skips-{}", std::process::id()));
    let _ = std::fs::remove_file(&skips);
    let mut expression = cmd(cargo, args).dir(root).env("MADENGINE_TEST_SKIPS", &skips);
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
    let recorded = std::fs::read_to_string(&skips).unwrap_or_default();
    let _ = std::fs::remove_file(&skips);
    println!("{}", closing_line(what, (passed, failed, ignored), &recorded));
    match status {
        Some(s) if s.success() => Ok(()),
        _ => Err(format!("{what} failed")),
    }
}

/// The closing line of a test run: its totals, and the checks skipped for a
/// missing tool (`recorded`: one `what<TAB>how to get it` line each), by
/// tool, with how to provide each. Such a test returns early, and cargo
/// counts it passed: it is counted skipped instead.
fn closing_line(what: &str, (passed, failed, ignored): (u64, u64, u64), recorded: &str) -> String {
    let mut tools: Vec<(&str, &str, usize)> = Vec::new();
    for line in recorded.lines().filter(|l| !l.is_empty()) {
        let (tool, get) = line.split_once('\t').unwrap_or((line, ""));
        match tools.iter_mut().find(|(t, _, _)| *t == tool) {
            Some((_, _, n)) => *n += 1,
            None => tools.push((tool, get, 1)),
        }
    }
    let skipped: usize = tools.iter().map(|(_, _, n)| n).sum();
    let mut line = format!(
        "{what}: {} passed, {failed} failed, {} skipped",
        passed.saturating_sub(skipped as u64),
        ignored + skipped as u64
    );
    if skipped > 0 {
        line.push_str(&format!(
            " ({skipped} for a missing tool: the checks that need it did not run)"
        ));
        for (tool, get, n) in tools {
            line.push_str(&format!("\n  {n} skipped without {tool}: {get}"));
        }
    }
    line
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_closing_line_counts_checks_skipped_for_a_missing_tool() {
        assert_eq!(
            super::closing_line("tests", (5, 0, 0), ""),
            "tests: 5 passed, 0 failed, 0 skipped"
        );
        let recorded = "MADENGINE_TEST_SLURM (a cluster)\teval up\nchromium\tapt-get install chromium\nMADENGINE_TEST_SLURM (a cluster)\teval up\n";
        assert_eq!(
            super::closing_line("tests", (5, 0, 1), recorded),
            "tests: 2 passed, 0 failed, 4 skipped (3 for a missing tool: the checks that need it did not run)\n  \
             2 skipped without MADENGINE_TEST_SLURM (a cluster): eval up\n  \
             1 skipped without chromium: apt-get install chromium"
        );
    }
}
