//! `lpmkit bench`: lookup rate of every scheme on the same keys, in one process.
//!
//! Method (after the Spider and DXR papers' evaluations): keys are generated before timing
//! (or just in time by the Spider paper's LCG with `--jit`); every scheme is built from the
//! same table and timed on the same keys; each figure is the median of `--runs` runs, and
//! the runs alternate between schemes (run 1 of each, then run 2 of each, …) so that a
//! shared host's slow phases hit every scheme alike and the ratio column stays fair; with
//! N threads the keys are split into N sections, one per thread (as DXR does, so threads do
//! not share a stream), and the rate is total keys over the slowest thread's time. Every
//! run's answers are summed into a checksum that must equal the reference trie's: a wrong
//! answer voids the figure (it is reported as WRONG and the exit status is 1). Before the
//! timed runs every scheme runs `--warmup` untimed passes (default 1), so the first scheme
//! of the list is not measured on a colder machine than the rest.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Barrier;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use lpmkit::traffic::{self, Lcg, Pattern};
use lpmkit::{Address, AnyTable, Family, Fib, NextHop, Table};
use serde::Serialize;

use crate::bounds;
use crate::input::{self, FamilyArg, TableArgs};
use crate::output::outln;
use crate::output::OutputFile;
use crate::progress;

/// The most keys `--keys` asks for.
pub const MAX_KEYS: u64 = 1 << 32;
/// The most threads a thread count may ask for.
pub const MAX_THREADS: u64 = 1024;
/// The largest `--batch`.
pub const MAX_BATCH: u64 = 1 << 16;
/// The largest degree of SIMD parallelism `--ways` sweeps.
const MAX_WAYS: usize = 64;
/// Bytes a measuring thread takes besides its buffers (its stack).
pub const THREAD_BYTES: u128 = 2 << 20;

#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    table: TableArgs,

    #[command(flatten)]
    settings: input::SettingsArgs,

    /// Schemes to measure (comma-separated names, name prefixes, or `all`).
    #[arg(long, short = 's', default_value = "all")]
    schemes: String,

    /// The scheme the ratio column compares with (measured first); when it is not among
    /// --schemes, the first scheme listed is.
    #[arg(long, default_value = "dir24-8", value_name = "SCHEME")]
    baseline: String,

    /// Key pattern: rnd (uniform random over the whole address space, as the Spider and
    /// Poptrie papers), routable (uniform over the routable space: IPv4 without 0/8, 127/8
    /// and 224/3, DXR's RND; IPv6 2000::/3), rep (each key 16 times in a row, DXR's REP), seq
    /// (random with a data dependency between lookups, DXR's SEQ), zipf (skewed popularity
    /// over the table's prefixes), v6match (the Spider paper's IPv6 keys: first 32 bits of a
    /// table prefix, 32 random bits, host part ::1), match:P (Bloomfwd's matching ratio: P %
    /// of the keys inside a table prefix, the others routable and outside every prefix),
    /// trace:FILE (an address list). Default: rnd for IPv4, v6match for IPv6.
    #[arg(long, short = 'p')]
    pattern: Option<Pattern>,

    /// Thread counts to measure, comma-separated (e.g. 1,2). Range: 1 to 1024.
    #[arg(long, value_delimiter = ',', default_value = "1",
          value_parser = bounds::int::<usize>(1, MAX_THREADS))]
    threads: Vec<usize>,

    /// Keys per run (split among the threads). Range: 1 to 4294967296.
    #[arg(long, short = 'k', default_value_t = 1 << 24,
          value_parser = bounds::int::<usize>(1, MAX_KEYS))]
    keys: usize,

    /// Runs per figure; the median is reported. Range: 1 to 1000.
    #[arg(long, short = 'r', default_value_t = 5, value_parser = bounds::int::<usize>(1, 1000))]
    runs: usize,

    /// Untimed runs of each scheme before the timed ones (per thread count), so the first
    /// scheme measured does not pay for cold caches, page faults and clock ramp-up that the
    /// later ones do not. Range: 0 to 1000.
    #[arg(long, default_value_t = 1, value_parser = bounds::int::<usize>(0, 1000))]
    warmup: usize,

    /// Keys per `lookup_batch` call (the burst size of a data plane). Range: 1 to 65536.
    #[arg(long, default_value_t = 256, value_parser = bounds::int::<usize>(1, MAX_BATCH))]
    batch: usize,

    /// Degrees of SIMD parallelism to sweep for schemes that have one (Spider's Fig. 6):
    /// a range `1..16` or a list `1,8,16`, each 1 to 64.
    #[arg(long, value_name = "WAYS")]
    ways: Option<String>,

    /// Also measure TSC ticks per 16-key `lookup_batch` call (mean and percentiles).
    #[arg(long)]
    cycles: bool,

    /// Generate rnd/v6match keys just in time with the Spider paper's LCG inside the timed
    /// loop instead of reading a precomputed array.
    #[arg(long)]
    jit: bool,

    #[command(flatten)]
    isa: input::IsaArgs,

    /// Measure each scheme under each of these instruction-set ceilings (comma-separated:
    /// avx512, avx2, scalar) in the same run, alternated with the others: a scheme appears
    /// once per distinct code path it takes (the `code` column), so its AVX-512 and AVX2
    /// kernels are compared on the same keys.
    #[arg(long, value_name = "ISAS", value_delimiter = ',')]
    isa_sweep: Vec<lpmkit::simd::Isa>,

    /// Seed of the keys (any 64-bit value).
    #[arg(long, default_value_t = 1)]
    seed: u64,

    /// Write the records as a JSON array to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// TSC ticks per 16-key call.
#[derive(Serialize, Clone, Debug)]
pub struct Cycles {
    mean: f64,
    p50: u64,
    p75: u64,
    p90: u64,
    p99: u64,
}

/// One measured figure.
#[derive(Serialize, Clone, Debug)]
pub struct Record {
    scheme: String,
    implementation: String,
    family: String,
    table: String,
    routes: usize,
    pattern: String,
    threads: usize,
    keys: usize,
    batch: usize,
    ways: Option<usize>,
    mlps_runs: Vec<f64>,
    mlps_median: f64,
    memory_bytes: usize,
    build_ms: f64,
    checksum_ok: Option<bool>,
    cycles_per_16: Option<Cycles>,
}

pub fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let json = OutputFile::create_opt("--json", args.json.as_deref())?;
    let table = input::load(&args.table)?;
    let records = match &table {
        AnyTable::V4(t) => bench(t, &args)?,
        AnyTable::V6(t) => bench(t, &args)?,
    };
    finish(json, &records)
}

/// `lpmkit` with no arguments: every scheme on the synthetic IPv4 and IPv6 tables.
pub fn default_run() -> anyhow::Result<ExitCode> {
    eprintln!(
        "lpmkit: no command given; benchmarking every scheme on the embedded synthetic tables"
    );
    eprintln!("        (see `lpmkit --help`; `lpmkit bench --table FILE` for a real table)");
    let mut all = Vec::new();
    for family in [FamilyArg::V4, FamilyArg::V6] {
        let args = BenchArgs {
            table: TableArgs::synthetic(family),
            settings: input::SettingsArgs::default(),
            schemes: "all".into(),
            baseline: "dir24-8".into(),
            pattern: None,
            threads: vec![1],
            keys: 1 << 22,
            runs: 3,
            warmup: 1,
            batch: 256,
            ways: None,
            cycles: false,
            jit: false,
            isa: input::IsaArgs::default(),
            isa_sweep: Vec::new(),
            seed: 1,
            json: None,
        };
        let table = input::load(&args.table)?;
        all.extend(match &table {
            AnyTable::V4(t) => bench(t, &args)?,
            AnyTable::V6(t) => bench(t, &args)?,
        });
        outln!();
    }
    Ok(exit_code(&all))
}

/// Measures as `lpmkit bench ARGV…` does, in this process, and returns the records (for
/// `lpmkit experiment`, whose cells are bench invocations written as data).
pub fn records_from_args(argv: &[String]) -> anyhow::Result<Vec<Record>> {
    #[derive(clap::Parser)]
    #[command(name = "bench")]
    struct One {
        #[command(flatten)]
        args: BenchArgs,
    }
    let words = std::iter::once("bench".to_string()).chain(argv.iter().cloned());
    let one = <One as clap::Parser>::try_parse_from(words)?;
    let table = input::load(&one.args.table)?;
    match &table {
        AnyTable::V4(t) => bench(t, &one.args),
        AnyTable::V6(t) => bench(t, &one.args),
    }
}

impl Record {
    /// A scheme returned a wrong answer in this figure's runs.
    pub fn wrong(&self) -> bool {
        self.checksum_ok == Some(false)
    }
}

fn finish(json: Option<OutputFile>, records: &[Record]) -> anyhow::Result<ExitCode> {
    if let Some(mut file) = json {
        let text = serde_json::to_string_pretty(records)?;
        file.write_all((text + "\n").as_bytes())?;
        eprintln!(
            "wrote {} records to {}",
            records.len(),
            file.path().display()
        );
    }
    Ok(exit_code(records))
}

fn exit_code(records: &[Record]) -> ExitCode {
    if records.iter().any(|r| r.checksum_ok == Some(false)) {
        eprintln!("lpmkit: some schemes returned wrong answers (WRONG above)");
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// How the timed loop uses the keys.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `lookup_batch` over precomputed keys.
    Batch,
    /// One `lookup` at a time, each key depending on the previous answer.
    Dependent,
    /// Keys generated by the LCG inside the timed loop.
    JustInTime,
}

fn parse_ways(s: &str) -> anyhow::Result<Vec<usize>> {
    let v: Vec<usize> = if let Some((a, b)) = s.split_once("..") {
        let bound = |t: &str| t.trim().trim_start_matches('=').parse::<usize>().ok();
        if bound(a).unwrap_or(0) > MAX_WAYS || bound(b).unwrap_or(0) > MAX_WAYS {
            anyhow::bail!("--ways: degrees of parallelism are 1 to {MAX_WAYS}");
        }
        let a: usize = a.trim().parse().context("--ways: bad range start")?;
        let b: usize = b
            .trim()
            .trim_start_matches('=')
            .parse()
            .context("--ways: bad range end")?;
        (a..=b).collect()
    } else {
        s.split(',')
            .map(|w| w.trim().parse::<usize>())
            .collect::<Result<_, _>>()
            .context("--ways: expected a range like 1..16 or a list like 1,8,16")?
    };
    if v.is_empty() || v.iter().any(|&w| w == 0 || w > MAX_WAYS) {
        anyhow::bail!("--ways: degrees of parallelism are 1 to {MAX_WAYS}");
    }
    Ok(v)
}

/// The CPU, as figures name it: the model name of `/proc/cpuinfo` with its family and
/// model numbers (virtual machines often show a bare "AMD EPYC", which these tell apart:
/// family 25 is Zen 3 and 4, family 26 Zen 5), or the architecture where there is none.
pub(crate) fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| cpu_name(&s))
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// [`cpu_model`] from the text of `/proc/cpuinfo` (its first processor's fields).
fn cpu_name(cpuinfo: &str) -> Option<String> {
    let field = |key: &str| {
        cpuinfo
            .lines()
            .take_while(|l| !l.trim().is_empty())
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim() == key)
            .map(|(_, v)| v.trim().to_string())
    };
    let name = field("model name")?;
    Some(match (field("cpu family"), field("model")) {
        (Some(family), Some(model)) => format!("{name} (family {family}, model {model})"),
        _ => name,
    })
}

fn bench<A: Address>(table: &Table<A>, args: &BenchArgs) -> anyhow::Result<Vec<Record>> {
    let family = A::FAMILY;
    let mut schemes = input::schemes(&args.schemes, family)?;
    args.settings.check(&schemes)?;
    // The ratio column compares with --baseline (by default DIR-24-8, the papers' common
    // baseline) when it is measured, else with the first scheme: measure it first.
    if lpmkit::registry::find(&args.baseline).is_none() {
        anyhow::bail!(
            "--baseline: unknown scheme `{}` (see `lpmkit schemes`)",
            args.baseline
        );
    }
    if let Some(i) = schemes.iter().position(|s| s.name == args.baseline) {
        let b = schemes.remove(i);
        schemes.insert(0, b);
    }
    let pattern = args.pattern.clone().unwrap_or(match family {
        Family::V4 => Pattern::Rnd,
        Family::V6 => Pattern::V6Match,
    });
    let threads = args.threads.iter().copied().max().unwrap_or(1) as u128;
    bounds::check_memory(&[
        bounds::Need::items(
            "--keys",
            args.keys as u128,
            // The keys, their reference answers.
            (core::mem::size_of::<A>() + 4) as u128,
            "keys",
        ),
        bounds::Need::items(
            "--threads",
            threads,
            THREAD_BYTES + args.batch as u128 * 4,
            "threads (stack and batch buffer)",
        ),
    ])?;
    if args.jit && !matches!(pattern, Pattern::Rnd | Pattern::V6Match) {
        anyhow::bail!("--jit applies to the rnd and v6match patterns");
    }
    if pattern == Pattern::V6Match && family != Family::V6 {
        anyhow::bail!("the v6match pattern needs an IPv6 table");
    }
    let ways = args.ways.as_deref().map(parse_ways).transpose()?;
    let mode = match (&pattern, args.jit) {
        (_, true) => Mode::JustInTime,
        (Pattern::Seq, _) => Mode::Dependent,
        _ => Mode::Batch,
    };

    let pb = progress::spinner(format!("generating {} keys ({pattern})", args.keys));
    let keys = make_keys(table, &pattern, args.keys, args.seed)?;
    let patterns_v6 = if family == Family::V6 {
        traffic::v6_patterns(as_v6(&table.rib))
    } else {
        Vec::new()
    };
    pb.finish_and_clear();
    let reference = if mode == Mode::JustInTime {
        None
    } else {
        let pb = progress::spinner("reference answers (trie)");
        let r = crate::verify::reference_answers(table, &keys);
        pb.finish_and_clear();
        Some(checksum_of(&keys, &r, mode))
    };
    let jit = JitKeys {
        v6: family == Family::V6 && pattern == Pattern::V6Match,
        patterns: &patterns_v6,
        seed: args.seed,
    };

    outln!(
        "# {} ({family}, {} routes), pattern {pattern}{}, {} keys, batch {}, median of {} runs; cpu: {}, isa: {}",
        table.name,
        table.rib.len(),
        if args.jit { " (just-in-time LCG)" } else { "" },
        args.keys,
        args.batch,
        args.runs,
        cpu_model(),
        args.isa.describe(),
    );
    outln!(
        "{:<16} {:>6} {:>3} {:>9} {:>17} {:>11} {:>10} {:>8} {:>9}  check",
        "scheme",
        "code",
        "thr",
        "Mlps",
        "runs min..max",
        format!("vs {}", schemes[0].name),
        "memory",
        "B/pfx",
        "build ms"
    );

    // Build every scheme (and every degree of parallelism) first, then measure them in
    // alternation — run 1 of every scheme, run 2 of every scheme, … — so that the host's
    // slow and fast phases fall on all of them alike and the ratios are fair.
    struct Built<A: Address> {
        name: &'static str,
        label: String,
        way: Option<usize>,
        fib: Box<dyn lpmkit::Fib<A>>,
        build_ms: f64,
        cycles: Option<Cycles>,
    }
    let mut built: Vec<Built<A>> = Vec::new();
    for info in schemes {
        let sweep: Vec<Option<usize>> = match &ways {
            Some(w) => w.iter().map(|&w| Some(w)).collect(),
            None => vec![None],
        };
        let isas: Vec<Option<lpmkit::simd::Isa>> = if args.isa_sweep.is_empty() {
            vec![args.isa.force_isa]
        } else {
            args.isa_sweep
                .iter()
                .map(|&i| Some(i.min(args.isa.ceiling())))
                .collect()
        };
        let mut refused = false;
        for (way, isa) in sweep
            .iter()
            .flat_map(|&w| isas.iter().map(move |&i| (w, i)))
        {
            if refused {
                break;
            }
            let mut opts = args.settings.apply(info, args.isa.options());
            opts.ways = way;
            opts.isa = isa;
            let pb = progress::spinner(format!("building {}", info.name));
            let t0 = Instant::now();
            let fib = info.build(&table.rib, &opts);
            let build_ms = t0.elapsed().as_secs_f64() * 1e3;
            pb.finish_and_clear();
            let fib = match fib {
                Ok(fib) => fib,
                Err(e) => {
                    input::refused(info.name, &e);
                    refused = true;
                    continue;
                }
            };
            // A ceiling that gives a path already built for this scheme adds nothing.
            if built.iter().any(|b| {
                b.name == info.name
                    && b.way == way
                    && b.fib.implementation() == fib.implementation()
            }) {
                continue;
            }
            // Schemes without a degree of parallelism are measured once in a sweep.
            let honours_ways = fib.stats().get("ways").is_some();
            if way.is_some() && !honours_ways && way != ways.as_ref().map(|w| w[0]) {
                continue;
            }
            let way = way.filter(|_| honours_ways);
            let label = match way {
                Some(w) => format!("{}@{w}w", info.name),
                None => info.name.to_string(),
            };
            let cycles = (args.cycles && mode == Mode::Batch).then(|| measure_cycles(&*fib, &keys));
            built.push(Built {
                name: info.name,
                label,
                way,
                fib,
                build_ms,
                cycles,
            });
        }
    }

    let mut records = Vec::new();
    for &threads in &args.threads {
        let mut runs = vec![Vec::with_capacity(args.runs); built.len()];
        let mut ok = vec![true; built.len()];
        let pb = progress::bar(
            (args.runs * built.len()) as u64,
            format!(
                "{} schemes x{threads}, {} runs each",
                built.len(),
                args.runs
            ),
        );
        for _ in 0..args.warmup {
            for b in &built {
                measure(&*b.fib, &keys, threads, args.batch, mode, &jit, args.keys);
            }
        }
        for _ in 0..args.runs {
            for (i, b) in built.iter().enumerate() {
                let (secs, sum) =
                    measure(&*b.fib, &keys, threads, args.batch, mode, &jit, args.keys);
                runs[i].push(args.keys as f64 / secs / 1e6);
                if let Some(r) = reference {
                    ok[i] &= sum == r;
                }
                pb.inc(1);
            }
        }
        pb.finish_and_clear();
        let baseline = median(&runs[0]);
        for (i, b) in built.iter().enumerate() {
            let median = median(&runs[i]);
            let ratio = median / baseline;
            let mem = b.fib.memory_bytes();
            let (lo, hi) = runs[i]
                .iter()
                .fold((f64::MAX, 0f64), |(l, h), &v| (l.min(v), h.max(v)));
            outln!(
                "{:<16} {:>6} {:>3} {:>9.1} {:>8.1}..{:<8.1} {:>10.2}x {:>10} {:>8.2} {:>9.1}  {}",
                b.label,
                b.fib.implementation().to_string(),
                threads,
                median,
                lo,
                hi,
                ratio,
                human_bytes(mem),
                mem as f64 / table.rib.len().max(1) as f64,
                b.build_ms,
                match reference {
                    None => "n/a",
                    Some(_) if ok[i] => "ok",
                    Some(_) => "WRONG",
                }
            );
            if let (Some(c), true) = (&b.cycles, threads == args.threads[0]) {
                outln!(
                    "{:<16} TSC ticks per 16-key call: mean {:.1}, p50 {}, p75 {}, p90 {}, p99 {}",
                    "",
                    c.mean,
                    c.p50,
                    c.p75,
                    c.p90,
                    c.p99
                );
            }
            records.push(Record {
                scheme: b.name.to_string(),
                implementation: b.fib.implementation().to_string(),
                family: family.to_string(),
                table: table.name.clone(),
                routes: table.rib.len(),
                pattern: pattern.to_string(),
                threads,
                keys: args.keys,
                batch: args.batch,
                ways: b.way,
                mlps_runs: std::mem::take(&mut runs[i]),
                mlps_median: median,
                memory_bytes: mem,
                build_ms: b.build_ms,
                checksum_ok: reference.map(|_| ok[i]),
                cycles_per_16: b.cycles.clone(),
            });
        }
    }
    Ok(records)
}

fn human_bytes(b: usize) -> String {
    if b >= 10 << 20 {
        format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
    } else if b >= 10 << 10 {
        format!("{:.1} KiB", b as f64 / 1024.0)
    } else {
        format!("{b} B")
    }
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

fn as_v6<A: Address>(rib: &lpmkit::Rib<A>) -> &lpmkit::Rib<u128> {
    (rib as &dyn std::any::Any)
        .downcast_ref::<lpmkit::Rib<u128>>()
        .expect("an IPv6 table")
}

/// Precomputed keys for a pattern.
pub(crate) fn make_keys<A: Address>(
    table: &Table<A>,
    pattern: &Pattern,
    n: usize,
    seed: u64,
) -> anyhow::Result<Vec<A>> {
    Ok(match pattern {
        Pattern::Trace(path) => {
            let addrs: Vec<A> =
                lpmkit::io::read_addresses(path).context("cannot read the trace")?;
            if addrs.is_empty() {
                anyhow::bail!("trace {} holds no {} addresses", path.display(), A::FAMILY);
            }
            // Replay the trace cyclically up to n keys.
            addrs.iter().copied().cycle().take(n).collect()
        }
        synthetic => traffic::keys(synthetic, &table.rib, n, seed)?,
    })
}

/// Settings of just-in-time key generation.
struct JitKeys<'a> {
    v6: bool,
    patterns: &'a [u32],
    seed: u64,
}

/// The checksum of a run: the sum of all answers modulo 2^32 (order-independent, so
/// thread sections do not matter; one wrong answer always changes it, as it changes the
/// sum by less than 2^32). The dependent mode looks up `seq_key(key, previous answer)`,
/// which equals `key`, so its answers are the reference answers too.
fn checksum_of<A: Address>(_keys: &[A], answers: &[u32], _mode: Mode) -> u32 {
    sum_answers(answers)
}

/// The sum of `answers` modulo 2^32: what the timed loops add per batch. Summed in 32-bit
/// lanes (it vectorizes without widening), 256 bits wide where the CPU has AVX2, so the
/// harness's share of a run stays small beside the fastest lookups.
#[inline(always)]
fn sum_answers(answers: &[u32]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2.
        return unsafe { sum_answers_avx2(answers) };
    }
    sum_answers_plain(answers)
}

#[inline(always)]
fn sum_answers_plain(answers: &[u32]) -> u32 {
    answers.iter().fold(0u32, |s, &a| s.wrapping_add(a))
}

/// [`sum_answers_plain`] compiled for AVX2.
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sum_answers_avx2(answers: &[u32]) -> u32 {
    sum_answers_plain(answers)
}

/// One timed run; returns (seconds of the slowest thread, checksum).
fn measure<A: Address>(
    fib: &dyn Fib<A>,
    keys: &[A],
    threads: usize,
    batch: usize,
    mode: Mode,
    jit: &JitKeys<'_>,
    total: usize,
) -> (f64, u32) {
    let per = keys.len().div_ceil(threads);
    let barrier = Barrier::new(threads);
    let results: Vec<(f64, u32)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let section = &keys[(t * per).min(keys.len())..((t + 1) * per).min(keys.len())];
                let barrier = &barrier;
                s.spawn(move || {
                    // Two batches of answers (see `Answers`).
                    let mut out = vec![0u32; 2 * batch];
                    barrier.wait();
                    let t0 = Instant::now();
                    let sum = match mode {
                        Mode::Batch => run_batch(fib, section, &mut out),
                        Mode::Dependent => run_dependent(fib, section),
                        Mode::JustInTime => {
                            let n = total.div_ceil(threads);
                            run_jit(fib, n, &mut out, jit, t as u64)
                        }
                    };
                    (t0.elapsed().as_secs_f64(), sum)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let secs = results.iter().map(|r| r.0).fold(0.0, f64::max);
    let sum = results.iter().fold(0u32, |s, r| s.wrapping_add(r.1));
    (secs, sum)
}

/// The answers of the timed loops, in two batch buffers used in turn: each batch's answers
/// are summed after the next batch is looked up, when the lookup's stores have long
/// reached the cache (summing them at once would make the sum's wide loads wait on the
/// narrower stores of some schemes, and not of others).
struct Answers<'a> {
    this: &'a mut [u32],
    last: &'a mut [u32],
    /// Answers in `last` not summed yet.
    pending: usize,
    sum: u32,
}

impl<'a> Answers<'a> {
    /// Batches of up to `out.len() / 2` keys.
    fn new(out: &'a mut [u32]) -> Self {
        let (this, last) = out.split_at_mut(out.len() / 2);
        Answers {
            this,
            last,
            pending: 0,
            sum: 0,
        }
    }

    /// The most keys per batch.
    fn batch(&self) -> usize {
        self.this.len()
    }

    /// Looks `keys` (at most [`batch`](Self::batch)) up, and sums the batch before.
    #[inline(always)]
    fn look_up<A: Address>(&mut self, fib: &dyn Fib<A>, keys: &[A]) {
        fib.lookup_batch(keys, &mut self.this[..keys.len()]);
        self.sum = self
            .sum
            .wrapping_add(sum_answers(&self.last[..self.pending]));
        self.pending = keys.len();
        core::mem::swap(&mut self.this, &mut self.last);
    }

    /// The sum of every answer.
    fn sum(self) -> u32 {
        self.sum
            .wrapping_add(sum_answers(&self.last[..self.pending]))
    }
}

/// Looks `keys` up in batches of `out.len() / 2` (see [`Answers`]); returns their sum.
#[inline(never)]
fn run_batch<A: Address>(fib: &dyn Fib<A>, keys: &[A], out: &mut [u32]) -> u32 {
    let mut answers = Answers::new(out);
    for chunk in keys.chunks(answers.batch()) {
        answers.look_up(fib, chunk);
    }
    answers.sum()
}

#[inline(never)]
fn run_dependent<A: Address>(fib: &dyn Fib<A>, keys: &[A]) -> u32 {
    let mut sum = 0u32;
    let mut prev = 0u32;
    for &k in keys {
        let key = traffic::seq_key(k, prev);
        prev = NextHop::raw(fib.lookup(key));
        sum = sum.wrapping_add(prev);
    }
    sum
}

#[inline(never)]
fn run_jit<A: Address>(
    fib: &dyn Fib<A>,
    n: usize,
    out: &mut [u32],
    jit: &JitKeys<'_>,
    thread: u64,
) -> u32 {
    let mut lcg = Lcg::new(jit.seed.wrapping_add(thread.wrapping_mul(0x9e37_79b9)));
    let mut answers = Answers::new(out);
    let mut left = n;
    let b = answers.batch();
    let mut k4 = vec![0u32; b];
    let mut k6 = vec![0u128; if jit.v6 { b } else { 0 }];
    let mut ka: Vec<A> = vec![A::ZERO; b];
    while left > 0 {
        let m = left.min(b);
        if jit.v6 {
            lcg.fill_v6_matching(jit.patterns, &mut k6[..m]);
            for (d, &s) in ka.iter_mut().zip(&k6[..m]) {
                *d = A::from_u128(s);
            }
        } else if A::BITS == 32 {
            lcg.fill_v4(&mut k4[..m]);
            for (d, &s) in ka.iter_mut().zip(&k4[..m]) {
                *d = A::from_u128(s as u128);
            }
        } else {
            for d in ka[..m].iter_mut() {
                let hi = (lcg.next_u32() as u128) << 96 | (lcg.next_u32() as u128) << 64;
                *d = A::from_u128(hi | (lcg.next_u32() as u128) << 32 | lcg.next_u32() as u128);
            }
        }
        answers.look_up(fib, &ka[..m]);
        left -= m;
    }
    answers.sum()
}

/// TSC ticks of each 16-key `lookup_batch` call over the first 2^20 keys.
fn measure_cycles<A: Address>(fib: &dyn Fib<A>, keys: &[A]) -> Cycles {
    let n = keys.len().min(1 << 20) / 16;
    let mut out = [0u32; 16];
    let overhead = {
        let mut v: Vec<u64> = (0..1000)
            .map(|_| {
                let t0 = tsc();
                let t1 = tsc();
                t1.saturating_sub(t0)
            })
            .collect();
        v.sort_unstable();
        v[v.len() / 2]
    };
    let mut ticks: Vec<u64> = Vec::with_capacity(n);
    for i in 0..n {
        let k = &keys[i * 16..i * 16 + 16];
        let t0 = tsc();
        fib.lookup_batch(k, &mut out);
        let t1 = tsc();
        std::hint::black_box(&out);
        ticks.push(t1.saturating_sub(t0).saturating_sub(overhead));
    }
    let mean = ticks.iter().sum::<u64>() as f64 / ticks.len().max(1) as f64;
    ticks.sort_unstable();
    let pct = |p: f64| {
        ticks
            .get(((ticks.len() as f64 * p) as usize).min(ticks.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0)
    };
    Cycles {
        mean,
        p50: pct(0.50),
        p75: pct(0.75),
        p90: pct(0.90),
        p99: pct(0.99),
    }
}

/// The time-stamp counter, serialized so the measured call cannot move across it.
#[inline(always)]
fn tsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: lfence and rdtsc are available on every x86-64 CPU and have no memory effects.
    unsafe {
        core::arch::x86_64::_mm_lfence();
        let t = core::arch::x86_64::_rdtsc();
        core::arch::x86_64::_mm_lfence();
        t
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        use std::sync::OnceLock;
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::cpu_name;

    #[test]
    fn cpu_names_carry_family_and_model() {
        let zen3 = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n\
                    model name\t: AMD EPYC\n\nprocessor\t: 1\ncpu family\t: 26\nmodel\t\t: 2\n";
        assert_eq!(
            cpu_name(zen3).as_deref(),
            Some("AMD EPYC (family 25, model 1)")
        );
        let arm = "processor\t: 0\nmodel name\t: ARMv8 Processor rev 1 (v8l)\n";
        assert_eq!(
            cpu_name(arm).as_deref(),
            Some("ARMv8 Processor rev 1 (v8l)")
        );
        assert_eq!(cpu_name("processor\t: 0\nBogoMIPS\t: 50.00\n"), None);
    }
}
