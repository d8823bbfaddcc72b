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
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use lpmkit::simd::roofline;
use lpmkit::traffic::Pattern;
use lpmkit::{Address, AnyTable, Family, Fib, Table};
use serde::Serialize;

use crate::bounds;
use crate::input::{self, FamilyArg, TableArgs};
use crate::output::outln;
use crate::output::OutputFile;
use crate::progress;

mod keys;
mod timing;

pub(crate) use keys::make_keys;
use keys::{trace_addresses, Keys};

/// The most keys `--keys` asks for.
pub const MAX_KEYS: u64 = 1 << 32;
/// The most threads a thread count may ask for.
pub const MAX_THREADS: u64 = 1024;
/// The largest `--batch`.
pub const MAX_BATCH: u64 = 1 << 16;
/// The largest degree of SIMD parallelism `--ways` sweeps (Spider's lanes, the one scheme
/// with a degree of parallelism: 1 to 16).
const MAX_WAYS: usize = 16;
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
    /// a range `1..16` or a list `1,8,16`, each 1 to 16.
    #[arg(long, value_name = "WAYS")]
    ways: Option<String>,

    /// Also measure TSC ticks per 16-key `lookup_batch` call (mean and percentiles).
    #[arg(long)]
    cycles: bool,

    /// Also measure every scheme with each call's keys in the cache before the call (as a
    /// data plane's just-received burst is; by default each call's keys come from memory),
    /// timing the calls alone: the `hot Mlps` column.
    #[arg(long)]
    hot_keys: bool,

    /// Leave out the memory system's limits (the `1-read` and `% roof` columns and the
    /// `stream` line), measured by default beside every scheme on the same keys.
    #[arg(long)]
    no_roofline: bool,

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
    /// One random read per key into an array of this scheme's size (Mlps, median).
    roof_read_mlps: Option<f64>,
    /// `mlps_median` over `roof_read_mlps`.
    roof_share: Option<f64>,
    /// The keys streamed and an answer written per key (Mlps, median; every row alike).
    roof_stream_mlps: Option<f64>,
    /// With each call's keys in the cache (`--hot-keys`).
    hot_mlps_runs: Option<Vec<f64>>,
    hot_mlps_median: Option<f64>,
}

pub fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let json = OutputFile::create_opt("--json", args.json.as_deref())?;
    let records = load_and_bench(&args)?;
    finish(json, &records)
}

/// Loads the table and measures. A synthetic table is generated after a `trace:` pattern's
/// addresses are read, so a trace that cannot be read ends the run before the table's
/// memory is spent.
fn load_and_bench(args: &BenchArgs) -> anyhow::Result<Vec<Record>> {
    if let (None, Some(Pattern::Trace(path))) = (&args.table.table, &args.pattern) {
        return match args.table.synthetic.unwrap_or(FamilyArg::V4) {
            FamilyArg::V4 => {
                let addrs = trace_addresses::<u32>(path)?;
                match &input::load(&args.table)? {
                    AnyTable::V4(t) => bench(t, args, Some(addrs)),
                    AnyTable::V6(_) => unreachable!("a synthetic IPv4 table is IPv4"),
                }
            }
            FamilyArg::V6 => {
                let addrs = trace_addresses::<u128>(path)?;
                match &input::load(&args.table)? {
                    AnyTable::V6(t) => bench(t, args, Some(addrs)),
                    AnyTable::V4(_) => unreachable!("a synthetic IPv6 table is IPv6"),
                }
            }
        };
    }
    match &input::load(&args.table)? {
        AnyTable::V4(t) => bench(t, args, None),
        AnyTable::V6(t) => bench(t, args, None),
    }
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
            hot_keys: false,
            no_roofline: false,
            jit: false,
            isa: input::IsaArgs::default(),
            isa_sweep: Vec::new(),
            seed: 1,
            json: None,
        };
        all.extend(load_and_bench(&args)?);
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
    load_and_bench(&one.args)
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
    /// `lookup_batch` over precomputed keys, each call's keys in the cache before it
    /// (`--hot-keys`): the calls alone are timed.
    HotBatch,
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

/// Measures every scheme on `table`; `trace` holds a `trace:` pattern's addresses when they
/// were read before the table.
fn bench<A: Address>(
    table: &Table<A>,
    args: &BenchArgs,
    trace: Option<Vec<A>>,
) -> anyhow::Result<Vec<Record>> {
    let plan = Plan::new::<A>(args)?;
    let keys = Keys::make(table, &plan, args, trace)?;
    print_header(table, &plan, args);
    let built = build_all(table, &plan, args, &keys.keys)?;
    let roofs = Roofs::new(&built, &plan, args);
    let mut records = Vec::new();
    for &threads in &args.threads {
        let (measured, stream) =
            measure_alternated(&built, roofs.as_ref(), &keys, threads, &plan, args);
        records.extend(report(
            table, &plan, &built, measured, &stream, threads, args,
        ));
    }
    Ok(records)
}

/// What a `bench` run measures, checked before any key is made.
struct Plan {
    /// The schemes, the baseline first.
    schemes: Vec<&'static lpmkit::registry::SchemeInfo>,
    pattern: Pattern,
    mode: Mode,
    /// The degrees of parallelism of `--ways`.
    ways: Option<Vec<usize>>,
}

impl Plan {
    fn new<A: Address>(args: &BenchArgs) -> anyhow::Result<Plan> {
        let family = A::FAMILY;
        let mut schemes = input::schemes(&args.schemes, family)?;
        args.settings.check(&schemes)?;
        // The ratio column compares with --baseline (by default DIR-24-8, the papers'
        // common baseline) when it is measured, else with the first scheme: measure it first.
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
        Ok(Plan {
            schemes,
            pattern,
            mode,
            ways,
        })
    }
}

fn print_header<A: Address>(table: &Table<A>, plan: &Plan, args: &BenchArgs) {
    outln!(
        "# {} ({}, {} routes), pattern {}{}, {} keys, batch {}, median of {} runs; cpu: {}, isa: {}",
        table.name,
        A::FAMILY,
        table.rib.len(),
        plan.pattern,
        if args.jit { " (just-in-time LCG)" } else { "" },
        args.keys,
        args.batch,
        args.runs,
        cpu_model(),
        args.isa.describe(),
    );
    outln!(
        "{:<16} {:>6} {:>3} {:>9} {:>17} {:>11} {:>10} {:>8} {:>9}  check{}{}",
        "scheme",
        "code",
        "thr",
        "Mlps",
        "runs min..max",
        format!("vs {}", plan.schemes[0].name),
        "memory",
        "B/pfx",
        "build ms",
        if !args.no_roofline && plan.mode == Mode::Batch {
            "    1-read  % roof"
        } else {
            ""
        },
        if args.hot_keys && plan.mode == Mode::Batch {
            "   hot Mlps"
        } else {
            ""
        },
    );
    if !args.no_roofline && plan.mode == Mode::Batch {
        outln!(
            "# 1-read: one random read per key (vector gathers) into an array of the scheme's size, the same keys; % roof: Mlps of that"
        );
    }
}

/// One table measured: a scheme under one degree of parallelism and one ISA ceiling.
struct Built<A: Address> {
    name: &'static str,
    label: String,
    way: Option<usize>,
    fib: Box<dyn lpmkit::Fib<A>>,
    build_ms: f64,
    cycles: Option<Cycles>,
}

/// Builds every scheme under every degree of parallelism (`--ways`) and ISA ceiling
/// (`--isa-sweep`) first, so they can then be measured in alternation. A scheme appears
/// once per distinct code path; a refused build is reported and ends that scheme's sweep
/// (a setting out of its range is an error).
fn build_all<A: Address>(
    table: &Table<A>,
    plan: &Plan,
    args: &BenchArgs,
    keys: &[A],
) -> anyhow::Result<Vec<Built<A>>> {
    let sweep: Vec<Option<usize>> = match &plan.ways {
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
    let mut built: Vec<Built<A>> = Vec::new();
    for &info in &plan.schemes {
        for (way, isa) in sweep
            .iter()
            .flat_map(|&w| isas.iter().map(move |&i| (w, i)))
        {
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
                    input::refused(info.name, &e)?;
                    break;
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
            if way.is_some() && !honours_ways && way != sweep[0] {
                continue;
            }
            let way = way.filter(|_| honours_ways);
            let label = match way {
                Some(w) => format!("{}@{w}w", info.name),
                None => info.name.to_string(),
            };
            let cycles = (args.cycles && plan.mode == Mode::Batch)
                .then(|| timing::measure_cycles(&*fib, keys));
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
    Ok(built)
}

/// What `--runs` runs measured of one table on one thread count.
struct Measured {
    /// Mlps per run.
    rates: Vec<f64>,
    /// Every run gave the reference answers.
    ok: bool,
    /// The one-read stand-in of the table's size, per run (empty without the roofline).
    roof: Vec<f64>,
    /// With each call's keys in the cache, per run (empty without `--hot-keys`).
    hot: Vec<f64>,
}

/// The stand-ins of the roofline ([`lpmkit::simd::roofline`]): one per table measured, of
/// its size, and the stream.
struct Roofs<A: Address> {
    reads: Vec<roofline::OneRead>,
    stream: roofline::Stream,
    _family: std::marker::PhantomData<A>,
}

impl<A: Address> Roofs<A> {
    /// The roofline of `built`, unless `--no-roofline` or keys that are not looked up in
    /// batches (the dependent and just-in-time modes).
    fn new(built: &[Built<A>], plan: &Plan, args: &BenchArgs) -> Option<Self> {
        if args.no_roofline || plan.mode != Mode::Batch || built.is_empty() {
            return None;
        }
        let largest = built.iter().map(|b| b.fib.memory_bytes()).max()?;
        let pb = progress::spinner(format!("roofline: an array of {}", human_bytes(largest)));
        let array = roofline::OneRead::array(largest);
        pb.finish_and_clear();
        Some(Roofs {
            reads: built
                .iter()
                .map(|b| roofline::OneRead::new(array.clone(), b.fib.memory_bytes()))
                .collect(),
            stream: roofline::Stream::new(),
            _family: std::marker::PhantomData,
        })
    }
}

/// The rates (Mlps) of `--runs` runs of every table on `threads` threads, measured in
/// alternation — run 1 of every table, run 2 of every table, … — so that the host's slow
/// and fast phases fall on all of them alike and the ratios are fair; each table's
/// roofline stand-in and its hot-keys run right after it; the stream's rates last.
fn measure_alternated<A: Address>(
    built: &[Built<A>],
    roofs: Option<&Roofs<A>>,
    keys: &Keys<A>,
    threads: usize,
    plan: &Plan,
    args: &BenchArgs,
) -> (Vec<Measured>, Vec<f64>) {
    let jit = keys.jit(plan);
    let run = |fib: &dyn Fib<A>, mode: Mode| {
        let (secs, sum) =
            timing::measure(fib, &keys.keys, threads, args.batch, mode, &jit, args.keys);
        (args.keys as f64 / secs / 1e6, sum)
    };
    let hot = args.hot_keys && plan.mode == Mode::Batch;
    let mut measured: Vec<Measured> = built
        .iter()
        .map(|_| Measured {
            rates: Vec::with_capacity(args.runs),
            ok: true,
            roof: Vec::new(),
            hot: Vec::new(),
        })
        .collect();
    let mut stream = Vec::new();
    let pb = progress::bar(
        (args.runs * built.len()) as u64,
        format!(
            "{} schemes x{threads}, {} runs each",
            built.len(),
            args.runs
        ),
    );
    for round in 0..args.warmup + args.runs {
        let timed = round >= args.warmup;
        for (i, (b, m)) in built.iter().zip(&mut measured).enumerate() {
            let (rate, sum) = run(&*b.fib, plan.mode);
            let roof = roofs.map(|r| run(&r.reads[i], Mode::Batch).0);
            let hot = hot.then(|| run(&*b.fib, Mode::HotBatch));
            if !timed {
                continue;
            }
            m.rates.push(rate);
            if let Some(r) = keys.reference {
                m.ok &= sum == r && hot.is_none_or(|(_, sum)| sum == r);
            }
            m.roof.extend(roof);
            m.hot.extend(hot.map(|(rate, _)| rate));
            pb.inc(1);
        }
        if let (Some(r), true) = (roofs, timed) {
            stream.push(run(&r.stream, Mode::Batch).0);
        }
    }
    pb.finish_and_clear();
    (measured, stream)
}

/// Prints one row per table measured on `threads` threads and returns their records.
fn report<A: Address>(
    table: &Table<A>,
    plan: &Plan,
    built: &[Built<A>],
    measured: Vec<Measured>,
    stream: &[f64],
    threads: usize,
    args: &BenchArgs,
) -> Vec<Record> {
    let checked = plan.mode != Mode::JustInTime;
    let baseline = median(&measured[0].rates);
    let stream = (!stream.is_empty()).then(|| median(stream));
    let mut records = Vec::with_capacity(built.len());
    for (b, m) in built.iter().zip(measured) {
        let median = median(&m.rates);
        let mem = b.fib.memory_bytes();
        let (lo, hi) = m
            .rates
            .iter()
            .fold((f64::MAX, 0f64), |(l, h), &v| (l.min(v), h.max(v)));
        let roof = (!m.roof.is_empty()).then(|| self::median(&m.roof));
        let hot = (!m.hot.is_empty()).then(|| self::median(&m.hot));
        let mut extra = String::new();
        if let Some(r) = roof {
            extra += &format!(" {r:>9.1} {:>6.0}%", 100.0 * median / r);
        }
        if let Some(h) = hot {
            extra += &format!(" {h:>9.1}");
        }
        outln!(
            "{:<16} {:>6} {:>3} {:>9.1} {:>8.1}..{:<8.1} {:>10.2}x {:>10} {:>8.2} {:>9.1}  {:<5}{extra}",
            b.label,
            b.fib.implementation().to_string(),
            threads,
            median,
            lo,
            hi,
            median / baseline,
            human_bytes(mem),
            mem as f64 / table.rib.len().max(1) as f64,
            b.build_ms,
            match (checked, m.ok) {
                (false, _) => "n/a",
                (true, true) => "ok",
                (true, false) => "WRONG",
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
            family: A::FAMILY.to_string(),
            table: table.name.clone(),
            routes: table.rib.len(),
            pattern: plan.pattern.to_string(),
            threads,
            keys: args.keys,
            batch: args.batch,
            ways: b.way,
            mlps_runs: m.rates,
            mlps_median: median,
            memory_bytes: mem,
            build_ms: b.build_ms,
            checksum_ok: checked.then_some(m.ok),
            cycles_per_16: b.cycles.clone(),
            roof_read_mlps: roof,
            roof_share: roof.map(|r| median / r),
            roof_stream_mlps: stream,
            hot_mlps_runs: hot.map(|_| m.hot),
            hot_mlps_median: hot,
        });
    }
    if let Some(s) = stream {
        outln!(
            "{:<16} {:>6} {threads:>3} {s:>9.1}  (the keys read and an answer written per key: the harness's and memory bandwidth's limit)",
            "stream",
            "-",
        );
    }
    records
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
