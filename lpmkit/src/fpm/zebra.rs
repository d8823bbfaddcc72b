//! zebra's own answer for an address (`show ip route A json` through `vtysh`), and its
//! comparison with a lookup's.

use std::io;
use std::net::IpAddr;
use std::process::Command;

use serde_json::Value;

use crate::netlink::{Path, RouteTarget, Verdict};
use crate::prefix::{format_addr, Address, Family, Prefix};

/// What zebra answers for one destination: the route it selected for the longest
/// matching prefix (as `show ip route A` shows it), or none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ZebraAnswer<A: Address> {
    /// No route matches.
    NoRoute,
    /// The selected route of the longest matching prefix.
    Route {
        /// The matching prefix.
        prefix: Prefix<A>,
        /// The protocol that gave it (`bgp`, `static`, `connected`, `kernel`, …).
        protocol: String,
        /// What it does: its paths in the FIB (gateway and interface), or the kind of
        /// drop.
        target: RouteTarget,
    },
}

/// Asks zebra through `vtysh`, many addresses per run of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZebraQuery {
    command: Vec<String>,
    vrf: Option<String>,
}

/// Addresses asked per run of `vtysh`.
const PER_RUN: usize = 2000;

impl ZebraQuery {
    /// `command` runs vtysh (e.g. `["vtysh"]`, or `["vtysh", "-N", "NAME"]` for a zebra
    /// started with a path space); `vrf` names the VRF (`None`: the default VRF).
    pub fn new(command: &[String], vrf: Option<&str>) -> Self {
        ZebraQuery {
            command: command.to_vec(),
            vrf: vrf.map(str::to_string),
        }
    }

    /// zebra's answer for every address of `keys`, in order.
    pub fn get_many<A: Address>(&self, keys: &[A]) -> io::Result<Vec<ZebraAnswer<A>>> {
        let mut out = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(PER_RUN) {
            let (program, mut cmd, show) = self.vtysh(A::FAMILY)?;
            for &k in chunk {
                cmd.arg("-c").arg(format!("{show} {} json", format_addr(k)));
            }
            let run = cmd
                .output()
                .map_err(|e| io::Error::new(e.kind(), format!("cannot run {program}: {e}")))?;
            let text = String::from_utf8_lossy(&run.stdout);
            let mut answers = Vec::with_capacity(chunk.len());
            for v in serde_json::Deserializer::from_str(&text).into_iter::<Value>() {
                let v = v.map_err(|e| {
                    io::Error::other(format!("{program} printed what is not JSON: {e}"))
                })?;
                answers.push(answer::<A>(&v).map_err(io::Error::other)?);
            }
            if answers.len() != chunk.len() {
                return Err(io::Error::other(format!(
                    "{program} answered {} of {} lookups ({}): {}",
                    answers.len(),
                    chunk.len(),
                    run.status,
                    String::from_utf8_lossy(&run.stderr).trim()
                )));
            }
            out.extend(answers);
        }
        Ok(out)
    }
}

impl ZebraQuery {
    /// The routes in zebra's FIB for family `family` (`routesTotalFib` of
    /// `show ip route summary json`), every protocol.
    pub fn fib_count(&self, family: Family) -> io::Result<usize> {
        let (program, mut cmd, show) = self.vtysh(family)?;
        let run = cmd
            .arg("-c")
            .arg(format!("{show} summary json"))
            .output()
            .map_err(|e| io::Error::new(e.kind(), format!("cannot run {program}: {e}")))?;
        let v: Value = serde_json::from_slice(&run.stdout).map_err(|e| {
            io::Error::other(format!(
                "{program} printed what is not JSON ({e}): {}",
                String::from_utf8_lossy(&run.stdout).trim()
            ))
        })?;
        v.get("routesTotalFib")
            .and_then(Value::as_u64)
            .map(|n| n as usize)
            .ok_or_else(|| io::Error::other(format!("no routesTotalFib in zebra's summary: {v}")))
    }
}

impl ZebraQuery {
    /// vtysh's program name, its command with the arguments that come before the
    /// commands, and the start of a `show` command for `family` (`show ip route vrf V`).
    fn vtysh(&self, family: Family) -> io::Result<(&str, Command, String)> {
        let (program, args) = self
            .command
            .split_first()
            .ok_or_else(|| io::Error::other("no vtysh command"))?;
        let ip = match family {
            Family::V4 => "ip",
            Family::V6 => "ipv6",
        };
        let vrf = self
            .vrf
            .as_ref()
            .map(|v| format!(" vrf {v}"))
            .unwrap_or_default();
        let mut cmd = Command::new(program);
        cmd.args(args);
        Ok((program, cmd, format!("show {ip} route{vrf}")))
    }
}

/// One `show ip route A json` object: `{"PREFIX": [routes]}`, the selected route among
/// them (`{"0.0.0.0/0": []}` or `{}` when nothing matches).
fn answer<A: Address>(v: &Value) -> Result<ZebraAnswer<A>, String> {
    let Some(obj) = v.as_object() else {
        return Err(format!("not a JSON object: {v}"));
    };
    for (prefix, routes) in obj {
        for r in routes.as_array().into_iter().flatten() {
            if r.get("selected") != Some(&Value::Bool(true)) {
                continue;
            }
            let prefix: Prefix<A> = prefix
                .parse()
                .map_err(|e| format!("zebra's prefix {prefix:?}: {e}"))?;
            let protocol = r
                .get("protocol")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            return Ok(ZebraAnswer::Route {
                prefix,
                protocol,
                target: target(r)?,
            });
        }
    }
    Ok(ZebraAnswer::NoRoute)
}

/// What a route of zebra's JSON does: its nexthops in the FIB (`"fib": true`; the active
/// ones if none is marked), or the kind of drop.
fn target(route: &Value) -> Result<RouteTarget, String> {
    let hops: Vec<&Value> = route
        .get("nexthops")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let flag = |h: &Value, k: &str| h.get(k) == Some(&Value::Bool(true));
    let mut used: Vec<&Value> = hops.iter().copied().filter(|h| flag(h, "fib")).collect();
    if used.is_empty() {
        used = hops.iter().copied().filter(|h| flag(h, "active")).collect();
    }
    let mut paths = Vec::new();
    for h in used {
        if flag(h, "reject") {
            return Ok(RouteTarget::Unreachable);
        }
        if flag(h, "admin-prohibited") {
            return Ok(RouteTarget::Prohibit);
        }
        if flag(h, "blackhole") {
            return Ok(RouteTarget::Blackhole);
        }
        let gateway = match h.get("ip").and_then(Value::as_str) {
            Some(s) => Some(
                s.parse::<IpAddr>()
                    .map_err(|e| format!("zebra's nexthop {s:?}: {e}"))?,
            ),
            None => None,
        };
        let ifindex = h.get("interfaceIndex").and_then(Value::as_u64).unwrap_or(0) as u32;
        let weight = h.get("weight").and_then(Value::as_u64).unwrap_or(1).max(1) as u16;
        paths.push(Path {
            gateway,
            ifindex,
            weight,
            dead: false,
        });
    }
    paths.sort();
    Ok(RouteTarget::Unicast(paths))
}

/// Compares zebra's `answer` with `ours` (the target of the next hop a lookup returned;
/// `None` for no route): the same kind, and for unicast the same paths (gateway and
/// interface; weights aside). A connected or kernel route lpmkit answers differently is
/// [`Verdict::Skip`]: zebra streams those only in the table walk after a connection.
pub fn compare<A: Address>(answer: &ZebraAnswer<A>, ours: Option<&RouteTarget>) -> Verdict {
    let agree = |b: bool| if b { Verdict::Agree } else { Verdict::Differ };
    match (answer, ours) {
        (ZebraAnswer::NoRoute, ours) => agree(ours.is_none()),
        (ZebraAnswer::Route { target, .. }, Some(o)) if same(target, o) => Verdict::Agree,
        (ZebraAnswer::Route { protocol, .. }, _)
            if matches!(protocol.as_str(), "connected" | "kernel" | "local") =>
        {
            Verdict::Skip
        }
        (ZebraAnswer::Route { .. }, _) => Verdict::Differ,
    }
}

/// The same action: equal kinds, and unicast paths equal as sets of (gateway, interface).
fn same(a: &RouteTarget, b: &RouteTarget) -> bool {
    match (a, b) {
        (RouteTarget::Unicast(x), RouteTarget::Unicast(y)) => {
            x.len() == y.len() && x.iter().all(|p| y.iter().any(|q| p.same_hop(q)))
        }
        (a, b) => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prefix::Ipv4;

    fn parse(text: &str) -> Vec<ZebraAnswer<Ipv4>> {
        serde_json::Deserializer::from_str(text)
            .into_iter::<Value>()
            .map(|v| answer::<Ipv4>(&v.unwrap()).unwrap())
            .collect()
    }

    /// zebra 8.4's output for a BGP route, an unreachable and a blackhole static, a
    /// connected prefix, an ECMP static and no route (trimmed to the fields read).
    #[test]
    fn zebra_json_answers() {
        let text = r#"
{"35.0.0.0/8":[{"prefix":"35.0.0.0/8","protocol":"bgp","selected":true,"installed":true,
  "nexthops":[{"flags":3,"fib":true,"ip":"10.0.1.1","afi":"ipv4","interfaceIndex":2,"active":true,"weight":1}]}]}
{"100.64.0.0/10":[{"protocol":"static","selected":true,
  "nexthops":[{"fib":true,"unreachable":true,"reject":true,"active":true}]}]}
{"198.51.100.0/24":[{"protocol":"static","selected":true,
  "nexthops":[{"fib":true,"unreachable":true,"blackhole":true,"active":true}]}]}
{"10.0.0.0/16":[{"protocol":"connected","selected":true,
  "nexthops":[{"fib":true,"directlyConnected":true,"interfaceIndex":2,"active":true}]}]}
{"203.0.113.0/24":[{"protocol":"bgp","distance":20,"nexthops":[{"ip":"10.0.9.9","interfaceIndex":2,"active":true}]},
  {"protocol":"static","selected":true,"nexthops":[
   {"fib":true,"ip":"10.0.0.4","interfaceIndex":2,"active":true,"weight":1},
   {"fib":true,"ip":"10.0.0.3","interfaceIndex":2,"active":true,"weight":1}]}]}
{"0.0.0.0/0":[]}
{}
"#;
        let got = parse(text);
        let route = |p: &str, proto: &str, t: RouteTarget| ZebraAnswer::Route {
            prefix: p.parse().unwrap(),
            protocol: proto.to_string(),
            target: t,
        };
        let via = |ip: &str| Path {
            gateway: Some(ip.parse().unwrap()),
            ifindex: 2,
            weight: 1,
            dead: false,
        };
        assert_eq!(
            got,
            vec![
                route(
                    "35.0.0.0/8",
                    "bgp",
                    RouteTarget::via("10.0.1.1".parse().unwrap(), 2)
                ),
                route("100.64.0.0/10", "static", RouteTarget::Unreachable),
                route("198.51.100.0/24", "static", RouteTarget::Blackhole),
                route(
                    "10.0.0.0/16",
                    "connected",
                    RouteTarget::Unicast(vec![Path {
                        gateway: None,
                        ifindex: 2,
                        weight: 1,
                        dead: false
                    }])
                ),
                route(
                    "203.0.113.0/24",
                    "static",
                    RouteTarget::Unicast(vec![via("10.0.0.3"), via("10.0.0.4")])
                ),
                ZebraAnswer::NoRoute,
                ZebraAnswer::NoRoute,
            ]
        );
        // Comparisons: paths as sets, weights aside; a wrong or missing route differs;
        // a connected route lpmkit lacks is not counted.
        let ecmp = RouteTarget::Unicast(vec![
            Path {
                weight: 3,
                ..via("10.0.0.4")
            },
            via("10.0.0.3"),
        ]);
        assert_eq!(compare(&got[4], Some(&ecmp)), Verdict::Agree);
        assert_eq!(
            compare(
                &got[4],
                Some(&RouteTarget::via("10.0.0.3".parse().unwrap(), 2))
            ),
            Verdict::Differ
        );
        assert_eq!(
            compare(&got[1], Some(&RouteTarget::Blackhole)),
            Verdict::Differ
        );
        assert_eq!(compare(&got[0], None), Verdict::Differ);
        assert_eq!(compare(&got[3], None), Verdict::Skip);
        assert_eq!(compare(&got[5], None), Verdict::Agree);
        assert_eq!(
            compare(&got[5], Some(&RouteTarget::Blackhole)),
            Verdict::Differ
        );
        // Not an object: an error, not a panic.
        assert!(answer::<Ipv4>(&serde_json::json!([1])).is_err());
        assert!(answer::<Ipv4>(&serde_json::json!({"nonsense": [{"selected": true}]})).is_err());
    }
}
