//! `lpmkit`: longest-prefix-match lookup schemes on real and synthetic routing tables.
//!
//! Run without arguments it benchmarks every registered scheme on the embedded synthetic
//! IPv4 and IPv6 tables. See `lpmkit --help` and `lpmkit <command> --help`.

mod about;
mod annotate;
mod bench;
mod bounds;
mod clidocs;
mod experiment;
mod export;
#[cfg(all(feature = "netlink", target_os = "linux"))]
mod follow;
mod forward;
mod info;
mod input;
mod lookup;
mod output;
mod progress;
mod tsc;
mod updates;
mod verify;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// Longest-prefix-match route lookup: compare the schemes of the LPM literature (DIR-24-8,
/// DXR, Poptrie, Spider, …) on real BGP tables or synthetic ones.
///
/// Every command reads a routing table with --table FILE (text `PREFIX/LEN NEXTHOP` lines,
/// optionally .xz/.gz, or an MRT RIB dump) or generates the deterministic synthetic one
/// (--synthetic v4|v6, the default). Scheme lists are comma-separated registry names, name
/// prefixes (`spider` = every Spider variant) or `all`.
///
/// With no command, runs `bench` on the synthetic IPv4 and IPv6 tables for every scheme.
#[derive(Parser, Debug)]
#[command(name = "lpmkit", version, long_version = about::LONG_VERSION.as_str(), about, long_about,
          after_help = SCHEMES_HELP.as_str())]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Table statistics (routes, next hops, prefix lengths) and, per scheme, build time,
    /// memory and structure figures.
    Info(info::InfoArgs),
    /// Look up addresses given as arguments (or one per line on stdin): next hop and the
    /// matched prefix.
    Lookup(lookup::LookupArgs),
    /// Check schemes against the reference trie on random keys plus every prefix's first and
    /// last address and their neighbours; exit status 1 on any mismatch.
    Verify(verify::VerifyArgs),
    /// Lookup rate of each scheme on the same keys in one process (median of runs).
    Bench(bench::BenchArgs),
    /// Replay an update trace: update rate, publication latency, and the lookup rate of
    /// reader threads while the writer applies the updates.
    Updates(updates::UpdatesArgs),
    /// Keep schemes in sync with a Linux kernel routing table over rtnetlink: changes,
    /// publication latency, checks against the kernel's own answers (Linux).
    #[cfg(all(feature = "netlink", target_os = "linux"))]
    Follow(follow::FollowArgs),
    /// Forwarding benchmark in the spirit of Spider's `lptest`: Ethernet/IP frames in
    /// memory rings, run-to-completion workers, batch-size sweep.
    Forward(forward::ForwardArgs),
    /// The papers' evaluations as data: `experiment list`, `experiment run NAME… [--quick]
    /// [--out DIR]` — records (JSON Lines, CSV), one SVG per figure and a Markdown report.
    Experiment(experiment::ExperimentArgs),
    /// Write the table (`PREFIX/LEN ID` lines) and the keys of a pattern (one address per
    /// line) to files, for programs outside lpmkit measured on the same table and keys.
    Export(export::ExportArgs),
    /// Annotate a stream of addresses (one per line, or a CSV column) with the matched
    /// prefix and its value: CSV `address,prefix,value` out, in constant memory.
    Annotate(annotate::AnnotateArgs),
    /// List the registered schemes.
    Schemes,
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) for this
    /// binary's commands and options.
    Completions(clidocs::CompletionsArgs),
    /// Print a manual page (lpmkit(1), or a command's: `lpmkit man verify`), or write every
    /// page into a directory (`--dir`).
    Man(clidocs::ManArgs),
}

static SCHEMES_HELP: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let mut s = String::from("Registered schemes:\n");
    for info in lpmkit::registry::schemes() {
        let fams: Vec<_> = info.families().iter().map(|f| f.as_str()).collect();
        s.push_str(&format!(
            "  {:<11} {:<10} {}\n",
            info.name,
            fams.join("+"),
            info.summary
        ));
    }
    s.push_str("\nScheme settings (--set KEY=VALUE on info, lookup, verify, bench, updates):\n");
    for family in lpmkit::registry::families() {
        if family.settings.is_empty() {
            continue;
        }
        let presets: Vec<&str> = family.presets.iter().map(|p| p.name).collect();
        s.push_str(&format!("  {} ({}):\n", family.name, presets.join(", ")));
        for (key, meaning) in family.settings {
            s.push_str(&format!("    {key:<20} {meaning}\n"));
        }
    }
    s
});

/// A closed standard output (`lpmkit lookup … | head -1`) ends the program quietly, as it
/// ends any Unix filter, instead of making `println!` panic: Rust starts programs with
/// SIGPIPE ignored; this restores the default action.
#[cfg(unix)]
fn die_quietly_on_closed_pipe() {
    // SAFETY: called first thing in `main`, before any other thread exists; setting a
    // signal's disposition to its default has no other effect on the program.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// What `Cli::parse` does with a command line it does not run — prints `--help`,
/// `--version` or the usage error — except that a failed write of the help or version is
/// an error (exit status 2), as for every other output.
fn parse_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let shown = matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion);
    if let Err(w) = e.print() {
        if shown {
            eprintln!("lpmkit: error: cannot write to standard output: {w}");
            return ExitCode::from(2);
        }
    }
    if shown {
        output::flush_stdout();
    }
    ExitCode::from(e.exit_code() as u8)
}

fn main() -> ExitCode {
    #[cfg(unix)]
    die_quietly_on_closed_pipe();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return parse_error(&e),
    };
    if let Some(e) = lpmkit::simd::env_error() {
        eprintln!("lpmkit: error: {e}");
        return ExitCode::from(2);
    }
    let result = match cli.command {
        None => bench::default_run(),
        Some(Command::Info(a)) => info::run(a),
        Some(Command::Lookup(a)) => lookup::run(a),
        Some(Command::Verify(a)) => verify::run(a),
        Some(Command::Bench(a)) => bench::run(a),
        Some(Command::Updates(a)) => updates::run(a),
        #[cfg(all(feature = "netlink", target_os = "linux"))]
        Some(Command::Follow(a)) => follow::run(a),
        Some(Command::Forward(a)) => forward::run(a),
        Some(Command::Experiment(a)) => experiment::run(a),
        Some(Command::Annotate(a)) => annotate::run(a),
        Some(Command::Export(a)) => export::run(a),
        Some(Command::Completions(a)) => clidocs::completions(a, Cli::command()),
        Some(Command::Man(a)) => clidocs::man(a, Cli::command()),
        Some(Command::Schemes) => {
            output::out!("{}", SCHEMES_HELP.as_str());
            Ok(ExitCode::SUCCESS)
        }
    };
    output::flush_stdout();
    match result {
        Ok(code) if code == ExitCode::SUCCESS && input::any_refused() => {
            eprintln!("lpmkit: some schemes refused the table (see above)");
            ExitCode::from(input::EXIT_REFUSED)
        }
        Ok(code) => code,
        Err(e) => {
            eprintln!("lpmkit: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
