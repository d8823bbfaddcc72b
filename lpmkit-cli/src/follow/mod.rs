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
    compare, ifindex, Follower, KernelSync, Received, RouteEdit, RouteQuery, RouteTarget,
    RouteWriter, SyncOptions, Verdict,
};
use lpmkit::sync::UpdateModel;
use lpmkit::{traffic, Address, BuildOptions, Change, Family, Ipv4, Ipv6, NextHop, NextHopTable};

use crate::bounds;
use crate::input::{self, FamilyArg};
use crate::output::outln;

mod followed;

use followed::{Churn, Followed, CHURN_T0};

#[derive(Args, Debug)]
pub struct FollowArgs {
    /// The network namespace (a name as `ip netns` lists it, or a path); default: this
    /// process's.
    #[arg(long)]
    netns: Option<String>,

    /// The routing table id (254 = main). Range: 1 to 4294967295.
    #[arg(long = "table-id", default_value_t = 254, value_parser = bounds::int::<u32>(1, u32::MAX as u64))]
    table_id: u32,

    /// The address family to follow.
    #[arg(long, value_enum, default_value = "v4")]
    family: FamilyArg,

    /// Schemes to keep in sync (comma-separated names or prefixes). Schemes updated in
    /// place share the thread that reads the kernel's notifications (each publishes after
    /// the ones before it in the list); rebuilt schemes rebuild on threads of their own,
    /// so their rebuilds hold back neither the others nor the reading.
    #[arg(long, short = 's', default_value = "spider16w")]
    schemes: String,

    /// Hold time of rebuilt schemes, in milliseconds: changes within it cost one rebuild.
    /// Range: 0 to 3600000.
    #[arg(long, default_value_t = 10, value_parser = bounds::int::<u64>(0, 3_600_000))]
    hold_ms: u64,

    /// Once the table is quiet (no notification for --quiet-ms, nothing pending), look
    /// up this many random addresses and compare with the kernel's answer (RTM_GETROUTE,
    /// as `ip route get`); an answer that differs is looked up again after the table has
    /// been quiet once more, and reported only if it still differs. Once at the start,
    /// then after each burst. Range: 0 to 1000000.
    #[arg(long, default_value_t = 0, value_name = "N", value_parser = bounds::int::<usize>(0, 1_000_000))]
    check: usize,

    /// How long the table must be free of notifications before --check looks (ms).
    /// Range: 0 to 60000.
    #[arg(long, default_value_t = 200, value_name = "MS", value_parser = bounds::int::<u64>(0, 60_000))]
    quiet_ms: u64,

    /// Every this many seconds, dump the table again and compare it with what was
    /// followed (the safety net of a daemon); the differences found are counted and
    /// repaired. Range: 0.1 to 86400.
    #[arg(long, value_name = "SECS", value_parser = bounds::float(0.1, 86_400.0, false))]
    reconcile: Option<f64>,

    /// Stop after this many seconds (0: run until interrupted — Ctrl-C prints the
    /// summary; with --churn: until the churn ends). Range: 0 to 1000000000.
    #[arg(long, default_value_t = 0.0, value_name = "SECS", value_parser = bounds::float(0.0, 1e9, false))]
    duration: f64,

    /// Drive the table: replay this update trace into the kernel (`replace` via the
    /// trace's next hop on --dev, `del`), paced at --rate.
    #[arg(long, value_name = "TRACE")]
    churn: Option<PathBuf>,

    /// Changes per second of --churn. Range: 0.01 to 10000000.
    #[arg(long, default_value_t = 1000.0, value_parser = bounds::float(0.01, 1e7, false))]
    rate: f64,

    /// At most this many churn changes (0: the whole trace). Range: 0 to 100000000.
    #[arg(long, default_value_t = 0, value_parser = bounds::int::<usize>(0, MAX_CHURN))]
    changes: usize,

    /// The interface the churn routes point to (`via NH dev DEV onlink`).
    #[arg(long, default_value = "v0")]
    dev: String,

    /// Print one line per publication (default: one per second).
    #[arg(long)]
    verbose: bool,
}

/// The most churn changes (sequence numbers are 32 bits).
const MAX_CHURN: u64 = 100_000_000;

/// The longest the churn thread sleeps before it looks whether the run has ended.
const CHURN_WAKE: Duration = Duration::from_millis(20);

/// Rounds of looking again at answers that differed before one counts.
const CHECK_ROUNDS: u32 = 3;

pub fn run(args: FollowArgs) -> anyhow::Result<ExitCode> {
    match Family::from(args.family) {
        Family::V4 => follow::<Ipv4>(&args),
        Family::V6 => follow::<Ipv6>(&args),
    }
}

/// Set by SIGINT/SIGTERM: stop and print the summary.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Ctrl-C (and SIGTERM) end the run with its summary; a second one ends it at once.
fn catch_stop_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is valid; the handler only stores to an atomic
        // (async-signal-safe); SA_RESETHAND restores the default action after the first
        // signal, so a second one ends the program.
        unsafe {
            let mut sa: libc::sigaction = core::mem::zeroed();
            sa.sa_sigaction = on_stop_signal as extern "C" fn(libc::c_int) as usize;
            sa.sa_flags = libc::SA_RESETHAND;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, core::ptr::null_mut());
        }
    }
}

/// Where `--check` stands.
enum CheckState<A> {
    /// Nothing to check until the table changes.
    Idle,
    /// A check is due once the table is quiet.
    Due,
    /// Answers that differed, looked at again once the table is quiet.
    Suspects {
        keys: Vec<A>,
        round: u32,
        since: Instant,
    },
}

fn follow<A: Address>(args: &FollowArgs) -> anyhow::Result<ExitCode> {
    let opts = SyncOptions {
        netns: args.netns.clone(),
        table: args.table_id,
        ..Default::default()
    };
    let t0 = Instant::now();
    let mut sync = KernelSync::<A>::open(&opts).context("cannot follow the kernel table")?;
    outln!(
        "dumped table {} ({}{}): {} prefixes, {} kernel routes, {} distinct next hops, {} nexthop objects in {:.0} ms",
        args.table_id,
        A::FAMILY,
        args.netns
            .as_deref()
            .map(|n| format!(", netns {n}"))
            .unwrap_or_default(),
        sync.rib().len(),
        sync.routes().route_count(),
        sync.next_hops().len(),
        sync.routes().nexthops().count(),
        t0.elapsed().as_secs_f64() * 1e3
    );
    report_unrepresentable(&sync);
    let hold = Duration::from_millis(args.hold_ms);
    let mut followed = Vec::new();
    for info in input::schemes(&args.schemes, A::FAMILY)? {
        let t = Instant::now();
        let f = Follower::new(info, sync.rib().clone(), &BuildOptions::default(), hold)?;
        outln!(
            "{:<10} {} ({}), built in {:.0} ms, {:.2} MiB",
            info.name,
            model_name(f.model()),
            if matches!(f.model(), UpdateModel::Rebuild { .. }) {
                format!("hold {} ms", args.hold_ms)
            } else {
                "every batch visible on apply".to_string()
            },
            t.elapsed().as_secs_f64() * 1e3,
            f.memory_bytes() as f64 / 1048576.0
        );
        followed.push(Followed::new(f));
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
    for x in &mut followed {
        x.detach(churn.as_ref().map(|c| Arc::clone(&c.0)), args.verbose);
    }
    catch_stop_signals();
    let start = Instant::now();
    let end = (args.duration > 0.0).then(|| start + Duration::from_secs_f64(args.duration));
    let quiet = Duration::from_millis(args.quiet_ms);
    let reconcile_every = args.reconcile.map(Duration::from_secs_f64);
    let mut next_reconcile = reconcile_every.map(|r| start + r);
    let mut next_report = start + Duration::from_secs(1);
    let mut since_report = 0usize;
    let mut last_change = start;
    // Checks run while no churn drives the table (after it, once).
    let checking = query.is_some() && churn.is_none();
    let mut check_state: CheckState<A> = CheckState::Idle;
    arm(&mut check_state, checking);
    let mut mismatches = 0usize;
    let mut checks = 0usize;
    let mut key_seed = 1u64;
    let mut interrupted = false;
    loop {
        if STOP.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        let now = Instant::now();
        if end.is_some_and(|e| now >= e) {
            break;
        }
        let churn_over = churn
            .as_ref()
            .is_some_and(|c| c.0.done.load(Ordering::Acquire));
        if churn_over && followed.iter().all(|x| x.deadline().is_none()) {
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
            );
            continue;
        }
        let mut wake = next_report;
        for x in &followed {
            if let Some(d) = x.deadline() {
                wake = wake.min(d);
            }
        }
        match &check_state {
            CheckState::Idle => {}
            CheckState::Due => wake = wake.min(last_change + quiet),
            CheckState::Suspects { since, .. } => {
                wake = wake.min((last_change + quiet).max(*since + quiet))
            }
        }
        if let Some(r) = next_reconcile {
            wake = wake.min(r);
        }
        if let Some(e) = end {
            wake = wake.min(e);
        }
        let seen = notifications(&sync);
        let received = sync.poll(Some(wake.saturating_duration_since(Instant::now())))?;
        since_report += received.len();
        // Any notification (a link event that changed nothing followed included) starts
        // a burst: the table is checked once it is quiet again.
        if notifications(&sync) != seen || !received.is_empty() {
            last_change = Instant::now();
            arm(&mut check_state, checking);
        }
        apply_all(
            &mut followed,
            &received,
            churn.as_ref().map(|c| &*c.0),
            args.verbose,
        );
        for x in &mut followed {
            x.poll(churn.as_ref().map(|c| &*c.0), args.verbose);
        }
        let now = Instant::now();
        if next_reconcile.is_some_and(|r| now >= r) {
            let t = Instant::now();
            let drift_before = sync.stats().reconcile_differences;
            let found = sync.reconcile()?;
            outln!(
                "reconciled: table dumped again in {:.0} ms, {} prefixes differed from what was followed",
                t.elapsed().as_secs_f64() * 1e3,
                sync.stats().reconcile_differences - drift_before
            );
            if !found.is_empty() {
                last_change = Instant::now();
                arm(&mut check_state, checking);
            }
            apply_all(
                &mut followed,
                &found,
                churn.as_ref().map(|c| &*c.0),
                args.verbose,
            );
            next_reconcile = reconcile_every.map(|r| Instant::now() + r);
        }
        // Compare with the kernel once the table is quiet: nothing arrived for the quiet
        // time and nothing waits for a hold time.
        let settled = now >= last_change + quiet
            && churn.is_none()
            && followed
                .iter()
                .all(|x| x.pending() == 0 || x.last_error().is_some());
        if let (Some(q), true) = (query.as_mut(), settled) {
            check_state = match std::mem::replace(&mut check_state, CheckState::Idle) {
                CheckState::Idle => CheckState::Idle,
                CheckState::Due => {
                    let keys = check_keys(&sync, args.check, key_seed)?;
                    key_seed += 1;
                    checks += 1;
                    let (diff, _) = check(&sync, &mut followed, q, &keys, true)?;
                    if diff.is_empty() {
                        CheckState::Idle
                    } else {
                        outln!(
                            "  {} answers differ; looking again once the table is quiet",
                            diff.len()
                        );
                        CheckState::Suspects {
                            keys: diff,
                            round: 1,
                            since: now,
                        }
                    }
                }
                CheckState::Suspects { keys, round, since } if now >= since + quiet => {
                    let last = round >= CHECK_ROUNDS;
                    let (diff, n) = check(&sync, &mut followed, q, &keys, last)?;
                    if diff.is_empty() {
                        outln!("  recheck: every answer that differed now agrees");
                        CheckState::Idle
                    } else if last {
                        outln!(
                            "  {} answers still differ after {round} looks with the table quiet",
                            diff.len()
                        );
                        mismatches += n;
                        CheckState::Idle
                    } else {
                        CheckState::Suspects {
                            keys: diff,
                            round: round + 1,
                            since: now,
                        }
                    }
                }
                waiting @ CheckState::Suspects { .. } => waiting,
            };
        }
        if now >= next_report {
            let s = sync.stats();
            let mut line = format!(
                "{:>6.1} s  +{since_report} changes ({} msgs, {} link events, {} resyncs), {} prefixes",
                (now - start).as_secs_f64(),
                s.table_messages,
                s.link_events,
                s.resyncs,
                sync.rib().len()
            );
            for x in &followed {
                {
                    let b = x.book();
                    line.push_str(&format!(
                        " | {} gen {} p50 {:.2} ms",
                        x.name(),
                        b.publications,
                        b.latencies.percentile(0.5)
                    ));
                }
                if x.pending() > 0 && x.last_error().is_some() {
                    line.push_str(&format!(" ({} refused, retrying)", x.pending()));
                }
            }
            outln!("{line}");
            since_report = 0;
            next_report = now + Duration::from_secs(1);
        }
    }
    for x in &mut followed {
        x.flush(churn.as_ref().map(|c| &*c.0), args.verbose);
    }
    if let Some((c, handle)) = churn {
        c.done.store(true, Ordering::Release);
        let writer = handle
            .join()
            .map_err(|_| anyhow::anyhow!("the churn thread panicked"))??;
        outln!(
            "churn: {} changes sent at {:.0}/s target ({} acknowledged, {} refused by the kernel)",
            c.sent.load(Ordering::Relaxed),
            args.rate,
            writer.acked,
            writer.refused
        );
        if let (Some(q), false) = (query.as_mut(), interrupted) {
            // The churn is over: wait for the table to be quiet, then check with rechecks.
            mismatches += settle_and_check(&mut sync, &mut followed, q, args, key_seed)?;
            checks += 1;
        }
    }
    if interrupted {
        outln!("interrupted: summary so far");
    }
    let s = sync.stats();
    outln!(
        "followed {:.1} s: {} notifications of table {}, {} link and {} nexthop-object notifications ({} link events), {} changes to best routes, {} re-dumps after lost notifications; {} prefixes, {} kernel routes",
        start.elapsed().as_secs_f64(),
        s.table_messages,
        args.table_id,
        s.link_messages,
        s.nexthop_messages,
        s.link_events,
        s.changes,
        s.resyncs,
        sync.rib().len(),
        sync.routes().route_count()
    );
    if args.reconcile.is_some() {
        outln!(
            "reconciliations: {}, prefixes found different from what was followed: {}",
            s.reconciliations,
            s.reconcile_differences
        );
    }
    report_unrepresentable(&sync);
    outln!(
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
    let mut left_refused = 0;
    for x in &mut followed {
        let Some(f) = x.join() else {
            anyhow::bail!("the thread following {} panicked", x.name());
        };
        let memory = f.memory_bytes();
        let b = x.book();
        let mean_work = b.work_ms_sum / b.publications.max(1) as f64;
        outln!(
            "{:<10} {:>8} {:>7} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>10.3}   ({} publications, {:.2} MiB{})",
            x.name(),
            model_name(x.model()),
            b.latencies.seen,
            b.latencies.percentile(0.5),
            b.latencies.percentile(0.9),
            b.latencies.percentile(0.99),
            b.latencies.percentile(1.0),
            mean_work,
            b.publications,
            memory as f64 / 1048576.0,
            if b.latencies.seen as usize > b.latencies.kept() {
                format!(", percentiles of {} sampled latencies", b.latencies.kept())
            } else {
                String::new()
            }
        );
        let failures = b.failures;
        drop(b);
        if let Some(e) = x.last_error() {
            outln!(
                "{:<10} {} changes refused and not visible ({failures} failures; last: {e})",
                x.name(),
                x.pending(),
            );
            left_refused += x.pending();
        }
    }
    if args.check > 0 {
        outln!("checks against the kernel: {checks} checks, {mismatches} mismatching answers");
    }
    Ok(if mismatches > 0 || left_refused > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// A burst began: a check is due once the table is quiet (unless one is under way).
fn arm<A>(state: &mut CheckState<A>, checking: bool) {
    if checking && matches!(state, CheckState::Idle) {
        *state = CheckState::Due;
    }
}

/// Notifications read so far (routes of every table, links, nexthop objects).
fn notifications<A: Address>(sync: &KernelSync<A>) -> u64 {
    let s = sync.stats();
    s.messages + s.link_messages + s.nexthop_messages + s.resyncs
}

fn churn_used(args: &FollowArgs) -> bool {
    args.churn.is_some()
}

fn report_unrepresentable<A: Address>(sync: &KernelSync<A>) {
    let u = sync.unrepresentable();
    if !u.is_empty() {
        let parts: Vec<String> = u.iter().map(|(r, n)| format!("{n} {r}")).collect();
        outln!(
            "routes lpmkit cannot represent (not followed): {}",
            parts.join(", ")
        );
    }
}

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
    bounds::check_memory(&[bounds::Need::items(
        "--changes",
        n as u128,
        // The edit, its send time.
        (core::mem::size_of::<RouteEdit<A>>() + 8) as u128,
        "churn changes",
    )])?;
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
    let rate = args.rate;
    outln!("churn: {n} changes from {} at {rate:.0}/s", trace.display());
    let shared = Arc::clone(&c);
    let handle = std::thread::spawn(move || -> anyhow::Result<RouteWriter> {
        let start = Instant::now();
        for (i, e) in edits.iter().enumerate() {
            if shared.done.load(Ordering::Relaxed) {
                break;
            }
            let due = start + Duration::from_secs_f64(i as f64 / rate);
            // Slow rates wait in short steps, so that the end of the run (Ctrl-C,
            // --duration) stops the churn at once.
            loop {
                let now = Instant::now();
                if due <= now || shared.done.load(Ordering::Relaxed) {
                    break;
                }
                std::thread::sleep((due - now).min(CHURN_WAKE));
            }
            if shared.done.load(Ordering::Relaxed) {
                break;
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

/// `n` random addresses of the followed table's family (its prefixes' for IPv6).
fn check_keys<A: Address>(sync: &KernelSync<A>, n: usize, seed: u64) -> anyhow::Result<Vec<A>> {
    let pattern = match A::FAMILY {
        Family::V4 => traffic::Pattern::Rnd,
        Family::V6 => traffic::Pattern::V6Match,
    };
    Ok(if sync.rib().is_empty() {
        traffic::uniform::<A>(n, seed)
    } else {
        traffic::keys::<A>(&pattern, sync.rib(), n, seed)?
    })
}

/// Compares every follower with the kernel on `keys`; returns the addresses where some
/// scheme differs and the number of differing answers (all schemes). With `report`,
/// prints each scheme's counts and its first differing answers.
fn check<A: Address>(
    sync: &KernelSync<A>,
    followed: &mut [Followed<A>],
    query: &mut RouteQuery,
    keys: &[A],
    report: bool,
) -> anyhow::Result<(Vec<A>, usize)> {
    let answers = query.get_many(keys)?;
    let table = sync.options().table;
    let mut out = vec![0u32; keys.len()];
    let mut differs = vec![false; keys.len()];
    let mut total = 0;
    for x in followed {
        x.lookup_batch(keys, &mut out);
        let (mut agree, mut skip, mut differ) = (0, 0, 0);
        for (i, ((&k, &o), a)) in keys.iter().zip(&out).zip(&answers).enumerate() {
            let ours = NextHop::new(o).and_then(|nh| sync.target(nh));
            match compare(a, ours, table) {
                Verdict::Agree => agree += 1,
                Verdict::Skip => skip += 1,
                Verdict::Differ => {
                    differ += 1;
                    differs[i] = true;
                    if report && differ <= 3 {
                        outln!(
                            "  MISMATCH {} {}: kernel {a:?}, lpmkit {}",
                            x.name(),
                            lpmkit::prefix::format_addr(k),
                            ours.map_or("no route".to_string(), |t| t.to_string())
                        );
                    }
                }
            }
        }
        if report {
            outln!(
                "check {}: {agree} of {} addresses equal the kernel's answer, {skip} answered by another table, {differ} differ",
                x.name(),
                keys.len()
            );
        }
        total += differ;
    }
    let keys = keys
        .iter()
        .zip(&differs)
        .filter(|(_, &d)| d)
        .map(|(&k, _)| k)
        .collect();
    Ok((keys, total))
}

/// Reads notifications until none came for `quiet`, then publishes what waits.
fn wait_quiet<A: Address>(
    sync: &mut KernelSync<A>,
    followed: &mut [Followed<A>],
    quiet: Duration,
) -> anyhow::Result<()> {
    loop {
        let r = sync.poll(Some(quiet))?;
        if r.is_empty() && !STOP.load(Ordering::Relaxed) {
            break;
        }
        if STOP.load(Ordering::Relaxed) {
            return Ok(());
        }
        apply_all(followed, &r, None, false);
    }
    for x in followed.iter_mut() {
        x.flush(None, false);
    }
    Ok(())
}

/// Once the table is quiet: checks `args.check` addresses, and looks again (the table
/// quiet each time) at those that differ; returns the answers that still differ after
/// [`CHECK_ROUNDS`] looks.
fn settle_and_check<A: Address>(
    sync: &mut KernelSync<A>,
    followed: &mut [Followed<A>],
    query: &mut RouteQuery,
    args: &FollowArgs,
    seed: u64,
) -> anyhow::Result<usize> {
    let quiet = Duration::from_millis(args.quiet_ms);
    wait_quiet(sync, followed, quiet)?;
    let keys = check_keys(sync, args.check, seed)?;
    let (mut suspects, _) = check(sync, followed, query, &keys, true)?;
    let mut round = 1;
    while !suspects.is_empty() {
        outln!(
            "  {} answers differ; looking again once the table is quiet",
            suspects.len()
        );
        wait_quiet(sync, followed, quiet)?;
        let last = round >= CHECK_ROUNDS;
        let (diff, n) = check(sync, followed, query, &suspects, last)?;
        if diff.is_empty() {
            outln!("  recheck: every answer that differed now agrees");
            return Ok(0);
        }
        if last {
            outln!(
                "  {} answers still differ after {round} looks with the table quiet",
                diff.len()
            );
            return Ok(n);
        }
        suspects = diff;
        round += 1;
    }
    Ok(0)
}

/// Hands `received` to every scheme.
fn apply_all<A: Address>(
    followed: &mut [Followed<A>],
    received: &[Received<A>],
    churn: Option<&Churn>,
    verbose: bool,
) {
    if received.is_empty() {
        return;
    }
    let received: Arc<[Received<A>]> = received.into();
    for x in followed {
        x.apply(&received, churn, verbose);
    }
}

/// The update model's name in a report column.
fn model_name(m: UpdateModel) -> &'static str {
    match m {
        UpdateModel::InPlace => "in place",
        UpdateModel::Twins => "twins",
        UpdateModel::Rebuild { .. } => "rebuild",
    }
}
