//! Where results go: standard output that fails loudly, and output files opened before
//! the work starts.
//!
//! `println!` panics when standard output cannot be written (a full disk, `> /dev/full`).
//! Every command prints through [`outln!`] and [`out!`] instead: a write error ends the
//! program with a message naming standard output and exit status 2. (A closed pipe ends
//! it earlier and quietly, by `SIGPIPE`, as any Unix filter: see `main`.)

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// `println!` to standard output; a write error ends the program (exit status 2).
macro_rules! outln {
    () => {
        $crate::output::stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` to standard output; a write error ends the program (exit status 2).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::stdout(format_args!($($arg)*))
    };
}

pub(crate) use {out, outln};

/// Writes to standard output, or ends the program on a write error.
pub fn stdout(args: std::fmt::Arguments<'_>) {
    let mut s = std::io::stdout().lock();
    if let Err(e) = s.write_fmt(args).and_then(|()| s.flush()) {
        fail(&e);
    }
}

/// Flushes standard output, or ends the program on a write error.
pub fn flush_stdout() {
    if let Err(e) = std::io::stdout().lock().flush() {
        fail(&e);
    }
}

fn fail(e: &std::io::Error) -> ! {
    // Best effort: standard error may be unwritable too.
    let _ = writeln!(
        std::io::stderr(),
        "lpmkit: error: cannot write to standard output: {e}"
    );
    std::process::exit(2)
}

/// An output file named by option `flag`, created now (before the work) so that a path
/// that cannot be written fails at once, naming the file.
#[derive(Debug)]
pub struct OutputFile {
    path: PathBuf,
    flag: &'static str,
    file: File,
}

impl OutputFile {
    /// Creates (truncates) `path`.
    pub fn create(flag: &'static str, path: &Path) -> anyhow::Result<OutputFile> {
        let file = File::create(path)
            .with_context(|| format!("{flag}: cannot create {}", path.display()))?;
        Ok(OutputFile {
            path: path.to_path_buf(),
            flag,
            file,
        })
    }

    /// [`create`](Self::create) for an optional path.
    pub fn create_opt(flag: &'static str, path: Option<&Path>) -> anyhow::Result<Option<Self>> {
        path.map(|p| Self::create(flag, p)).transpose()
    }

    /// The path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes all of `data` and syncs nothing more: errors name the file.
    pub fn write_all(&mut self, data: &[u8]) -> anyhow::Result<()> {
        self.file
            .write_all(data)
            .and_then(|()| self.file.flush())
            .with_context(|| format!("{}: cannot write {}", self.flag, self.path.display()))
    }

    /// A buffered writer on the file, for streaming output; errors are the caller's to
    /// name (see [`context`](Self::context)).
    pub fn into_writer(self) -> std::io::BufWriter<File> {
        std::io::BufWriter::with_capacity(1 << 16, self.file)
    }

    /// The text errors about this file start with.
    pub fn context(&self) -> String {
        format!("{}: cannot write {}", self.flag, self.path.display())
    }
}
