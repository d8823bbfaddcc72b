//! `--check`: every scheme's answers compared with the source's own — the kernel's
//! (`RTM_GETROUTE`), or zebra's (`show ip route A json`) with `--fpm` — on addresses drawn
//! inside the followed routes (prefix boundaries and their neighbours included) and
//! uniformly over the address space; answers that differ looked at again once the table is
//! quiet. A check where no answer was comparable fails, saying so. And the end of every
//! run: the followed table compared with a fresh dump, prefix by prefix (the kernel), or
//! its prefix count with zebra's FIB.

use std::time::{Duration, Instant};

use lpmkit::fpm::{FpmFamily, ZebraQuery};
use lpmkit::netlink::{KernelSync, Verdict};
use lpmkit::traffic::{self, Lcg};
use lpmkit::{Address, NextHop, Prefix};

use super::followed::Followed;
use super::source::{Oracle, Source};
use crate::output::outln;

/// Rounds of looking again at answers that differed before one counts.
pub(super) const CHECK_ROUNDS: u32 = 3;

/// Where `--check` stands.
enum State<A> {
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

/// The checks of one run (see the module docs) and what they found.
pub(super) struct Checks<A: FpmFamily> {
    /// Addresses drawn inside the followed routes per check (0: no checks).
    n: usize,
    table: u32,
    state: State<A>,
    seed: u64,
    /// Checks made.
    pub(super) made: usize,
    /// Answers that still differed after [`CHECK_ROUNDS`] looks.
    pub(super) mismatches: usize,
    /// Checks where no answer was comparable.
    pub(super) vacuous: usize,
}

/// What one look at some addresses found.
struct Look<A> {
    /// The addresses where some scheme differs.
    differ: Vec<A>,
    /// Differing answers, over every scheme.
    differing: usize,
}

impl<A: FpmFamily> Checks<A> {
    /// Checks of `n` addresses inside the routes (and `n / 4` uniform ones) against
    /// table `table`; none if `n` is 0.
    pub(super) fn new(n: usize, table: u32) -> Self {
        Checks {
            n,
            table,
            state: State::Idle,
            seed: 1,
            made: 0,
            mismatches: 0,
            vacuous: 0,
        }
    }

    /// A burst began (or the run did): a check is due once the table is quiet, unless
    /// one is under way.
    pub(super) fn arm(&mut self) {
        if self.n > 0 && matches!(self.state, State::Idle) {
            self.state = State::Due;
        }
    }

    /// When the next look is due, given the last change and the quiet time.
    pub(super) fn due(&self, last_change: Instant, quiet: Duration) -> Option<Instant> {
        match &self.state {
            State::Idle => None,
            State::Due => Some(last_change + quiet),
            State::Suspects { since, .. } => Some((last_change + quiet).max(*since + quiet)),
        }
    }

    /// Looks if a look is due (the table being quiet now): a first check, or the answers
    /// that differed again.
    pub(super) fn step(
        &mut self,
        sync: &Source<A>,
        followed: &mut [Followed<A>],
        query: &mut Oracle,
        now: Instant,
        quiet: Duration,
    ) -> anyhow::Result<()> {
        self.state = match std::mem::replace(&mut self.state, State::Idle) {
            State::Idle => State::Idle,
            State::Due => {
                let (keys, inside) = self.keys(sync);
                let look = self.look(sync, followed, query, &keys, Some(inside))?;
                if look.differ.is_empty() {
                    State::Idle
                } else {
                    outln!(
                        "  {} answers differ; looking again once the table is quiet",
                        look.differ.len()
                    );
                    State::Suspects {
                        keys: look.differ,
                        round: 1,
                        since: now,
                    }
                }
            }
            State::Suspects { keys, round, since } if now >= since + quiet => {
                let last = round >= CHECK_ROUNDS;
                let look = self.look(sync, followed, query, &keys, None)?;
                if look.differ.is_empty() {
                    outln!("  recheck: every answer that differed now agrees");
                    State::Idle
                } else if last {
                    outln!(
                        "  {} answers still differ after {round} looks with the table quiet",
                        look.differ.len()
                    );
                    self.mismatches += look.differing;
                    State::Idle
                } else {
                    State::Suspects {
                        keys: look.differ,
                        round: round + 1,
                        since: now,
                    }
                }
            }
            waiting @ State::Suspects { .. } => waiting,
        };
        Ok(())
    }

    /// Once the table is quiet (`settle` makes it so): a check, and looks again at what
    /// differs until it agrees or [`CHECK_ROUNDS`] looks have been made.
    pub(super) fn settled(
        &mut self,
        sync: &mut Source<A>,
        followed: &mut [Followed<A>],
        query: &mut Oracle,
        mut settle: impl FnMut(&mut Source<A>, &mut [Followed<A>]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        settle(sync, followed)?;
        let (keys, inside) = self.keys(sync);
        let mut suspects = self
            .look(sync, followed, query, &keys, Some(inside))?
            .differ;
        let mut round = 1;
        while !suspects.is_empty() {
            outln!(
                "  {} answers differ; looking again once the table is quiet",
                suspects.len()
            );
            settle(sync, followed)?;
            let last = round >= CHECK_ROUNDS;
            let look = self.look(sync, followed, query, &suspects, None)?;
            if look.differ.is_empty() {
                outln!("  recheck: every answer that differed now agrees");
                return Ok(());
            }
            if last {
                outln!(
                    "  {} answers still differ after {round} looks with the table quiet",
                    look.differ.len()
                );
                self.mismatches += look.differing;
                return Ok(());
            }
            suspects = look.differ;
            round += 1;
        }
        Ok(())
    }

    /// The addresses of a check: `n` inside the followed routes — a quarter of them the
    /// first and last addresses of routes and their neighbours, the rest anywhere inside —
    /// then `n / 4` uniform over the address space; and how many are inside.
    fn keys(&mut self, sync: &Source<A>) -> (Vec<A>, usize) {
        let seed = self.seed;
        self.seed += 1;
        let rib = sync.rib();
        let mut keys = Vec::with_capacity(self.n + self.n / 4);
        if !rib.is_empty() {
            let edges = self.n / 4;
            keys.extend(traffic::in_routes(rib, self.n - edges, seed));
            let prefixes: Vec<Prefix<A>> = rib.iter().map(|(p, _)| p).collect();
            let mut lcg = Lcg::new(seed);
            while keys.len() < self.n {
                let pick = (u64::from(lcg.next_u32()) << 32) | u64::from(lcg.next_u32());
                let p = prefixes[(pick % prefixes.len() as u64) as usize];
                let edge = match lcg.next_u32() % 4 {
                    0 => Some(p.first()),
                    1 => Some(p.last()),
                    2 => p.first().checked_dec(),
                    _ => p.last().checked_inc(),
                };
                keys.extend(edge);
            }
        }
        let inside = keys.len();
        keys.extend(traffic::uniform::<A>(self.n / 4, seed));
        (keys, inside)
    }

    /// Compares every scheme with the oracle on `keys`. `inside`: a check's addresses
    /// (how many are inside the routes), whose counts are printed, and where no
    /// comparable answer fails the check; `None`: a look again at answers that differed.
    fn look(
        &mut self,
        sync: &Source<A>,
        followed: &mut [Followed<A>],
        query: &mut Oracle,
        keys: &[A],
        inside: Option<usize>,
    ) -> anyhow::Result<Look<A>> {
        let answers = query.get_many(keys)?;
        if inside.is_some() {
            self.made += 1;
        }
        let mut out = vec![0u32; keys.len()];
        let mut differs = vec![false; keys.len()];
        let mut differing = 0;
        let mut vacuous = false;
        for x in followed {
            x.lookup_batch(keys, &mut out);
            let (mut agree, mut skip, mut differ) = (0, 0, 0);
            for (i, ((&k, &o), a)) in keys.iter().zip(&out).zip(&answers).enumerate() {
                let ours = NextHop::new(o).and_then(|nh| sync.target(nh));
                match a.compare(ours, self.table) {
                    Verdict::Agree => agree += 1,
                    Verdict::Skip => skip += 1,
                    Verdict::Differ => {
                        differ += 1;
                        differs[i] = true;
                        if inside.is_some() && differ <= 3 {
                            outln!(
                                "  MISMATCH {} {}: {} {a}, lpmkit {}",
                                x.name(),
                                lpmkit::prefix::format_addr(k),
                                query.name(),
                                ours.map_or("no route".to_string(), |t| t.to_string())
                            );
                        }
                    }
                }
            }
            if let Some(inside) = inside {
                outln!(
                    "check {}: {agree} of {} addresses ({inside} inside the followed routes, {} uniform) equal {}'s answer, {skip} not comparable, {differ} differ",
                    x.name(),
                    keys.len(),
                    keys.len() - inside,
                    query.name()
                );
                if agree + differ == 0 && !keys.is_empty() {
                    match query {
                        Oracle::Kernel(_) => outln!(
                            "check {}: no answer was comparable: the kernel answered every address from another table (or could not use the route for its own packets), so table {} was not checked (do policy rules send addresses to it?)",
                            x.name(),
                            self.table
                        ),
                        Oracle::Zebra(_) => outln!(
                            "check {}: no answer was comparable: zebra answered every address from a connected or kernel route lpmkit does not hold",
                            x.name()
                        ),
                    }
                    vacuous = true;
                }
            }
            differing += differ;
        }
        self.vacuous += usize::from(vacuous);
        let differ = keys
            .iter()
            .zip(&differs)
            .filter(|(_, &d)| d)
            .map(|(&k, _)| k)
            .collect();
        Ok(Look { differ, differing })
    }

    /// True if every check passed: no answer differed, and each had comparable answers.
    pub(super) fn passed(&self) -> bool {
        self.mismatches == 0 && self.vacuous == 0
    }
}

/// The end of a run: the followed table compared with a fresh dump of it, prefix by
/// prefix (every route, in the kernel's order). Applies the changes that arrived
/// meanwhile to the schemes (`apply`); returns the prefixes that differ, or `None` if
/// notifications were lost while the dump ran, twice.
pub(super) fn compare_with_dump<A: Address>(
    sync: &mut KernelSync<A>,
    mut apply: impl FnMut(&[lpmkit::netlink::Received<A>]),
) -> anyhow::Result<Option<usize>> {
    for _ in 0..2 {
        let t = Instant::now();
        let c = sync.compare_with_dump()?;
        apply(&c.changes);
        let Some(d) = c.differences else {
            outln!("compared with a fresh dump: notifications were lost while it ran; again");
            continue;
        };
        outln!(
            "compared with a fresh dump of table {} in {:.0} ms: {d}",
            sync.options().table,
            t.elapsed().as_secs_f64() * 1e3
        );
        for e in &d.examples {
            outln!("  DIFFER {e} (here: followed; there: the dump)");
        }
        return Ok(Some(d.differ.len() + d.nexthops_differ));
    }
    outln!("compared with a fresh dump: not done (notifications lost while it ran)");
    Ok(None)
}

/// The end of a run following zebra: the followed prefixes counted against zebra's FIB
/// (`show ip route summary json`: every protocol, so connected and kernel routes zebra
/// learned after it connected, which it does not stream, count there and not here).
/// Returns the difference (here minus there).
pub(super) fn compare_with_zebra<A: FpmFamily>(
    source: &Source<A>,
    query: &ZebraQuery,
) -> anyhow::Result<i64> {
    let theirs = query.fib_count(A::FAMILY)?;
    let ours = source.rib().len();
    outln!("compared with zebra's FIB (vtysh): {ours} prefixes followed, {theirs} in zebra's FIB");
    Ok(ours as i64 - theirs as i64)
}
