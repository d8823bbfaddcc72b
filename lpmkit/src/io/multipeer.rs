//! From a multi-peer RIB (MRT dump, `bgpdump -m` text) to a FIB: one path per prefix.

use core::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use super::{ReadError, ReadStats, TableOptions};
use crate::nexthop::NextHop;
use crate::prefix::{Address, Family, Ipv4, Ipv6, Prefix};
use crate::table::{AnyTable, Table};

/// The attributes of one RIB entry (one peer's path to one prefix) that [`best_path`]
/// compares, plus the next hop the FIB takes from it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub struct PathAttrs {
    /// The collector peer that sent the path.
    pub peer: IpAddr,
    /// LOCAL_PREF (0 when absent, as in collector dumps).
    pub local_pref: u32,
    /// AS_PATH length as BGP counts it: an AS_SET counts 1, confederation segments 0.
    pub as_path_len: u32,
    /// ORIGIN: 0 IGP, 1 EGP, 2 INCOMPLETE (also when absent).
    pub origin: u8,
    /// The NEXT_HOP attribute (for IPv6, the global next hop of MP_REACH_NLRI); the FIB
    /// uses the peer address when it is absent.
    pub next_hop: Option<IpAddr>,
}

/// Orders two paths to the same prefix: `Less` means `a` is preferred.
///
/// The rule is the simplified BGP decision process the data set's FIBs were derived
/// with (best path per prefix, as `docs/data.md` describes them):
///
/// 1. highest LOCAL_PREF;
/// 2. shortest AS_PATH (an AS_SET counts as 1);
/// 3. lowest ORIGIN (IGP < EGP < INCOMPLETE);
/// 4. lowest peer address (standing in for the router id; IPv4 peers before IPv6 peers,
///    then numerically).
///
/// MED is ignored (it is only comparable between paths from the same neighbouring AS).
/// Paths equal under all four (several ADD-PATH paths of one peer) keep the first seen.
///
/// ```
/// use lpmkit::io::{best_path, PathAttrs};
/// let a = PathAttrs { peer: "192.0.2.2".parse()?, local_pref: 0, as_path_len: 2, origin: 0, next_hop: None };
/// let b = PathAttrs { as_path_len: 3, peer: "192.0.2.1".parse()?, ..a.clone() };
/// assert_eq!(best_path(&a, &b), std::cmp::Ordering::Less); // shorter AS path wins
/// # Ok::<(), std::net::AddrParseError>(())
/// ```
#[doc(hidden)]
pub fn best_path(a: &PathAttrs, b: &PathAttrs) -> Ordering {
    b.local_pref
        .cmp(&a.local_pref)
        .then(a.as_path_len.cmp(&b.as_path_len))
        .then(a.origin.cmp(&b.origin))
        .then(a.peer.cmp(&b.peer))
}

/// Collects RIB entries of both families and keeps the chosen path per prefix.
pub(crate) struct MultiPeer {
    peer: Option<IpAddr>,
    want: Option<Family>,
    v4: HashMap<Prefix<Ipv4>, PathAttrs>,
    v6: HashMap<Prefix<Ipv6>, PathAttrs>,
    first_family: Option<Family>,
    /// Admitted entries per family (IPv4, IPv6).
    admitted: [usize; 2],
    peers: HashSet<IpAddr>,
    pub(crate) stats: ReadStats,
}

impl MultiPeer {
    /// `want`: the family the caller needs (the other is only counted); `None` keeps both
    /// until [`finish`](Self::finish) decides.
    pub(crate) fn new(opts: &TableOptions, want: Option<Family>) -> Self {
        MultiPeer {
            peer: opts.peer,
            want: want.or(opts.family),
            v4: HashMap::new(),
            v6: HashMap::new(),
            first_family: None,
            admitted: [0, 0],
            peers: HashSet::new(),
            stats: ReadStats::default(),
        }
    }

    /// Adds one RIB entry for an IPv4 prefix.
    pub(crate) fn add_v4(&mut self, p: Prefix<Ipv4>, path: PathAttrs) {
        if self.admit(Family::V4, &path) {
            Self::keep(&mut self.v4, p, path);
        }
    }

    /// Adds one RIB entry for an IPv6 prefix.
    pub(crate) fn add_v6(&mut self, p: Prefix<Ipv6>, path: PathAttrs) {
        if self.admit(Family::V6, &path) {
            Self::keep(&mut self.v6, p, path);
        }
    }

    fn admit(&mut self, f: Family, path: &PathAttrs) -> bool {
        self.stats.rib_entries += 1;
        self.peers.insert(path.peer);
        if self.peer.is_some_and(|p| p != path.peer) {
            self.stats.other_peers += 1;
            return false;
        }
        self.first_family.get_or_insert(f);
        if self.want.is_some_and(|w| w != f) {
            self.stats.other_family += 1;
            return false;
        }
        self.admitted[(f == Family::V6) as usize] += 1;
        true
    }

    fn keep<A: Address>(map: &mut HashMap<Prefix<A>, PathAttrs>, p: Prefix<A>, path: PathAttrs) {
        match map.entry(p) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(path);
            }
            std::collections::hash_map::Entry::Occupied(mut o) => {
                if best_path(&path, o.get()) == Ordering::Less {
                    o.insert(path);
                }
            }
        }
    }

    /// The FIB: the family asked for, or else that of the first admitted entry.
    pub(crate) fn finish(mut self, source: &str) -> Result<(AnyTable, ReadStats), ReadError> {
        self.stats.peers = self.peers.len();
        let family = match (self.want, self.first_family) {
            (Some(f), _) | (None, Some(f)) => f,
            (None, None) => return Err(self.no_routes(source, None)),
        };
        let table = match family {
            Family::V4 => {
                self.stats.other_family += self.admitted[1];
                let map = std::mem::take(&mut self.v4);
                AnyTable::V4(self.build(source, map)?)
            }
            Family::V6 => {
                self.stats.other_family += self.admitted[0];
                let map = std::mem::take(&mut self.v6);
                AnyTable::V6(self.build(source, map)?)
            }
        };
        Ok((table, self.stats))
    }

    fn build<A: Address>(
        &mut self,
        source: &str,
        map: HashMap<Prefix<A>, PathAttrs>,
    ) -> Result<Table<A>, ReadError> {
        if map.is_empty() {
            return Err(self.no_routes(source, Some(A::FAMILY)));
        }
        // Sorted, so next-hop ids are assigned in prefix order: deterministic.
        let mut routes: Vec<(Prefix<A>, PathAttrs)> = map.into_iter().collect();
        routes.sort_unstable_by_key(|(p, _)| *p);
        let mut table = Table::new(source);
        let mut ids: HashMap<IpAddr, NextHop> = HashMap::new();
        for (p, path) in routes {
            let nh = path.next_hop.unwrap_or_else(|| {
                self.stats.missing_next_hop += 1;
                path.peer
            });
            let id = *ids
                .entry(nh)
                .or_insert_with(|| table.next_hops.intern(nh.to_string()));
            table.rib.insert(p, id);
        }
        table.rib.complete_index();
        Ok(table)
    }

    #[cold]
    fn no_routes(&self, source: &str, family: Option<Family>) -> ReadError {
        let what = match family {
            Some(f) => format!("no {f} routes"),
            None => "no routes".to_string(),
        };
        let note = self.stats.skipped_note();
        match self.peer {
            Some(p) => {
                let mut peers: Vec<_> = self.peers.iter().copied().collect();
                peers.sort();
                let list: Vec<String> = peers.iter().take(50).map(|p| p.to_string()).collect();
                let more = if peers.len() > 50 { ", …" } else { "" };
                ReadError::whole(
                    source,
                    format!(
                        "{what} from peer {p} (the {} peers are: {}{more}){note}",
                        peers.len(),
                        list.join(", ")
                    ),
                )
            }
            None if self
                .stats
                .skipped_records
                .iter()
                .any(|(k, _)| k.contains("MESSAGE")) =>
            {
                ReadError::whole(
                    source,
                    format!("{what}{note} (an update file? read it with read_updates)"),
                )
            }
            None => ReadError::whole(source, format!("{what}{note}")),
        }
    }
}
