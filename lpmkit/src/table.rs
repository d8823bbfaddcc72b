//! A loaded routing table: the [`Rib`] plus the names of its next hops.

use crate::nexthop::NextHopTable;
use crate::prefix::{Address, Family, Ipv4, Ipv6};
use crate::rib::Rib;

/// A routing table as read from a file or generated: routes, next-hop names, a label.
#[derive(Clone, Debug)]
pub struct Table<A: Address> {
    /// The routes.
    pub rib: Rib<A>,
    /// The user value behind each next-hop id (an address, `AS64500`, `nh17`, …).
    pub next_hops: NextHopTable<String>,
    /// Where the table came from (a file name, `synthetic-v4-seed1`, …).
    pub name: String,
}

impl<A: Address> Table<A> {
    /// An empty table with a label.
    pub fn new(name: impl Into<String>) -> Self {
        Table {
            rib: Rib::new(),
            next_hops: NextHopTable::new(),
            name: name.into(),
        }
    }
}

/// A table of either family, for code that learns the family from the input.
#[derive(Clone, Debug)]
pub enum AnyTable {
    /// An IPv4 table.
    V4(Table<Ipv4>),
    /// An IPv6 table.
    V6(Table<Ipv6>),
}

impl AnyTable {
    /// The table's family.
    pub fn family(&self) -> Family {
        match self {
            AnyTable::V4(_) => Family::V4,
            AnyTable::V6(_) => Family::V6,
        }
    }

    /// The table's label.
    pub fn name(&self) -> &str {
        match self {
            AnyTable::V4(t) => &t.name,
            AnyTable::V6(t) => &t.name,
        }
    }
}
