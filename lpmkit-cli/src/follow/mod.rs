//! `lpmkit follow`: keep schemes in sync with a kernel routing table over rtnetlink — or,
//! with `--fpm`, with the routes FRR's zebra streams over its Forwarding Plane Manager
//! interface (`source`) — and report what changed, the publication latency and the table
//! size; `--check N` compares addresses with the kernel's (or zebra's) own answer after
//! each burst (`check`); `--churn TRACE --rate R` drives the kernel table with a replayed
//! update trace at R changes/s (`churn`: the latency measurement). Every run ends by
//! comparing the followed table with a fresh dump, prefix by prefix (with `--fpm`: its
//! prefix count with zebra's FIB, when `--check` asks zebra).
//!
//! The run is its steps: [`open_source`], [`build_schemes`], then [`Run`]: the event loop
//! ([`Run::follow`], one [`Run::step`] per wake-up: read, apply, reconcile, check,
//! report), the end ([`Run::finish`]) and the summary ([`Run::summary`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use lpmkit::fpm::{FpmFamily, FpmOptions, FpmServer, SessionOptions, ZebraQuery};
use lpmkit::netlink::{Follower, KernelSync, Received, RouteQuery, SyncOptions};
use lpmkit::sync::UpdateModel;
use lpmkit::{BuildOptions, Family, Ipv4, Ipv6};

use crate::bounds;
use crate::input::{self, FamilyArg};
use crate::output::outln;

mod check;
mod churn;
mod followed;
mod source;

use check::Checks;
use churn::ChurnHandle;
use followed::{Churn, Followed};
use source::{Oracle, Source, Zebra};

#[derive(Args, Debug)]
pub struct FollowArgs {
    /// The network namespace (a name as `ip netns` lists it, or a path); default: this
    /// process's. With --fpm: the namespace to listen in (zebra's).
    #[arg(long)]
    pub(super) netns: Option<String>,

    /// Follow FRR's zebra instead of the kernel: listen on ADDR:PORT for the connection of
    /// zebra's Forwarding Plane Manager (zebra started with `-M dplane_fpm_nl`, configured
    /// with `fpm address ADDR port PORT`; 2620 by default) and follow the routes zebra
    /// selects, as it streams them.
    #[arg(long, value_name = "ADDR:PORT", conflicts_with_all = ["churn", "reconcile"])]
    fpm: Option<SocketAddr>,

    /// With --fpm: the command --check asks zebra through (split at spaces; e.g.
    /// "vtysh -N NAME" for a zebra started with a path space).
    #[arg(long, value_name = "CMD", default_value = "vtysh", requires = "fpm")]
    vtysh: String,

    /// With --fpm: after zebra connects again it sends its whole table, but not what it
    /// deleted meanwhile: the routes it has not sent again are removed once its stream
    /// has been quiet this long (ms). Range: 100 to 600000.
    #[arg(long, default_value_t = 3000, value_name = "MS", requires = "fpm", value_parser = bounds::int::<u64>(100, 600_000))]
    sweep_ms: u64,

    /// The routing table id (254 = main). Range: 1 to 4294967295.
    #[arg(long = "table-id", default_value_t = 254, value_parser = bounds::int::<u32>(1, u32::MAX as u64))]
    pub(super) table_id: u32,

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
    /// up N addresses drawn inside the followed routes (a quarter of them the first and
    /// last addresses of routes and their neighbours) and N/4 uniform ones, and compare
    /// each scheme's answer with the kernel's (RTM_GETROUTE, as `ip route get`); an answer
    /// that differs is looked up again after the table has been quiet once more, and
    /// reported only if it still differs; a check with no comparable answer fails. Once
    /// at the start, then after each burst. Range: 0 to 1000000.
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
    pub(super) rate: f64,

    /// At most this many churn changes (0: the whole trace). Range: 0 to 100000000.
    #[arg(long, default_value_t = 0, value_parser = bounds::int::<usize>(0, MAX_CHURN))]
    pub(super) changes: usize,

    /// The interface the churn routes point to (`via NH dev DEV onlink`).
    #[arg(long, default_value = "v0")]
    pub(super) dev: String,

    /// Print one line per publication (default: one per second).
    #[arg(long)]
    verbose: bool,
}

/// The most churn changes (sequence numbers are 32 bits).
const MAX_CHURN: u64 = 100_000_000;

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

fn stopped() -> bool {
    STOP.load(Ordering::Relaxed)
}

fn follow<A: FpmFamily>(args: &FollowArgs) -> anyhow::Result<ExitCode> {
    let mut sync = open_source::<A>(args)?;
    let followed = build_schemes(args, &sync)?;
    let query = match (args.check, &sync) {
        (0, _) => None,
        (_, Source::Kernel(_)) => Some(Oracle::Kernel(RouteQuery::open(args.netns.as_deref())?)),
        (_, Source::Zebra(_)) => {
            let command: Vec<String> = args.vtysh.split_whitespace().map(String::from).collect();
            anyhow::ensure!(!command.is_empty(), "--vtysh: no command");
            Some(Oracle::Zebra(ZebraQuery::new(&command, None)))
        }
    };
    let churn = match &args.churn {
        Some(trace) => Some(churn::start::<A>(args, trace)?),
        None => None,
    };
    let mut run = Run::new(args, followed, query, churn);
    catch_stop_signals();
    run.follow(&mut sync)?;
    run.finish(&mut sync)?;
    run.summary(&sync)
}

/// The kernel's table (subscribed to, dumped), or with `--fpm` the server zebra connects
/// to; prints what it holds.
fn open_source<A: FpmFamily>(args: &FollowArgs) -> anyhow::Result<Source<A>> {
    let Some(listen) = args.fpm else {
        return open_table(args).map(Source::Kernel);
    };
    let server = FpmServer::bind(&FpmOptions {
        listen,
        netns: args.netns.clone(),
        session: SessionOptions {
            table: args.table_id,
            sweep_quiet: Duration::from_millis(args.sweep_ms),
            ..SessionOptions::default()
        },
    })
    .context("cannot follow zebra")?;
    outln!(
        "listening for zebra's FPM connection on {}{}: following table {} ({}); zebra's other family is read and not followed",
        server.local_addr()?,
        args.netns
            .as_deref()
            .map(|n| format!(" in netns {n}"))
            .unwrap_or_default(),
        args.table_id,
        A::FAMILY,
    );
    Ok(Source::Zebra(Zebra::new(server)))
}

/// Subscribes to the table and dumps it; prints what it holds.
fn open_table<A: FpmFamily>(args: &FollowArgs) -> anyhow::Result<KernelSync<A>> {
    let opts = SyncOptions {
        netns: args.netns.clone(),
        table: args.table_id,
        ..Default::default()
    };
    let t0 = Instant::now();
    let sync = KernelSync::<A>::open(&opts).context("cannot follow the kernel table")?;
    let (interfaces, addresses) = sync.interfaces_and_addresses();
    outln!(
        "dumped table {} ({}{}): {} prefixes, {} kernel routes, {} distinct next hops, {} nexthop objects, {} interfaces, {} addresses in {:.0} ms",
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
        interfaces,
        addresses,
        t0.elapsed().as_secs_f64() * 1e3
    );
    report_unrepresentable(&sync.unrepresentable());
    Ok(sync)
}

/// Builds every scheme of `--schemes` from the dumped table, by its best update model.
fn build_schemes<A: FpmFamily>(
    args: &FollowArgs,
    sync: &Source<A>,
) -> anyhow::Result<Vec<Followed<A>>> {
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
    Ok(followed)
}

/// One `follow` run: the schemes, the checks, the churn and the clocks of the loop.
struct Run<'a, A: FpmFamily> {
    args: &'a FollowArgs,
    followed: Vec<Followed<A>>,
    query: Option<Oracle>,
    churn: Option<(Arc<Churn>, ChurnHandle)>,
    checks: Checks<A>,
    start: Instant,
    end: Option<Instant>,
    quiet: Duration,
    next_reconcile: Option<Instant>,
    next_report: Instant,
    /// Changes since the last report line.
    since_report: usize,
    last_change: Instant,
    interrupted: bool,
    /// Prefixes (and nexthop objects) that differed from the end's fresh dump; `None`:
    /// no comparison could be made.
    dump_differences: Option<usize>,
}

impl<'a, A: FpmFamily> Run<'a, A> {
    fn new(
        args: &'a FollowArgs,
        mut followed: Vec<Followed<A>>,
        query: Option<Oracle>,
        churn: Option<(Arc<Churn>, ChurnHandle)>,
    ) -> Self {
        for x in &mut followed {
            x.detach(churn.as_ref().map(|c| Arc::clone(&c.0)), args.verbose);
        }
        let start = Instant::now();
        let mut checks = Checks::new(args.check, args.table_id);
        // Checks run while no churn drives the table (after it, once); following zebra,
        // from its first connection on (the table is empty until then).
        if churn.is_none() && args.fpm.is_none() {
            checks.arm();
        }
        Run {
            args,
            followed,
            query,
            churn,
            checks,
            start,
            end: (args.duration > 0.0).then(|| start + Duration::from_secs_f64(args.duration)),
            quiet: Duration::from_millis(args.quiet_ms),
            next_reconcile: args.reconcile.map(|r| start + Duration::from_secs_f64(r)),
            next_report: start + Duration::from_secs(1),
            since_report: 0,
            last_change: start,
            interrupted: false,
            dump_differences: None,
        }
    }

    fn churn(&self) -> Option<&Churn> {
        self.churn.as_ref().map(|c| &*c.0)
    }

    /// The loop: a step per wake-up until Ctrl-C, `--duration`, or the end of the churn.
    fn follow(&mut self, sync: &mut Source<A>) -> anyhow::Result<()> {
        loop {
            if stopped() {
                self.interrupted = true;
                return Ok(());
            }
            if self.end.is_some_and(|e| Instant::now() >= e) {
                return Ok(());
            }
            if self.churn_over(sync)? {
                return Ok(());
            }
            self.step(sync)?;
        }
    }

    /// True once the churn has ended and its last notifications are in.
    fn churn_over(&mut self, sync: &mut Source<A>) -> anyhow::Result<bool> {
        let done = self.churn().is_some_and(|c| c.done.load(Ordering::Acquire));
        if !done || self.followed.iter().any(|x| x.deadline().is_some()) {
            return Ok(false);
        }
        // Let the last notifications arrive.
        let late = sync.poll(Some(Duration::from_millis(200)))?;
        if late.is_empty() {
            return Ok(true);
        }
        self.apply(&late);
        Ok(false)
    }

    /// One wake-up: read what arrived (until the next thing due), apply it, publish
    /// what is due, reconcile, check and report when due.
    fn step(&mut self, sync: &mut Source<A>) -> anyhow::Result<()> {
        let wake = self.wake();
        let seen = sync.activity();
        let received = sync.poll(Some(wake.saturating_duration_since(Instant::now())))?;
        self.since_report += received.len();
        // Any notification (a link event that changed nothing followed included) starts
        // a burst: the table is checked once it is quiet again.
        if sync.activity() != seen || !received.is_empty() {
            self.burst();
        }
        self.apply(&received);
        let churn = self.churn.as_ref().map(|c| Arc::clone(&c.0));
        for x in &mut self.followed {
            x.poll(churn.as_deref(), self.args.verbose);
        }
        let now = Instant::now();
        self.reconcile_if_due(sync, now)?;
        self.check_if_quiet(sync, now)?;
        self.report_if_due(sync, now);
        Ok(())
    }

    /// The next thing due: a report, a publication, a check, a reconciliation, the end.
    fn wake(&self) -> Instant {
        let mut wake = self.next_report;
        for x in &self.followed {
            if let Some(d) = x.deadline() {
                wake = wake.min(d);
            }
        }
        [
            self.checks.due(self.last_change, self.quiet),
            self.next_reconcile,
            self.end,
        ]
        .into_iter()
        .flatten()
        .fold(wake, Instant::min)
    }

    /// The table changed: checks wait for it to be quiet again.
    fn burst(&mut self) {
        self.last_change = Instant::now();
        if self.churn.is_none() {
            self.checks.arm();
        }
    }

    /// Hands `received` to every scheme.
    fn apply(&mut self, received: &[Received<A>]) {
        apply_all(
            &mut self.followed,
            received,
            self.churn.as_ref().map(|c| &*c.0),
            self.args.verbose,
        );
    }

    /// `--reconcile`: dumps the table again when due, repairs and counts the differences.
    fn reconcile_if_due(&mut self, sync: &mut Source<A>, now: Instant) -> anyhow::Result<()> {
        if self.next_reconcile.is_none_or(|r| now < r) {
            return Ok(());
        }
        let Some(sync) = sync.kernel() else {
            return Ok(());
        };
        let t = Instant::now();
        let drift_before = sync.stats().reconcile_differences;
        let found = sync.reconcile()?;
        outln!(
            "reconciled: table dumped again in {:.0} ms, {} prefixes differed from what was followed",
            t.elapsed().as_secs_f64() * 1e3,
            sync.stats().reconcile_differences - drift_before
        );
        if !found.is_empty() {
            self.burst();
        }
        self.apply(&found);
        self.next_reconcile = self
            .args
            .reconcile
            .map(|r| Instant::now() + Duration::from_secs_f64(r));
        Ok(())
    }

    /// Compares with the kernel once the table is quiet: nothing arrived for the quiet
    /// time and nothing waits for a hold time.
    fn check_if_quiet(&mut self, sync: &Source<A>, now: Instant) -> anyhow::Result<()> {
        let settled = now >= self.last_change + self.quiet
            && self.churn.is_none()
            && self
                .followed
                .iter()
                .all(|x| x.pending() == 0 || x.last_error().is_some());
        match (self.query.as_mut(), settled) {
            (Some(q), true) => self
                .checks
                .step(sync, &mut self.followed, q, now, self.quiet),
            _ => Ok(()),
        }
    }

    /// The line printed once a second.
    fn report_if_due(&mut self, sync: &Source<A>, now: Instant) {
        if now < self.next_report {
            return;
        }
        let mut line = format!(
            "{:>6.1} s  +{} changes ({}), {} prefixes",
            (now - self.start).as_secs_f64(),
            self.since_report,
            sync.status(),
            sync.rib().len()
        );
        for x in &self.followed {
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
        self.since_report = 0;
        self.next_report = now + Duration::from_secs(1);
    }

    /// The end: publishes what waits, stops the churn (and checks once the table is
    /// quiet after it), then compares the followed table with a fresh dump.
    fn finish(&mut self, sync: &mut Source<A>) -> anyhow::Result<()> {
        let churn = self.churn.as_ref().map(|c| Arc::clone(&c.0));
        for x in &mut self.followed {
            x.flush(churn.as_deref(), self.args.verbose);
        }
        if let Some((c, handle)) = self.churn.take() {
            c.done.store(true, Ordering::Release);
            let writer = handle
                .join()
                .map_err(|_| anyhow::anyhow!("the churn thread panicked"))??;
            outln!(
                "churn: {} changes sent at {:.0}/s target ({} acknowledged, {} refused by the kernel)",
                c.sent.load(Ordering::Relaxed),
                self.args.rate,
                writer.acked,
                writer.refused
            );
            if let (Some(q), false) = (self.query.as_mut(), self.interrupted) {
                // The churn is over: wait for the table to be quiet, then check.
                let quiet = self.quiet;
                self.checks
                    .settled(sync, &mut self.followed, q, |s, f| wait_quiet(s, f, quiet))?;
            }
        }
        if self.interrupted {
            outln!("interrupted: summary so far");
        }
        let followed = &mut self.followed;
        let verbose = self.args.verbose;
        if let Some(k) = sync.kernel() {
            self.dump_differences = check::compare_with_dump(k, |received| {
                apply_all(followed, received, None, verbose);
            })?;
        } else if let Some(Oracle::Zebra(q)) = &self.query {
            check::compare_with_zebra(sync, q)?;
        }
        for x in &mut self.followed {
            x.flush(None, verbose);
        }
        Ok(())
    }

    /// Prints the summary; the exit status: 1 if a check failed, the table differed
    /// from the dump, or a refused change was never taken.
    fn summary(&mut self, sync: &Source<A>) -> anyhow::Result<ExitCode> {
        let args = self.args;
        let k = match sync {
            Source::Kernel(k) => k,
            Source::Zebra(z) => return self.zebra_summary(z),
        };
        let s = k.stats();
        outln!(
            "followed {:.1} s: {} notifications of table {}, {} link, {} address and {} nexthop-object notifications ({} link and {} address events), {} changes to best routes, {} re-dumps after lost notifications; {} prefixes, {} kernel routes",
            self.start.elapsed().as_secs_f64(),
            s.table_messages,
            args.table_id,
            s.link_messages,
            s.address_messages,
            s.nexthop_messages,
            s.link_events,
            s.address_events,
            s.changes,
            s.resyncs,
            sync.rib().len(),
            k.routes().route_count()
        );
        if args.reconcile.is_some() {
            outln!(
                "reconciliations: {}, prefixes found different from what was followed: {}",
                s.reconciliations,
                s.reconcile_differences
            );
        }
        report_unrepresentable(&sync.unrepresentable());
        let left_refused = self.scheme_table()?;
        self.report_checks();
        let table_ok = self.dump_differences == Some(0);
        Ok(if !self.checks.passed() || left_refused > 0 || !table_ok {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        })
    }

    /// The summary of a run following zebra; the exit status: 1 if a check failed or a
    /// refused change was never taken.
    fn zebra_summary(&mut self, z: &Zebra<A>) -> anyhow::Result<ExitCode> {
        let s = z.server.session().stats();
        outln!(
            "followed zebra {:.1} s: {} connections ({} dropped for bad input), {} frames, {} route messages of table {} (both families), {} of other tables, {} nexthop-object messages, {} others, {} undecodable; {} sweeps removed {} routes; {} prefixes",
            self.start.elapsed().as_secs_f64(),
            s.connections,
            s.dropped,
            s.frames,
            s.route_messages,
            self.args.table_id,
            s.other_tables,
            s.nexthop_messages,
            s.other_messages,
            s.undecodable,
            s.sweeps,
            s.swept_routes,
            z.server.session().routes::<A>().rib().len()
        );
        report_unrepresentable(&z.server.session().routes::<A>().unrepresentable());
        let left_refused = self.scheme_table()?;
        self.report_checks();
        Ok(if !self.checks.passed() || left_refused > 0 {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        })
    }

    /// The checks' line of the summary.
    fn report_checks(&self) {
        if self.args.check > 0 {
            outln!(
                "checks against {}: {} checks, {} mismatching answers{}",
                self.query.as_ref().map_or("the kernel", Oracle::name),
                self.checks.made,
                self.checks.mismatches,
                if self.checks.vacuous > 0 {
                    format!(", {} with no comparable answer", self.checks.vacuous)
                } else {
                    String::new()
                }
            );
        }
    }

    /// Prints each scheme's latencies, publications, memory and refusals; returns the
    /// changes left refused.
    fn scheme_table(&mut self) -> anyhow::Result<usize> {
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
            if self.args.churn.is_some() {
                "kernel request sent → visible to lookups"
            } else if self.args.fpm.is_some() {
                "zebra's frame received → visible to lookups"
            } else {
                "notification read → visible to lookups"
            }
        );
        let mut left_refused = 0;
        for x in &mut self.followed {
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
        Ok(left_refused)
    }
}

fn report_unrepresentable(u: &[(lpmkit::netlink::Unrepresentable, usize)]) {
    if !u.is_empty() {
        let parts: Vec<String> = u.iter().map(|(r, n)| format!("{n} {r}")).collect();
        outln!(
            "routes lpmkit cannot represent (not followed): {}",
            parts.join(", ")
        );
    }
}

/// Reads notifications until none came for `quiet`, then publishes what waits.
fn wait_quiet<A: FpmFamily>(
    sync: &mut Source<A>,
    followed: &mut [Followed<A>],
    quiet: Duration,
) -> anyhow::Result<()> {
    loop {
        let r = sync.poll(Some(quiet))?;
        if stopped() {
            return Ok(());
        }
        if r.is_empty() {
            break;
        }
        apply_all(followed, &r, None, false);
    }
    for x in followed.iter_mut() {
        x.flush(None, false);
    }
    Ok(())
}

/// Hands `received` to every scheme.
fn apply_all<A: lpmkit::Address>(
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
