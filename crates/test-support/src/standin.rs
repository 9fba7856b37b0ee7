//! The TraceLens stand-in (tests/fixtures/tracelens-standin), installed into
//! throw-away virtual environments: once with its console scripts (a wheel
//! pip-installs offline), once as a bare module (no scripts: the driver's
//! `python -c` fallback), once without TraceLens but with an unrelated
//! lower-case `tracelens` module. Built once per source version and shared by
//! every test binary.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
    sync::OnceLock,
};

#[derive(Debug)]
pub struct Standin {
    /// A venv whose bin/ has the seven TraceLens_* console scripts.
    pub scripts: PathBuf,
    /// A venv with the TraceLens package only.
    pub module_only: PathBuf,
    /// A venv with the unrelated `tracelens` module and no TraceLens.
    pub wrong_package: PathBuf,
    /// The wheel (for `setup tracelens --spec`).
    pub wheel: PathBuf,
}

impl Standin {
    pub fn python(venv: &Path) -> PathBuf {
        venv.join("bin/python3")
    }
}

pub fn source_dir() -> PathBuf {
    crate::workspace_root().join("crates/tracelens-driver/tests/fixtures/tracelens-standin")
}

/// Where the venvs are built: cargo's target directory, `tmp/`.
fn target_tmp() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|t| if t.is_absolute() { t } else { crate::workspace_root().join(t) })
        .unwrap_or_else(|| crate::workspace_root().join("target"));
    target.join("tmp")
}

#[allow(clippy::disallowed_methods, reason = "test setup runs python")]
fn run(program: &Path, args: &[&std::ffi::OsStr]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    assert!(
        out.status.success(),
        "{} {:?} failed:\n{}{}",
        program.display(),
        args,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn fingerprint(dir: &Path) -> u64 {
    // FNV-1a over the sources, so an edit to the stand-in rebuilds the venvs.
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n != "__pycache__") {
                    stack.push(p);
                }
            } else {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for f in files {
        for b in f.to_string_lossy().bytes().chain(fs::read(&f).unwrap()) {
            h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    h
}

fn site_packages(venv: &Path) -> PathBuf {
    let python = Standin::python(venv);
    PathBuf::from(run(
        &python,
        &["-c".as_ref(), "import sysconfig; print(sysconfig.get_paths()['purelib'])".as_ref()],
    ))
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "__pycache__") {
                copy_tree(&p, &to.join(e.file_name()));
            }
        } else {
            fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

fn build(into: &Path) {
    let src = source_dir();
    let python3 = Path::new("python3");
    fs::create_dir_all(into).unwrap();
    let wheel = run(python3, &[src.join("make_wheel.py").as_os_str(), into.as_os_str()]);
    let scripts = into.join("scripts");
    run(python3, &["-m".as_ref(), "venv".as_ref(), scripts.as_os_str()]);
    run(
        &Standin::python(&scripts),
        &[
            "-m".as_ref(),
            "pip".as_ref(),
            "install".as_ref(),
            "-q".as_ref(),
            "--no-index".as_ref(),
            "--disable-pip-version-check".as_ref(),
            wheel.as_ref(),
        ],
    );
    let module_only = into.join("module-only");
    run(
        python3,
        &["-m".as_ref(), "venv".as_ref(), "--without-pip".as_ref(), module_only.as_os_str()],
    );
    copy_tree(&src.join("TraceLens"), &site_packages(&module_only).join("TraceLens"));
    let wrong = into.join("wrong-package");
    run(python3, &["-m".as_ref(), "venv".as_ref(), "--without-pip".as_ref(), wrong.as_os_str()]);
    let lower = site_packages(&wrong).join("tracelens");
    fs::create_dir_all(&lower).unwrap();
    fs::write(
        lower.join("__init__.py"),
        "\"\"\"The unrelated PyPI project named tracelens.\"\"\"\n",
    )
    .unwrap();
}

pub fn standin() -> &'static Standin {
    static STANDIN: OnceLock<Standin> = OnceLock::new();
    STANDIN.get_or_init(|| {
        let src = source_dir();
        let base = target_tmp().join(format!("tracelens-standin-{:016x}", fingerprint(&src)));
        // Venvs cannot move (their scripts name their interpreter), so they
        // are built in place, under a lock directory other test binaries wait on.
        fs::create_dir_all(target_tmp()).unwrap();
        let lock = PathBuf::from(format!("{}.lock", base.display()));
        let started = std::time::Instant::now();
        while !base.join("ready").is_file() {
            match fs::create_dir(&lock) {
                Ok(()) => {
                    let _ = fs::remove_dir_all(&base);
                    build(&base);
                    fs::write(base.join("ready"), b"").unwrap();
                    let _ = fs::remove_dir(&lock);
                }
                Err(_) => {
                    assert!(
                        started.elapsed().as_secs() < 300,
                        "waited 5 minutes for {} (remove it if no test is running)",
                        lock.display()
                    );
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
            }
        }
        let wheel = fs::read_dir(&base)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "whl"))
            .expect("the wheel");
        Standin {
            scripts: base.join("scripts"),
            module_only: base.join("module-only"),
            wrong_package: base.join("wrong-package"),
            wheel,
        }
    })
}
