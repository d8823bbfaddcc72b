//! `lpmkit follow`: keep schemes in sync with a kernel routing table over rtnetlink and
//! report what changed, the publication latency and the table size; `--check N` compares
//! N addresses with the kernel's own answer after each burst; `--churn TRACE --rate R`
//! drives the kernel table with a replayed update trace at R changes/s (the latency
//! measurement).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use lpmkit::netlink::{
    compare, ifindex, Follower, KernelSync, Origin, RouteEdit, RouteQuery, RouteTarget,
    RouteWriter, SyncOptions, Verdict, Visible,
};
use lpmkit::{traffic, Address, BuildOptions, Change, Family, Ipv4, Ipv6, NextHop, NextHopTable};

use crate::input::{self, FamilyArg};

#[derive(Args, Debug)]
pub struct FollowArgs {
    /// The network namespace (a name as `ip netns` lists it, or a path); default: this
    /// process's.
    #[arg(long)]
    netns: Option<String>,

    /// The routing table id (254 = main).
    #[arg(long = "table-id", default_value_t = 254)]
    table_id: u32,

    /// The address family to follow.
    #[arg(long, value_enum, default_value = "v4")]
    family: FamilyArg,

    /// Schemes to keep in sync (comma-separated names or prefixes). For latency figures
    /// give one: schemes share this thread, each waits for the ones before it.
    #[arg(long, short = 's', default_value = "spider16w")]
    schemes: String,

    /// Hold time of rebuilt schemes, in milliseconds: changes within it cost one rebuild.
    #[arg(long, default_value_t = 10)]
    hold_ms: u64,

    /// After each burst (once quiet), look up this many random addresses and compare
    /// with the kernel's answer (RTM_GETROUTE, as `ip route get`).
    #[arg(long, default_value_t = 0, value_name = "N")]
    check: usize,

    /// Stop after this many seconds (0: run until interrupted; with --churn: until the
    /// churn ends).
    #[arg(long, default_value_t = 0.0)]
    duration: f64,

    /// Drive the table: replay this update trace into the kernel (`replace` via the
    /// trace's next hop on --dev, `del`), paced at --rate.
    #[arg(long, value_name = "TRACE")]
    churn: Option<PathBuf>,

    /// Changes per second of --churn.
    #[arg(long, default_value_t = 1000.0)]
    rate: f64,

    /// At most this many churn changes (0: the whole trace).
    #[arg(long, default_value_t = 0)]
    changes: usize,

    /// The interface the churn routes point to (`via NH dev DEV onlink`).
    #[arg(long, default_value = "v0")]
    dev: String,

    /// Print one line per publication (default: one per second).
    #[arg(long)]
    verbose: bool,
}

pub fn run(args: FollowArgs) -> anyhow::Result<ExitCode> {
    match Family::from(args.family) {
        Family::V4 => follow::<Ipv4>(&args),
        Family::V6 => follow::<Ipv6>(&args),
    }
}

/// Per-scheme bookkeeping.
struct Followed<A: Address> {
    f: Follower<A>,
    /// Changes applied but not yet visible: (received, origin).
    waiting: Vec<(Instant, Origin)>,
    latencies_ms: Vec<f64>,
    publications: usize,
    work_ms: Vec<f64>,
}

/// Send times of the churn generator's requests (ns since `t0`), by sequence number.
struct Churn {
    port: u32,
    sent_ns: Vec<AtomicU64>,
    done: AtomicBool,
    sent: AtomicU64,
}

fn follow<A: Address>(args: &FollowArgs) -> anyhow::Result<ExitCode> {
    let opts = SyncOptions {
        netns: args.netns.clone(),
        table: args.table_id,
        ..Default::default()
    };
    let t0 = Instant::now();
    let mut sync = KernelSync::<A>::open(&opts).context("cannot follow the kernel table")?;
    println!(
        "dumped table {} ({}{}): {} prefixes, {} kernel routes, {} distinct next hops in {:.0} ms",
        args.table_id,
        A::FAMILY,
        args.netns
            .as_deref()
            .map(|n| format!(", netns {n}"))
            .unwrap_or_default(),
        sync.rib().len(),
        sync.routes().route_count(),
        sync.next_hops().len(),
        t0.elapsed().as_secs_f64() * 1e3
    );
    report_unrepresentable(&sync);
    let hold = Duration::from_millis(args.hold_ms);
    let mut followed = Vec::new();
    for info in input::schemes(&args.schemes, A::FAMILY)? {
        let t = Instant::now();
        let f = Follower::new(info, sync.rib().clone(), &BuildOptions::default(), hold)?;
        println!(
            "{:<10} {} ({}), built in {:.0} ms, {:.2} MiB",
            info.name,
            f.model(),
            if f.model() == "rebuild" {
                format!("hold {} ms", args.hold_ms)
            } else {
                "every batch visible on apply".to_string()
            },
            t.elapsed().as_secs_f64() * 1e3,
            f.memory_bytes() as f64 / 1048576.0
        );
        followed.push(Followed {
            f,
            waiting: Vec::new(),
            latencies_ms: Vec::new(),
            publications: 0,
            work_ms: Vec::new(),
        });
    }
    let mut query = if args.check > 0 {
        Some(RouteQuery::open(args.netns.as_deref())?)
    } else {
        None
    };
    let churn = match &args.churn {
        Some(trace) => Some(start_churn::<A>(args, trace)?),
        None => None,
    };
    let start = Instant::now();
    let end = (args.duration > 0.0).then(|| start + Duration::from_secs_f64(args.duration));
    let mut next_report = start + Duration::from_secs(1);
    let mut since_report = 0usize;
    let mut last_change: Option<Instant> = None;
    let mut checked_after = true;
    let mut mismatches = 0usize;
    let mut key_seed = 1u64;
    loop {
        let now = Instant::now();
        if end.is_some_and(|e| now >= e) {
            break;
        }
        let churn_over = churn
            .as_ref()
            .is_some_and(|c| c.0.done.load(Ordering::Acquire));
        if churn_over && followed.iter().all(|x| x.f.pending() == 0) {
            // Let the last notifications arrive.
            let late = sync.poll(Some(Duration::from_millis(200)))?;
            if late.is_empty() {
                break;
            }
            apply_all(
                &mut followed,
                &late,
                churn.as_ref().map(|c| &*c.0),
                args.verbose,
            )?;
            continue;
        }
        let mut wake = next_report;
        for x in &followed {
            if let Some(d) = x.f.deadline() {
                wake = wake.min(d);
            }
        }
        if !checked_after && query.is_some() {
            wake = wake.min(last_change.unwrap() + hold + Duration::from_millis(50));
        }
        if let Some(e) = end {
            wake = wake.min(e);
        }
        let received = sync.poll(Some(wake.saturating_duration_since(Instant::now())))?;
        if !received.is_empty() {
            since_report += received.len();
            last_change = Some(Instant::now());
            checked_after = false;
        }
        apply_all(
            &mut followed,
            &received,
            churn.as_ref().map(|c| &*c.0),
            args.verbose,
        )?;
        for x in &mut followed {
            if let Some(v) = x.f.poll()? {
                publish(x, v, churn.as_ref().map(|c| &*c.0), args.verbose);
            }
        }
        let now = Instant::now();
        if let (Some(q), false) = (query.as_mut(), checked_after) {
            let quiet = last_change.is_some_and(|t| now >= t + hold + Duration::from_millis(50));
            if quiet && followed.iter().all(|x| x.f.pending() == 0) && churn.is_none() {
                mismatches += check(&sync, &followed, q, args.check, key_seed)?;
                key_seed += 1;
                checked_after = true;
            }
        }
        if now >= next_report {
            let s = sync.stats();
            let mut line = format!(
                "{:>6.1} s  +{since_report} changes ({} msgs, {} resyncs), {} prefixes",
                (now - start).as_secs_f64(),
                s.table_messages,
                s.resyncs,
                sync.rib().len()
            );
            for x in &followed {
                line.push_str(&format!(
                    " | {} gen {} p50 {:.2} ms",
                    x.f.name(),
                    x.publications,
                    percentile(&x.latencies_ms, 0.5)
                ));
            }
            println!("{line}");
            since_report = 0;
            next_report = now + Duration::from_secs(1);
        }
    }
    for x in &mut followed {
        if let Some(v) = x.f.flush()? {
            publish(x, v, churn.as_ref().map(|c| &*c.0), args.verbose);
        }
    }
    if let Some((c, handle)) = churn {
        c.done.store(true, Ordering::Release);
        let writer = handle.join().expect("churn thread")?;
        println!(
            "churn: {} changes sent at {:.0}/s target ({} acknowledged, {} refused by the kernel)",
            c.sent.load(Ordering::Relaxed),
            args.rate,
            writer.acked,
            writer.refused
        );
        if let Some(q) = query.as_mut() {
            mismatches += check(&sync, &followed, q, args.check, key_seed)?;
        }
    }
    let s = sync.stats();
    println!(
        "followed {:.1} s: {} notifications of table {}, {} changes to best routes, {} re-dumps after lost notifications; {} prefixes",
        start.elapsed().as_secs_f64(),
        s.table_messages,
        args.table_id,
        s.changes,
        s.resyncs,
        sync.rib().len()
    );
    report_unrepresentable(&sync);
    println!(
        "{:<10} {:>8} {:>7} {:>9} {:>9} {:>9} {:>9} {:>10}   (latency: {})",
        "scheme",
        "model",
        "changes",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "max ms",
        "work ms",
        if churn_used(args) {
            "kernel request sent → visible to lookups"
        } else {
            "notification read → visible to lookups"
        }
    );
    for x in &followed {
        let mean_work = x.work_ms.iter().sum::<f64>() / x.work_ms.len().max(1) as f64;
        println!(
            "{:<10} {:>8} {:>7} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>10.3}   ({} publications, {:.2} MiB)",
            x.f.name(),
            x.f.model(),
            x.latencies_ms.len(),
            percentile(&x.latencies_ms, 0.5),
            percentile(&x.latencies_ms, 0.9),
            percentile(&x.latencies_ms, 0.99),
            percentile(&x.latencies_ms, 1.0),
            mean_work,
            x.publications,
            x.f.memory_bytes() as f64 / 1048576.0
        );
    }
    if args.check > 0 {
        println!("checks against the kernel: {mismatches} mismatching answers");
    }
    Ok(if mismatches > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn churn_used(args: &FollowArgs) -> bool {
    args.churn.is_some()
}

fn report_unrepresentable<A: Address>(sync: &KernelSync<A>) {
    let u = sync.unrepresentable();
    if !u.is_empty() {
        let parts: Vec<String> = u.iter().map(|(r, n)| format!("{n} {r}")).collect();
        println!(
            "routes lpmkit cannot represent (not followed): {}",
            parts.join(", ")
        );
    }
}

fn apply_all<A: Address>(
    followed: &mut [Followed<A>],
    received: &[lpmkit::netlink::Received<A>],
    churn: Option<&Churn>,
    verbose: bool,
) -> anyhow::Result<()> {
    if received.is_empty() {
        return Ok(());
    }
    let changes: Vec<Change<A>> = received.iter().map(|r| r.change).collect();
    for x in followed.iter_mut() {
        x.waiting.extend(received.iter().map(|r| (r.at, r.origin)));
        if let Some(v) = x.f.apply(&changes)? {
            publish(x, v, churn, verbose);
        }
    }
    Ok(())
}

/// Records a publication: every waiting change is visible now.
fn publish<A: Address>(x: &mut Followed<A>, v: Visible, churn: Option<&Churn>, verbose: bool) {
    x.publications += 1;
    x.work_ms.push(v.work_ms);
    let mut worst = 0f64;
    for (at, origin) in x.waiting.drain(..) {
        let from = churn
            .filter(|c| origin.port == c.port && origin.port != 0)
            .and_then(|c| c.sent_ns.get(origin.seq as usize))
            .map(|ns| ns.load(Ordering::Acquire))
            .filter(|&ns| ns != 0);
        let ms = match (from, churn) {
            (Some(ns), Some(_)) => {
                let sent = CHURN_T0.get().copied().unwrap() + Duration::from_nanos(ns);
                v.at.saturating_duration_since(sent).as_secs_f64() * 1e3
            }
            _ => v.at.saturating_duration_since(at).as_secs_f64() * 1e3,
        };
        worst = worst.max(ms);
        x.latencies_ms.push(ms);
    }
    if verbose {
        println!(
            "{:<10} generation {}: {} changes visible, work {:.2} ms, oldest waited {:.2} ms",
            x.f.name(),
            v.generation,
            v.changes,
            v.work_ms,
            worst
        );
    }
}

static CHURN_T0: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

type ChurnHandle = std::thread::JoinHandle<anyhow::Result<RouteWriter>>;

/// Starts the churn generator: the trace's changes, paced, as netlink requests whose
/// sequence numbers index the send-time table.
fn start_churn<A: Address>(
    args: &FollowArgs,
    trace: &std::path::Path,
) -> anyhow::Result<(Arc<Churn>, ChurnHandle)> {
    let mut names = NextHopTable::<String>::new();
    let updates = lpmkit::io::read_updates::<A>(trace, &mut names)
        .with_context(|| format!("cannot read {}", trace.display()))?;
    let n = if args.changes > 0 {
        args.changes.min(updates.len())
    } else {
        updates.len()
    };
    let dev = ifindex(args.netns.as_deref(), &args.dev)
        .with_context(|| format!("churn routes go via interface {:?}", args.dev))?;
    let mut edits = Vec::with_capacity(n);
    for u in &updates[..n] {
        edits.push(match u.change {
            Change::Announce(p, nh) => {
                let gw = names
                    .value(nh)
                    .and_then(|s| s.parse().ok())
                    .with_context(|| format!("next hop {:?} is not an address", names.value(nh)))?;
                RouteEdit::Replace(p, RouteTarget::via(gw, dev))
            }
            Change::Withdraw(p) => RouteEdit::Delete(p),
        });
    }
    let mut writer = RouteWriter::open(args.netns.as_deref(), args.table_id)?;
    let c = Arc::new(Churn {
        port: writer.port(),
        sent_ns: (0..=n).map(|_| AtomicU64::new(0)).collect(),
        done: AtomicBool::new(false),
        sent: AtomicU64::new(0),
    });
    let t0 = *CHURN_T0.get_or_init(Instant::now);
    let rate = args.rate.max(1.0);
    println!("churn: {n} changes from {} at {rate:.0}/s", trace.display());
    let shared = Arc::clone(&c);
    let handle = std::thread::spawn(move || -> anyhow::Result<RouteWriter> {
        let start = Instant::now();
        for (i, e) in edits.iter().enumerate() {
            if shared.done.load(Ordering::Relaxed) {
                break;
            }
            let due = start + Duration::from_secs_f64(i as f64 / rate);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            let seq = i as u32 + 1;
            let ns = t0.elapsed().as_nanos() as u64;
            shared.sent_ns[seq as usize].store(ns.max(1), Ordering::Release);
            writer.send(e, seq)?;
            shared.sent.fetch_add(1, Ordering::Relaxed);
            if i % 64 == 0 {
                writer.drain()?;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
        writer.drain()?;
        shared.done.store(true, Ordering::Release);
        Ok(writer)
    });
    Ok((c, handle))
}

/// Compares every follower with the kernel on `n` random addresses; returns the number
/// of mismatching answers (and prints the first ones).
fn check<A: Address>(
    sync: &KernelSync<A>,
    followed: &[Followed<A>],
    query: &mut RouteQuery,
    n: usize,
    seed: u64,
) -> anyhow::Result<usize> {
    let pattern = match A::FAMILY {
        Family::V4 => traffic::Pattern::Rnd,
        Family::V6 => traffic::Pattern::V6Match,
    };
    let keys = if sync.rib().is_empty() {
        traffic::uniform::<A>(n, seed)
    } else {
        traffic::keys::<A>(&pattern, sync.rib(), n, seed)?
    };
    let answers = query.get_many(&keys)?;
    let table = sync.options().table;
    let mut out = vec![0u32; keys.len()];
    let mut total = 0;
    for x in followed {
        x.f.reader().lookup_batch(&keys, &mut out);
        let (mut agree, mut skip, mut differ) = (0, 0, 0);
        for ((&k, &o), a) in keys.iter().zip(&out).zip(&answers) {
            let ours = NextHop::new(o).and_then(|nh| sync.target(nh));
            match compare(a, ours, table) {
                Verdict::Agree => agree += 1,
                Verdict::Skip => skip += 1,
                Verdict::Differ => {
                    differ += 1;
                    if differ <= 3 {
                        println!(
                            "  MISMATCH {} {}: kernel {a:?}, lpmkit {}",
                            x.f.name(),
                            lpmkit::prefix::format_addr(k),
                            ours.map_or("no route".to_string(), |t| t.to_string())
                        );
                    }
                }
            }
        }
        println!(
            "check {}: {agree} of {} addresses equal the kernel's answer, {skip} answered by another table, {differ} differ",
            x.f.name(),
            keys.len()
        );
        total += differ;
    }
    Ok(total)
}

fn percentile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    s[((s.len() - 1) as f64 * q).round() as usize]
}
