//! Which lpmkit scheme serves a table, and when that changes.
//!
//! The scheme is chosen when the table is built (its first lookup, or
//! `lpmkit_rte_fib_sync`), from the routes it holds then, and logged once:
//!
//! * a scheme named by `LPMKIT_FIB_SCHEME` / `LPMKIT_FIB6_SCHEME` at create time serves
//!   the table for its life (one that cannot hold the table gives way to `auto`, logged);
//! * `auto` serves a table that has only been looked up so far with the scheme whose
//!   lookups are fastest at DPDK's bursts (32 keys a call in l3fwd): `dir24-8` for IPv4,
//!   `spider16w` for IPv6 (measured against DPDK's own `librte_fib`: `docs/dpdk.md`). Both
//!   are rebuilt on change, not patched; so the first change made once lookups have begun
//!   moves the table to the scheme [`lpmkit::facade::RouteTable`] chooses for a table that
//!   changes (updated in place: DXR by size for IPv4, `poptrie16` for IPv6), built from
//!   the routes then and installed beside the old one, and logged. That one change waits
//!   for the build; every change after it is a patch, visible when the call returns, as
//!   in DPDK. A table whose changes all come before its first lookup (a table loaded, then
//!   forwarded on) keeps the faster scheme.
//!
//! A scheme rebuilt on change (named, or `auto`'s fallback) publishes from a thread of the
//! table's own once a change has waited the hold time.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use lpmkit::facade::{build_updater, AUTO};
use lpmkit::sync::{UpdateModel, Updater};
use lpmkit::{BuildOptions, Change, Family, Rib};

use crate::eal;
use crate::table::{lock, unbuildable, Current, Failure, Key, Stage, Table, Writer};

/// The scheme `auto` serves a table with while it is only looked up.
pub fn lookup_only_scheme(family: Family) -> &'static str {
    match family {
        Family::V4 => "dir24-8",
        Family::V6 => "spider16w",
    }
}

fn describe(model: UpdateModel) -> String {
    match model {
        UpdateModel::InPlace => "updated in place".into(),
        UpdateModel::Rebuild { hold_time } => {
            format!("rebuilt {} ms after a change", hold_time.as_millis())
        }
        m => m.to_string(),
    }
}

fn routes(n: usize) -> String {
    format!("{n} route{}", if n == 1 { "" } else { "s" })
}

impl<A: Key> Table<A> {
    /// Builds the table if it is still loading; the scheme serving it.
    pub fn build(self: &Arc<Self>) -> Result<&'static str, Failure> {
        if !self.built.load(Ordering::Acquire) {
            let mut w = lock(&self.writer);
            if !self.built.load(Ordering::Acquire) {
                // Loading (a table whose build failed stays `Building`: it refuses every
                // call).
                let Stage::Loading(rib) = std::mem::replace(&mut w.stage, Stage::Building) else {
                    return Err(unbuildable());
                };
                let t0 = Instant::now();
                let n = rib.len();
                let (scheme, updater, lookup_only) = self.choose(rib)?;
                let how = if lookup_only {
                    format!(
                        "chosen automatically for a table only looked up so far, {}; the \
                         first change moves it to a scheme updated in place",
                        routes(n)
                    )
                } else if self.config.scheme == AUTO {
                    format!(
                        "chosen automatically for {}, {}",
                        routes(n),
                        describe(updater.model())
                    )
                } else {
                    format!("{}, {}", routes(n), describe(updater.model()))
                };
                eal::info(&format!(
                    "{} {:?}: {scheme} ({how}); built in {:.0} ms",
                    A::API,
                    self.config.name,
                    t0.elapsed().as_secs_f64() * 1e3
                ));
                w.lookup_only = lookup_only;
                self.install(&mut w, scheme, updater);
            }
        }
        lock(&self.current)
            .as_ref()
            .map(|c| c.scheme)
            .ok_or_else(unbuildable)
    }

    /// Builds `rib` with the configured scheme: a named one (which gives way to `auto`
    /// if it cannot hold the table), or `auto`'s choice for a table only looked up; true
    /// for the latter.
    #[allow(clippy::type_complexity)]
    fn choose(&self, rib: Rib<A>) -> Result<(&'static str, Box<dyn Updater<A>>, bool), Failure> {
        let opts = BuildOptions::default();
        let hold = self.config.hold_time;
        let (name, lookup_only) = match self.config.scheme.as_str() {
            AUTO => (lookup_only_scheme(A::FAMILY), true),
            named => (named, false),
        };
        match build_updater(rib.clone(), name, &opts, hold, false) {
            Ok((info, u, _)) => return Ok((info.name, u, lookup_only)),
            Err(e) => eal::warn(&format!(
                "{} {:?}: scheme {name} cannot serve the table ({e}); choosing one updated \
                 in place",
                A::API,
                self.config.name,
            )),
        }
        build_updater(rib, AUTO, &opts, hold, false)
            .map(|(info, u, _)| (info.name, u, false))
            .map_err(|e| Failure(libc::ENOMEM, e.to_string()))
    }

    /// The first change to a table only looked up so far: builds `auto`'s scheme for a
    /// table that changes from the routes, applies `change` to it and installs it.
    pub(crate) fn take_over(
        self: &Arc<Self>,
        w: &mut Writer<A>,
        change: Change<A>,
    ) -> Result<(), Failure> {
        let t0 = Instant::now();
        let rib = w.rib()?.clone();
        let n = rib.len();
        let (info, mut updater, _) = build_updater(
            rib,
            AUTO,
            &BuildOptions::default(),
            self.config.hold_time,
            false,
        )
        .map_err(|e| Failure(libc::ENOMEM, e.to_string()))?;
        updater
            .apply(&[change])
            .map_err(|e| Failure(libc::ENOSPC, e.to_string()))?;
        eal::info(&format!(
            "{} {:?}: changed under lookups: now {} (chosen automatically for {}, {}); the \
             change waited {:.0} ms for its build",
            A::API,
            self.config.name,
            info.name,
            routes(n),
            describe(updater.model()),
            t0.elapsed().as_secs_f64() * 1e3
        ));
        w.lookup_only = false;
        self.install(w, info.name, updater);
        Ok(())
    }

    /// Makes `updater` the one serving the table: readers take it up at their next
    /// lookup; a rebuilt scheme gets its publishing thread.
    fn install(
        self: &Arc<Self>,
        w: &mut Writer<A>,
        scheme: &'static str,
        updater: Box<dyn Updater<A>>,
    ) {
        let rebuilds = matches!(updater.model(), UpdateModel::Rebuild { .. });
        let template = updater.reader();
        // The old scheme, if any, goes; readers' handles keep what they use alive until
        // they take up the new one.
        w.stage = Stage::Built(updater);
        *lock(&self.current) = Some(Current { scheme, template });
        self.era.fetch_add(1, Ordering::Release);
        self.built.store(true, Ordering::Release);
        let mut publisher = lock(&self.publisher);
        if rebuilds && !w.lookup_only && publisher.is_none() {
            let me = Arc::clone(self);
            match std::thread::Builder::new()
                .name("lpmkit-publish".into())
                .spawn(move || me.publish_loop())
            {
                Ok(t) => *publisher = Some(t),
                Err(e) => eal::warn(&format!(
                    "{} {:?}: no publishing thread ({e}): changes are published at the \
                     next add or delete after their hold time",
                    A::API,
                    self.config.name
                )),
            }
        }
    }

    /// The publishing thread of a rebuilt scheme: publishes held changes when they are
    /// due, until the table is freed.
    fn publish_loop(&self) {
        let mut w = lock(&self.writer);
        loop {
            if w.closing {
                return;
            }
            let Stage::Built(updater) = &mut w.stage else {
                return;
            };
            let now = Instant::now();
            let wait = match updater.deadline() {
                Some(due) if due <= now => match updater.poll() {
                    Ok(_) => continue,
                    Err(e) => {
                        eal::warn(&format!(
                            "{} {:?}: publication failed, retried at the next change: {e}",
                            A::API,
                            self.config.name
                        ));
                        None
                    }
                },
                Some(due) => Some(due - now),
                None => None,
            };
            w = match wait {
                Some(d) => {
                    self.wake
                        .wait_timeout(w, d)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
                None => self.wake.wait(w).unwrap_or_else(|e| e.into_inner()),
            };
        }
    }

    /// Makes every change so far visible to lookups (building the table if it is still
    /// loading, publishing held changes now).
    pub fn sync(self: &Arc<Self>) -> Result<&'static str, Failure> {
        self.build()?;
        let mut w = lock(&self.writer);
        if let Stage::Built(u) = &mut w.stage {
            u.flush()
                .map_err(|e| Failure(libc::ENOSPC, e.to_string()))?;
        }
        drop(w);
        self.build()
    }

    /// Ends the publishing thread (before the last reference is dropped).
    pub fn close(&self) {
        lock(&self.writer).closing = true;
        self.wake.notify_all();
        if let Some(t) = lock(&self.publisher).take() {
            let _ = t.join();
        }
    }
}
