//! The update model a [`RouteTable`](super::RouteTable) drives its scheme with, chosen
//! from what the scheme offers: one instance patched in place ([`crate::sync::InPlace`])
//! when it can, left-right twins ([`TwinUpdater`]) when it is incremental but not in
//! place, and a rebuild published with one pointer swap ([`Publisher`]) otherwise.

use std::time::Duration;

use crate::fib::{BuildError, Change, Fib};
use crate::prefix::{Address, Prefix};
use crate::registry::{BuildOptions, SchemeInfo};
use crate::rib::Rib;
use crate::sync::{ApplyInfo, LookupHandle, Publisher, PublisherConfig, TwinUpdater, Updater};

/// Builds `info` over `rib` in the best update model it offers for family `A`.
pub(crate) fn updater<A: Address>(
    info: &'static SchemeInfo,
    rib: Rib<A>,
    options: &BuildOptions,
) -> Result<Box<dyn Updater<A>>, BuildError> {
    // `updates_in_place` is true when either family offers it: the empty build asks
    // about this one.
    if info.updates_in_place() && info.build_in_place(Rib::<A>::new(), options).is_ok() {
        return info.build_in_place(rib, options);
    }
    if info.incremental && info.build_incremental(&Rib::<A>::new(), options).is_ok() {
        let options = options.clone();
        let build = move |r: &Rib<A>| info.build_incremental(r, &options);
        return Ok(Box::new(TwinUpdater::new(rib, build)?));
    }
    Ok(Box::new(Rebuild::new(info, rib, options)?))
}

type BuildBox<A> = Box<dyn FnMut(&Rib<A>) -> Result<Box<dyn Fib<A>>, BuildError> + Send>;

/// A rebuild-style scheme as an [`Updater`]: every `apply` rebuilds the table from the
/// `Rib` and publishes it with one pointer swap (no hold time: the table's caller batches
/// its changes itself).
struct Rebuild<A: Address> {
    publisher: Publisher<A, Box<dyn Fib<A>>, BuildBox<A>>,
}

impl<A: Address> Rebuild<A> {
    fn new(
        info: &'static SchemeInfo,
        rib: Rib<A>,
        options: &BuildOptions,
    ) -> Result<Self, BuildError> {
        let options = options.clone();
        let build: BuildBox<A> = Box::new(move |r: &Rib<A>| info.build(r, &options));
        // Publication is explicit (`publish` at the end of each `apply`): the hold time
        // only has to be longer than an `apply`.
        let config = PublisherConfig {
            hold_time: Duration::from_secs(86_400 * 365),
        };
        Ok(Rebuild {
            publisher: Publisher::new(rib, build, config)?,
        })
    }
}

impl<A: Address> Updater<A> for Rebuild<A> {
    fn apply(&mut self, changes: &[Change<A>]) -> Result<ApplyInfo, BuildError> {
        let mut undo: Vec<(Prefix<A>, Option<crate::NextHop>)> = Vec::new();
        let mut effective = 0;
        for &c in changes {
            let p = c.prefix();
            let old = self.publisher.rib().get(&p);
            let changed = match c {
                Change::Announce(_, nh) => old != Some(nh),
                Change::Withdraw(_) => old.is_some(),
            };
            if changed {
                undo.push((p, old));
                effective += 1;
                self.publisher.apply(c)?;
            }
        }
        if effective == 0 {
            return Ok(ApplyInfo::default());
        }
        match self.publisher.publish() {
            Ok(p) => Ok(ApplyInfo {
                generation: p.generation,
                effective,
                units_rebuilt: 1,
                full_rebuild: true,
                wait_us: 0.0,
            }),
            Err(e) => {
                // Nothing changed: the Rib as it was (the published table still is).
                for (p, old) in undo.into_iter().rev() {
                    let c = match old {
                        Some(nh) => Change::Announce(p, nh),
                        None => Change::Withdraw(p),
                    };
                    self.publisher.apply(c)?;
                }
                let _ = self.publisher.publish();
                Err(e)
            }
        }
    }

    fn rib(&self) -> &Rib<A> {
        self.publisher.rib()
    }

    fn reader(&self) -> Box<dyn LookupHandle<A>> {
        Box::new(self.publisher.reader())
    }

    fn memory_bytes(&self) -> usize {
        self.publisher.current().fib.memory_bytes()
    }

    fn model(&self) -> &'static str {
        "rebuild, published with one pointer swap"
    }
}
