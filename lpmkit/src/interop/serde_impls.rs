//! `serde` support (feature `serde`): [`Prefix`] as its text form (`"10.0.0.0/8"`),
//! [`NextHop`] as its id, [`NextHopTable`] as its values in id order, [`Rib`] as its
//! routes `[prefix, next hop]` in order, and [`Table`] as `{name, next_hops, routes}`.
//! Deserialising checks what it reads: a malformed prefix, a next hop of 0, a value that
//! appears twice in a next-hop table, a route whose next hop the table does not have, or a
//! prefix given twice is an error, never a silently different table.
//!
//! ```
//! use lpmkit::{Ipv4, NextHopTable, Rib, Table};
//! let mut t = Table::<Ipv4>::new("example");
//! let nh = t.next_hops.intern("192.0.2.1".to_string());
//! t.rib.insert("10.0.0.0/8".parse()?, nh);
//! let json = serde_json::to_string(&t)?;
//! assert_eq!(json, r#"{"name":"example","next_hops":["192.0.2.1"],"routes":[["10.0.0.0/8",1]]}"#);
//! let back: Table<Ipv4> = serde_json::from_str(&json)?;
//! assert_eq!(back.rib.lookup(0x0a00_0001), Some(nh));
//! assert!(serde_json::from_str::<Table<Ipv4>>(r#"{"name":"x","next_hops":[],"routes":[["10.0.0.0/8",1]]}"#).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use core::fmt;
use core::hash::Hash;
use core::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeSeq, SerializeStruct, Serializer};

use crate::nexthop::{NextHop, NextHopTable};
use crate::prefix::{Address, Prefix};
use crate::rib::Rib;
use crate::table::Table;

impl<A: Address> Serialize for Prefix<A> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de, A: Address> Deserialize<'de> for Prefix<A> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        text.parse().map_err(de::Error::custom)
    }
}

impl Serialize for NextHop {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u32(self.get())
    }
}

impl<'de> Deserialize<'de> for NextHop {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = u32::deserialize(d)?;
        NextHop::new(v).ok_or_else(|| de::Error::custom("next-hop id 0 means \"no route\""))
    }
}

impl<V: Serialize> Serialize for NextHopTable<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.len()))?;
        for (_, v) in self.iter() {
            seq.serialize_element(v)?;
        }
        seq.end()
    }
}

impl<'de, V: Deserialize<'de> + Eq + Hash + Clone> Deserialize<'de> for NextHopTable<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let values = Vec::<V>::deserialize(d)?;
        let mut t = NextHopTable::new();
        for (i, v) in values.into_iter().enumerate() {
            if t.intern(v).get() as usize != i + 1 {
                return Err(de::Error::custom(format!(
                    "next-hop value {} repeats an earlier one",
                    i + 1
                )));
            }
        }
        Ok(t)
    }
}

impl<A: Address> Serialize for Rib<A> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.len()))?;
        for route in self.iter() {
            seq.serialize_element(&route)?;
        }
        seq.end()
    }
}

impl<'de, A: Address> Deserialize<'de> for Rib<A> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Routes<A>(PhantomData<A>);
        impl<'de, A: Address> Visitor<'de> for Routes<A> {
            type Value = Rib<A>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence of [prefix, next hop] routes")
            }
            fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Rib<A>, S::Error> {
                let mut rib = Rib::new();
                while let Some((p, nh)) = seq.next_element::<(Prefix<A>, NextHop)>()? {
                    if rib.insert(p, nh).is_some() {
                        return Err(de::Error::custom(format!("route {p} is given twice")));
                    }
                }
                Ok(rib)
            }
        }
        d.deserialize_seq(Routes(PhantomData))
    }
}

impl<A: Address> Serialize for Table<A> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Table", 3)?;
        st.serialize_field("name", &self.name)?;
        st.serialize_field("next_hops", &self.next_hops)?;
        st.serialize_field("routes", &self.rib)?;
        st.end()
    }
}

impl<'de, A: Address> Deserialize<'de> for Table<A> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Raw<A: Address> {
            name: String,
            next_hops: NextHopTable<String>,
            #[serde(bound(deserialize = ""))]
            routes: Rib<A>,
        }
        let raw = Raw::<A>::deserialize(d)?;
        if let Some((p, nh)) = raw
            .routes
            .iter()
            .find(|(_, nh)| nh.get() as usize > raw.next_hops.len())
        {
            return Err(de::Error::custom(format!(
                "route {p} uses next hop {nh}, but the table has {} next hops",
                raw.next_hops.len()
            )));
        }
        Ok(Table {
            rib: raw.routes,
            next_hops: raw.next_hops,
            name: raw.name,
        })
    }
}
