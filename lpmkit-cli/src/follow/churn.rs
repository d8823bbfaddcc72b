//! `--churn TRACE --rate R`: a thread replays an update trace into the kernel table,
//! paced, as rtnetlink requests whose sequence numbers index the table of send times (the
//! kernel copies them into its notifications: the latency is measured from the request).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use lpmkit::netlink::{ifindex, RouteEdit, RouteTarget, RouteWriter};
use lpmkit::{Address, Change, NextHopTable};

use super::followed::{Churn, CHURN_T0};
use super::FollowArgs;
use crate::bounds;
use crate::output::outln;

/// The longest the churn thread sleeps before it looks whether the run has ended.
const CHURN_WAKE: Duration = Duration::from_millis(20);

pub(super) type ChurnHandle = std::thread::JoinHandle<anyhow::Result<RouteWriter>>;

/// Starts the churn generator: the trace's changes, paced, as netlink requests whose
/// sequence numbers index the send-time table.
pub(super) fn start<A: Address>(
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
