//! `lpmkit verify`: every scheme against the reference trie.

use std::process::ExitCode;

use clap::Args;
use lpmkit::simd::Isa;
use lpmkit::{traffic, Address, AnyTable, Fib, Implementation, NextHop, Table};

use crate::bounds;
use crate::input::{self, TableArgs};
use crate::output::outln;
use crate::progress;

/// The most random keys `--keys` asks for (answers are indexed by 32 bits, with room for
/// the boundary keys).
const MAX_KEYS: u64 = 1 << 31;

#[derive(Args, Debug)]
pub struct VerifyArgs {
    #[command(flatten)]
    table: TableArgs,

    #[command(flatten)]
    settings: input::SettingsArgs,

    /// Schemes to check (comma-separated names, name prefixes, or `all`).
    #[arg(long, short = 's', default_value = "all")]
    schemes: String,

    /// Random keys, in addition to the boundary keys of every prefix. For IPv6 half are
    /// uniform and half are "matching" keys built from the table's prefixes.
    /// Range: 0 to 2147483648.
    #[arg(long, short = 'k', default_value_t = 1_000_000,
          value_parser = bounds::int::<usize>(0, MAX_KEYS))]
    keys: usize,

    /// Seed of the random keys (any 64-bit value).
    #[arg(long, default_value_t = 1)]
    seed: u64,

    /// Mismatches printed in full. Range: 0 to 1000000.
    #[arg(long, default_value_t = 10, value_parser = bounds::int::<usize>(0, 1_000_000))]
    show: usize,

    /// Each scheme is checked on every code path the CPU has at or below this ceiling
    /// (AVX-512, AVX2, scalar); the ceiling lowers the highest.
    #[command(flatten)]
    isa: input::IsaArgs,
}

/// The ceilings to verify every scheme under, highest first: each level the CPU has at or
/// below `top` (a level the CPU lacks is noted on stderr as skipped).
pub fn isa_paths(top: Isa) -> Vec<Isa> {
    let mut paths = Vec::new();
    for isa in Isa::ALL.into_iter().rev().filter(|&i| i <= top) {
        if isa.supported() {
            paths.push(isa);
        } else {
            eprintln!("note: this CPU has no {isa}; the {isa} code paths are not checked");
        }
    }
    paths
}

pub fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    match input::load(&args.table)? {
        AnyTable::V4(t) => verify(&t, &args),
        AnyTable::V6(t) => verify(&t, &args),
    }
}

/// The verification keys: random ones plus every prefix boundary (first/last ±1).
pub fn verification_keys<A: Address>(table: &Table<A>, n: usize, seed: u64) -> Vec<A> {
    let mut keys: Vec<A> = match A::FAMILY {
        lpmkit::Family::V4 => traffic::uniform::<A>(n, seed),
        lpmkit::Family::V6 => {
            let mut k = traffic::uniform::<A>(n / 2, seed);
            let rib6 = as_v6(&table.rib);
            k.extend(
                traffic::v6_matching(rib6, n - n / 2, seed ^ 0x5eed)
                    .into_iter()
                    .map(|a| A::from_u128(a)),
            );
            k
        }
    };
    keys.extend(traffic::boundary_keys(&table.rib));
    keys
}

/// The IPv6 view of a generic table (only called when `A` is IPv6).
fn as_v6<A: Address>(rib: &lpmkit::Rib<A>) -> &lpmkit::Rib<u128> {
    (rib as &dyn std::any::Any)
        .downcast_ref::<lpmkit::Rib<u128>>()
        .expect("an IPv6 table")
}

/// Reference answers of the trie for `keys`, computed on all cores. The keys are visited
/// in sorted order, so consecutive trie walks share their cached upper levels.
pub fn reference_answers<A: Address>(table: &Table<A>, keys: &[A]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..keys.len() as u32).collect();
    order.sort_unstable_by_key(|&i| keys[i as usize]);
    let mut sorted_answers = vec![0u32; keys.len()];
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = keys.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (idx, w) in order.chunks(chunk).zip(sorted_answers.chunks_mut(chunk)) {
            s.spawn(move || {
                for (o, &i) in w.iter_mut().zip(idx) {
                    *o = NextHop::raw(table.rib.lookup(keys[i as usize]));
                }
            });
        }
    });
    let mut want = vec![0u32; keys.len()];
    for (&i, &a) in order.iter().zip(&sorted_answers) {
        want[i as usize] = a;
    }
    want
}

struct Mismatch {
    scheme: String,
    path: &'static str,
    key: String,
    got: u32,
    want: u32,
}

fn verify<A: Address>(table: &Table<A>, args: &VerifyArgs) -> anyhow::Result<ExitCode> {
    let mut schemes = input::schemes(&args.schemes, A::FAMILY)?;
    args.settings.check(&schemes)?;
    if args.schemes.split(',').all(|s| s.trim() != "trie") {
        // The reference trie is the oracle; checking it against itself proves nothing.
        schemes.retain(|s| s.name != "trie");
    }
    if schemes.is_empty() {
        anyhow::bail!("no scheme to verify besides the reference trie");
    }
    bounds::check_memory(&[bounds::Need::items(
        "--keys",
        args.keys as u128 + 4 * table.rib.len() as u128,
        // The key, its sort index, the reference and a scheme's answers.
        core::mem::size_of::<A>() as u128 + 16,
        "keys (random and prefix boundaries)",
    )])?;
    let pb = progress::spinner("generating keys and reference answers");
    let keys = verification_keys(table, args.keys, args.seed);
    let want = reference_answers(table, &keys);
    pb.finish_and_clear();

    let mut mismatches: Vec<Mismatch> = Vec::new();
    let mut total_mismatches = 0usize;
    let mut checked = Vec::new();
    let paths = isa_paths(args.isa.ceiling());
    for info in &schemes {
        let mut seen: Vec<Implementation> = Vec::new();
        for &isa in &paths {
            let mut opts = args.isa.options();
            opts.isa = Some(isa);
            let opts = args.settings.apply(info, opts);
            let pb = progress::spinner(format!("building {} ({isa} ceiling)", info.name));
            let fib = info.build(&table.rib, &opts);
            pb.finish_and_clear();
            let fib = match fib {
                Ok(fib) => fib,
                Err(e) => {
                    input::refused(info.name, &e)?;
                    break;
                }
            };
            let path = fib.implementation();
            if seen.contains(&path) {
                continue; // this path was checked under a higher ceiling
            }
            seen.push(path);
            let name = format!("{}[{path}]", info.name);
            let pb = progress::bar(keys.len() as u64, format!("verifying {name}"));
            let n = check(&*fib, &keys, &want, &name, &mut mismatches, args.show, &pb);
            pb.finish_and_clear();
            eprintln!("  {name}: {n} mismatches");
            total_mismatches += n;
            checked.push(name);
        }
    }
    if checked.is_empty() {
        // Every scheme refused the table: nothing was verified (exit status 3, see main).
        outln!(
            "verified nothing: every selected scheme refused the table ({} keys not checked)",
            keys.len()
        );
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "verified {} keys against {}: {} mismatches",
        keys.len(),
        checked.join(","),
        total_mismatches
    );
    for m in &mismatches {
        let key: A = lpmkit::prefix::parse_addr(&m.key).expect("formatted by us");
        let matched = table
            .rib
            .lookup_prefix(key)
            .map_or("no route".to_string(), |(p, _)| format!("matches {p}"));
        outln!(
            "  {} ({}): {} -> got {} want {} ({matched})",
            m.scheme,
            m.path,
            m.key,
            m.got,
            m.want
        );
    }
    Ok(if total_mismatches > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Compares `lookup_batch` (in chunks of several sizes) and `lookup` with `want`.
fn check<A: Address>(
    fib: &dyn Fib<A>,
    keys: &[A],
    want: &[u32],
    name: &str,
    out: &mut Vec<Mismatch>,
    show: usize,
    pb: &indicatif::ProgressBar,
) -> usize {
    let mut n = 0;
    let mut buf = vec![0u32; 4096];
    let record = |i: usize, got: u32, path: &'static str, out: &mut Vec<Mismatch>| {
        if out.len() < show {
            out.push(Mismatch {
                scheme: name.to_string(),
                path,
                key: lpmkit::prefix::format_addr(keys[i]),
                got,
                want: want[i],
            });
        }
    };
    // Vary the batch length so that every tail length of a SIMD kernel is exercised.
    let mut start = 0;
    let mut len = 1;
    while start < keys.len() {
        let end = (start + len).min(keys.len());
        let o = &mut buf[..end - start];
        fib.lookup_batch(&keys[start..end], o);
        for (j, &got) in o.iter().enumerate() {
            let i = start + j;
            if got != want[i] {
                n += 1;
                record(i, got, "lookup_batch", out);
            }
            let single = NextHop::raw(fib.lookup(keys[i]));
            if single != want[i] {
                n += 1;
                record(i, single, "lookup", out);
            }
        }
        pb.inc((end - start) as u64);
        start = end;
        len = (len * 2 + 1).min(4096);
    }
    n
}
