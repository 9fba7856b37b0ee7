//! One module per subcommand: call the libraries, hand results to `render`.

mod diff;
mod dynolog;
mod k8s;
mod report;
#[cfg(feature = "schema")]
mod schemas;
mod setup;
mod slurm;
mod summary;

pub(crate) use summary::write_atomic;
mod trace;

use crate::{
    cli::{
        Cli, Command, DynologCommand, K8sCommand, ReportCommand, SetupCommand, SlurmCommand,
        TraceCommand,
    },
    error::{Error, Status},
};

/// The JSON traces under `dir` that the sanitizer reads (PyTorch and
/// rocprofv3 JSON), excluding `exclude`; each path that could not be looked
/// at is warned about. The Perfetto traces found there are left out and
/// named in a note, with `then`: what to do with them instead.
fn json_traces(
    dir: &std::path::Path,
    exclude: Vec<std::path::PathBuf>,
    then: &str,
) -> Result<Vec<trace_discover::Trace>, Error> {
    use trace_discover::TraceKind;
    let options = trace_discover::Options { exclude, ..Default::default() };
    let found = trace_discover::discover(dir, &options)?;
    crate::render::left_out(&found.problems);
    // Said, as it may surprise: its copy (or the trace) beside it is read.
    let copies = [trace_discover::SANITIZED_COPY, trace_discover::SANITIZED_ORIGINAL];
    for copy in found.unsupported.iter().filter(|u| copies.contains(&&*u.reason)) {
        crate::render::note(&format!("left out {}: {}", copy.path.display(), copy.reason));
    }
    let (json, perfetto): (Vec<_>, Vec<_>) = found
        .traces
        .into_iter()
        .partition(|t| matches!(t.kind, TraceKind::Pytorch | TraceKind::RocprofJson));
    const NAMED: usize = 3;
    if json.is_empty() && perfetto.is_empty() {
        // Nothing to read: say what was there instead, and what to do.
        for u in found.unsupported.iter().take(NAMED) {
            crate::render::note(&format!("{}: {}", u.path.display(), u.reason));
        }
        if found.unsupported.len() > NAMED {
            crate::render::note(&format!(
                "{} more files TraceLens cannot read: `madengine trace discover {}` lists them",
                found.unsupported.len() - NAMED,
                dir.display()
            ));
        }
    }
    if !perfetto.is_empty() {
        let mut names: Vec<String> =
            perfetto.iter().take(NAMED).map(|t| t.path.display().to_string()).collect();
        if perfetto.len() > NAMED {
            names.push(format!("{} more", perfetto.len() - NAMED));
        }
        crate::render::note(&format!(
            "left out {} Perfetto trace(s), which are not JSON ({}): {then}",
            perfetto.len(),
            names.join(", ")
        ));
    }
    Ok(json)
}

/// Fail before any trace is read where `path` cannot be written to as a
/// directory (`dir`) or as a file: it is the wrong kind of file (`-o`
/// naming a file, `--html` a directory), or the nearest of its ancestors
/// that is there is not a directory. Nothing is created; other failures
/// are left to the write.
pub(crate) fn check_output(path: &std::path::Path, dir: bool) -> Result<(), Error> {
    use std::io::ErrorKind;
    let wrong = |kind: ErrorKind, why: String| {
        Err(Error::Io { path: path.to_path_buf(), source: std::io::Error::new(kind, why) })
    };
    let shown = path.display();
    if let Ok(meta) = std::fs::metadata(path) {
        return match (dir, meta.is_dir()) {
            (true, false) => {
                wrong(ErrorKind::NotADirectory, format!("{shown} is a file, not a directory"))
            }
            (false, true) => wrong(ErrorKind::IsADirectory, format!("{shown} is a directory")),
            _ => Ok(()),
        };
    }
    let there = path
        .ancestors()
        .skip(1)
        .filter(|a| !a.as_os_str().is_empty())
        .find_map(|a| std::fs::metadata(a).ok().map(|meta| (a, meta)));
    match there {
        Some((above, meta)) if !meta.is_dir() => {
            wrong(ErrorKind::NotADirectory, format!("{} is not a directory", above.display()))
        }
        _ => Ok(()),
    }
}

/// Refuse an output file (`--html`) that is one of the inputs (the same
/// file, through a link or a hard link too): writing it would destroy a
/// trace, as `trace sanitize -o` already refuses.
pub(crate) fn check_not_an_input<'a>(
    output: &std::path::Path,
    inputs: impl IntoIterator<Item = &'a std::path::Path>,
) -> Result<(), Error> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let Ok(out) = std::fs::metadata(output) else { return Ok(()) };
        for input in inputs {
            let same = std::fs::metadata(input)
                .is_ok_and(|i| i.is_file() && i.dev() == out.dev() && i.ino() == out.ino());
            if same {
                let what = match output == input {
                    true => "one of this command's traces".to_string(),
                    false => format!("the same file as {}, one of its traces", input.display()),
                };
                return Err(Error::Usage(format!(
                    "{} is {what}: writing the page there would destroy it; name another file",
                    output.display()
                )));
            }
        }
    }
    Ok(())
}

/// An `--output-dir` that is, or holds, a directory to search
/// ([`trace_report::HoldsRun`], refused before anything is read): a usage
/// error (the original said "No supported trace artifacts found" and exited
/// 0).
pub(crate) fn holds_run(refused: &trace_report::HoldsRun) -> Error {
    Error::Usage(format!(
        "--output-dir {refused}; name another directory (one inside the run is fine)"
    ))
}

/// Create `dir` and its parents (`-o DIR/`, a page's directory), then
/// `write` into it. If that fails (a full disk), the directories made for
/// it are removed again, those it left empty: a failed write leaves no
/// empty report directory behind to pass for one.
pub(crate) fn in_dir<T>(
    dir: &std::path::Path,
    write: impl FnOnce() -> Result<T, Error>,
) -> Result<T, Error> {
    let made: Vec<&std::path::Path> = dir
        .ancestors()
        .take_while(|a| !a.as_os_str().is_empty() && std::fs::symlink_metadata(a).is_err())
        .collect();
    let done = std::fs::create_dir_all(dir)
        .map_err(|source| Error::Io { path: dir.to_path_buf(), source })
        .and_then(|()| write());
    if done.is_err() {
        for dir in made {
            let _ = std::fs::remove_dir(dir);
        }
    }
    done
}

pub(crate) fn run(cli: Cli) -> Result<Status, Error> {
    match cli.command {
        Command::Trace(TraceCommand::Discover(args)) => trace::discover(&args),
        Command::Trace(TraceCommand::Sanitize(args)) => trace::sanitize(&args),
        Command::Trace(TraceCommand::Convert(args)) => trace::convert(&args),
        Command::Report(ReportCommand::Tracelens(args)) => report::tracelens(&args),
        Command::Report(ReportCommand::TracelensCompare(args)) => report::compare(&args),
        Command::Report(ReportCommand::Summary(args)) => summary::summary(&args),
        Command::Report(ReportCommand::Diff(args)) => diff::diff(&args),
        Command::Setup(SetupCommand::Tracelens(args)) => setup::tracelens(&args),
        Command::Setup(SetupCommand::Dynolog(args)) => dynolog::setup(&args),
        Command::Dynolog(DynologCommand::Status(args)) => dynolog::status(&args),
        Command::Dynolog(DynologCommand::Version(args)) => dynolog::version(&args),
        Command::Dynolog(DynologCommand::Gputrace(args)) => dynolog::gputrace(&args),
        Command::Dynolog(DynologCommand::Start(args)) => dynolog::start(&args),
        Command::Dynolog(DynologCommand::Trigger(args)) => dynolog::trigger(&args),
        Command::Dynolog(DynologCommand::Stop(args)) => dynolog::stop(&args),
        Command::Profile(args) => dynolog::profile(&args),
        Command::Slurm(SlurmCommand::Script(args)) => slurm::script(&args),
        Command::Slurm(SlurmCommand::Submit(args)) => slurm::submit(&args),
        Command::Slurm(SlurmCommand::Gather(args)) => slurm::gather(&args),
        Command::K8s(K8sCommand::Render(args)) => k8s::render(&args),
        Command::K8s(K8sCommand::Apply(args)) => k8s::apply(&args),
        Command::K8s(K8sCommand::Gather(args)) => k8s::gather(&args),
        Command::Completions(args) => completions(&args),
        #[cfg(feature = "schema")]
        Command::Schemas => schemas::schemas(),
    }
}

/// The completion script clap_complete writes from the CLI's own definition.
fn completions(args: &crate::cli::CompletionsArgs) -> Result<Status, Error> {
    let mut script = Vec::new();
    clap_complete::generate(
        args.shell,
        &mut <Cli as clap::CommandFactory>::command(),
        "madengine",
        &mut script,
    );
    crate::render::raw(&String::from_utf8_lossy(&script))?;
    Ok(Status::Success)
}
