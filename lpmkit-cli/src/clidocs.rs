//! What the command's own clap definitions generate: shell completions (`lpmkit
//! completions SHELL`) and manual pages (`lpmkit man`: lpmkit(1) and one page per command,
//! lpmkit-verify(1), lpmkit-experiment-run(1), …). Both describe this binary: a build
//! without `follow` (not Linux, or `--no-default-features`) has none to complete or document.
//!
//! The pages leave out `--version`'s long text (it describes the machine that runs the
//! binary, not the program), so a page is the same wherever it is generated.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::builder::Resettable;
use clap::Args;
use clap_complete::Shell;
use clap_mangen::Man;

use crate::output::out;

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell. Install the script where the shell
    /// looks, e.g. bash: ~/.local/share/bash-completion/completions/lpmkit; zsh: `_lpmkit`
    /// in a directory of $fpath; fish: ~/.config/fish/completions/lpmkit.fish.
    shell: Shell,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// The command whose page to print (`lpmkit man verify`: lpmkit-verify(1);
    /// `lpmkit man experiment run`); none: lpmkit(1). Read it with `lpmkit man | man -l -`.
    command: Vec<String>,

    /// Write every page instead (lpmkit.1 and lpmkit-COMMAND.1 for each command) into
    /// this directory, made if it does not exist.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    dir: Option<PathBuf>,
}

/// `lpmkit completions SHELL`: the completion script on standard output.
pub fn completions(args: CompletionsArgs, mut cmd: clap::Command) -> anyhow::Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "lpmkit", &mut script);
    out!(
        "{}",
        String::from_utf8(script).context("completion script")?
    );
    Ok(ExitCode::SUCCESS)
}

/// `lpmkit man [COMMAND…] [--dir DIR]`: one page on standard output, or every page in DIR.
pub fn man(args: ManArgs, cmd: clap::Command) -> anyhow::Result<ExitCode> {
    let pages = pages(cmd);
    if let Some(dir) = &args.dir {
        std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))?;
        for page in &pages {
            let path = dir.join(page.get_filename());
            let mut text = Vec::new();
            page.render(&mut text)?;
            std::fs::write(&path, text).with_context(|| format!("{}", path.display()))?;
        }
        eprintln!("lpmkit: {} manual pages in {}", pages.len(), dir.display());
        return Ok(ExitCode::SUCCESS);
    }
    let name = std::iter::once("lpmkit")
        .chain(args.command.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("-");
    let Some(page) = pages
        .iter()
        .find(|p| p.get_filename() == format!("{name}.1"))
    else {
        let names: Vec<String> = pages
            .iter()
            .filter_map(|p| {
                let f = p.get_filename();
                Some(
                    f.strip_prefix("lpmkit-")?
                        .strip_suffix(".1")?
                        .replace('-', " "),
                )
            })
            .collect();
        anyhow::bail!(
            "no manual page for `{}`; the commands: {}",
            args.command.join(" "),
            names.join(", ")
        );
    };
    let mut text = Vec::new();
    page.render(&mut text)?;
    out!("{}", String::from_utf8(text).context("manual page")?);
    Ok(ExitCode::SUCCESS)
}

/// lpmkit(1) first, then a page for every visible command and subcommand, depth first.
fn pages(cmd: clap::Command) -> Vec<Man> {
    fn walk(cmd: &clap::Command, source: &str, out: &mut Vec<Man>) {
        out.push(Man::new(cmd.clone()).source(source).manual("lpmkit manual"));
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, source, out);
        }
    }
    let mut cmd = cmd
        .long_version(Resettable::Reset)
        .disable_help_subcommand(true);
    cmd.build();
    let source = format!("lpmkit {}", env!("CARGO_PKG_VERSION"));
    let mut out = Vec::new();
    walk(&cmd, &source, &mut out);
    out
}
