//! [`Follower`]: any registered scheme kept up to date from a stream of changes, by the
//! update model the scheme offers (batch rebuild or in place).

use std::time::{Duration, Instant};

use crate::fib::{BuildError, BuildOptions, Change, Fib};
use crate::prefix::Address;
use crate::registry::SchemeInfo;
use crate::rib::Rib;
use crate::sync::{LookupHandle, Publisher, PublisherConfig, Updater};

type BuildBox<A> = Box<dyn FnMut(&Rib<A>) -> Result<Box<dyn Fib<A>>, BuildError> + Send>;

enum Model<A: Address> {
    /// Batch rebuild (Spider, DIR-24-8): the publisher's own hold time is set out of
    /// reach; the follower keeps the hold time and publishes when it runs out.
    Rebuild {
        publisher: Publisher<A, Box<dyn Fib<A>>, BuildBox<A>>,
        hold: Duration,
        since: Option<Instant>,
    },
    /// In place under readers (DXR, Poptrie): every batch is visible when `apply`
    /// returns.
    InPlace(Box<dyn Updater<A>>),
}

/// A publication: changes that became visible to readers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Visible {
    /// The generation readers see now.
    pub generation: u64,
    /// Changes it made visible.
    pub changes: usize,
    /// When it became visible.
    pub at: Instant,
    /// Milliseconds the rebuild or the patch took.
    pub work_ms: f64,
}

/// One scheme following a route stream: [`apply`](Self::apply) changes as they come;
/// readers ([`reader`](Self::reader)) see them once published — at once for in-place
/// schemes, after the hold time for rebuilt ones (call [`poll`](Self::poll) by
/// [`deadline`](Self::deadline)).
pub struct Follower<A: Address> {
    name: &'static str,
    model: Model<A>,
    generation: u64,
}

impl<A: Address> core::fmt::Debug for Follower<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Follower")
            .field("scheme", &self.name)
            .field("model", &self.model())
            .field("generation", &self.generation)
            .finish()
    }
}

impl<A: Address> Follower<A> {
    /// Builds `info` from `rib`: in place if the scheme offers it, else by rebuild with
    /// hold time `hold`.
    pub fn new(
        info: &'static SchemeInfo,
        rib: Rib<A>,
        options: &BuildOptions,
        hold: Duration,
    ) -> Result<Self, BuildError> {
        let model = if info.updates_in_place() {
            Model::InPlace(info.build_in_place(rib, options)?)
        } else {
            let opts = options.clone();
            let build: BuildBox<A> = Box::new(move |r: &Rib<A>| info.build(r, &opts));
            let config = PublisherConfig {
                hold_time: Duration::from_secs(1 << 40),
            };
            Model::Rebuild {
                publisher: Publisher::new(rib, build, config)?,
                hold,
                since: None,
            }
        };
        Ok(Follower {
            name: info.name,
            model,
            generation: 0,
        })
    }

    /// The scheme's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// "rebuild" or "in place".
    pub fn model(&self) -> &'static str {
        match self.model {
            Model::Rebuild { .. } => "rebuild",
            Model::InPlace(_) => "in place",
        }
    }

    /// The authoritative routes (including unpublished changes).
    pub fn rib(&self) -> &Rib<A> {
        match &self.model {
            Model::Rebuild { publisher, .. } => publisher.rib(),
            Model::InPlace(u) => u.rib(),
        }
    }

    /// A handle for a lookup thread.
    pub fn reader(&self) -> Box<dyn LookupHandle<A>> {
        match &self.model {
            Model::Rebuild { publisher, .. } => Box::new(publisher.reader()),
            Model::InPlace(u) => u.reader(),
        }
    }

    /// Bytes of the table readers see.
    pub fn memory_bytes(&self) -> usize {
        match &self.model {
            Model::Rebuild { publisher, .. } => publisher.current().fib.memory_bytes(),
            Model::InPlace(u) => u.memory_bytes(),
        }
    }

    /// Changes not yet visible.
    pub fn pending(&self) -> usize {
        match &self.model {
            Model::Rebuild { publisher, .. } => publisher.pending(),
            Model::InPlace(_) => 0,
        }
    }

    /// When the pending changes are due ([`poll`](Self::poll) then), if any.
    pub fn deadline(&self) -> Option<Instant> {
        match &self.model {
            Model::Rebuild { since, hold, .. } => since.map(|t| t + *hold),
            Model::InPlace(_) => None,
        }
    }

    /// Applies `changes`; returns the publication if they (or earlier ones) became
    /// visible.
    pub fn apply(&mut self, changes: &[Change<A>]) -> Result<Option<Visible>, BuildError> {
        match &mut self.model {
            Model::InPlace(u) => {
                if changes.is_empty() {
                    return Ok(None);
                }
                let t0 = Instant::now();
                let info = u.apply(changes)?;
                let at = Instant::now();
                self.generation = info.generation;
                Ok(Some(Visible {
                    generation: info.generation,
                    changes: info.effective,
                    at,
                    work_ms: (at - t0).as_secs_f64() * 1e3,
                }))
            }
            Model::Rebuild {
                publisher, since, ..
            } => {
                publisher.apply(changes)?;
                if publisher.pending() > 0 {
                    since.get_or_insert_with(Instant::now);
                }
                self.poll()
            }
        }
    }

    /// Publishes if the hold time has run out.
    pub fn poll(&mut self) -> Result<Option<Visible>, BuildError> {
        match self.deadline() {
            Some(d) if Instant::now() >= d => self.flush(),
            _ => Ok(None),
        }
    }

    /// Publishes pending changes now.
    pub fn flush(&mut self) -> Result<Option<Visible>, BuildError> {
        let Model::Rebuild {
            publisher, since, ..
        } = &mut self.model
        else {
            return Ok(None);
        };
        if publisher.pending() == 0 {
            *since = None;
            return Ok(None);
        }
        let info = publisher.publish()?;
        *since = None;
        self.generation = info.generation;
        Ok(Some(Visible {
            generation: info.generation,
            changes: info.changes,
            at: Instant::now(),
            work_ms: info.build_ms,
        }))
    }
}
