//! `bgpdump -m` RIB text: `TABLE_DUMP2|time|B|peer_ip|peer_as|prefix|as_path|origin|
//! next_hop|local_pref|med|communities|atomic_agg|aggregator|`.

use crate::shown::Shown;
use std::net::IpAddr;

use super::multipeer::{MultiPeer, PathAttrs};
use super::text::{guess_family, parse_prefix, prefix_message, FamilyOrigin};
use super::{LineReader, ReadError, ReadStats, TableOptions};
use crate::prefix::{Family, Ipv4, Ipv6};
use crate::table::AnyTable;
use std::io::BufRead;

/// Whether a text input whose first line that is not blank is `line` is a `bgpdump -m`
/// dump: the line starts with `TABLE_DUMP` or `BGP4MP` followed by `|`.
pub(crate) fn is_bgpdump_line(line: &str) -> bool {
    let l = line.trim();
    l.split('|').next().is_some_and(|t| {
        matches!(
            t,
            "TABLE_DUMP" | "TABLE_DUMP2" | "TABLE_DUMP_V2" | "BGP4MP" | "BGP4MP_ET"
        )
    }) && l.contains('|')
}

/// True if the text is a `bgpdump -m` dump (its first line that is not blank says so);
/// that line is read again next.
pub(crate) fn starts_bgpdump<R: BufRead>(lines: &mut LineReader<R>) -> Result<bool, ReadError> {
    while let Some(line) = lines.next_filled_line()? {
        if line.trim().is_empty() {
            continue;
        }
        let yes = is_bgpdump_line(line);
        lines.unread();
        return Ok(yes);
    }
    Ok(false)
}

/// The length of a `bgpdump` AS path as BGP counts it: each AS of a sequence counts 1, an
/// AS_SET (`{1,2,3}`) counts 1, confederation segments (`(…)` or `[…]`) count 0.
pub(crate) fn as_path_len(path: &str) -> u32 {
    let mut n = 0;
    // The closing character of the segment being skipped, if inside one.
    let mut inside: Option<char> = None;
    for tok in path.split_ascii_whitespace() {
        if let Some(close) = inside {
            if tok.ends_with(close) {
                inside = None;
            }
            continue;
        }
        let close = match tok.as_bytes()[0] {
            b'{' => {
                n += 1;
                '}'
            }
            b'(' => ')',
            b'[' => ']',
            _ => {
                n += 1;
                continue;
            }
        };
        if !tok.ends_with(close) {
            inside = Some(close);
        }
    }
    n
}

/// Reads the rest of `lines`, a `bgpdump -m` RIB dump, into a FIB (see
/// [`super::best_path`]).
pub(crate) fn read_bgpdump_rib<R: BufRead>(
    lines: &mut LineReader<R>,
    opts: &TableOptions,
    want: Option<Family>,
) -> Result<(AnyTable, ReadStats), ReadError> {
    let source = lines.source().to_string();
    let source = source.as_str();
    let mut rib = MultiPeer::new(opts, want);
    while let Some((lineno, line)) = lines.next_numbered()? {
        if line.trim().is_empty() {
            continue;
        }
        let err = |m: String| ReadError::at_line(source, lineno, m);
        let f: Vec<&str> = line.split('|').collect();
        if f.len() < 10 {
            return Err(err(format!(
                "{} fields; a bgpdump -m RIB line has at least 10 (TYPE|TIME|B|PEER_IP|PEER_AS|PREFIX|AS_PATH|ORIGIN|NEXT_HOP|LOCAL_PREF|…)",
                f.len()
            )));
        }
        if !f[0].starts_with("TABLE_DUMP") || f[2] != "B" {
            return Err(err(format!(
                "not a RIB entry ({}|…|{}); update dumps are read by read_updates",
                f[0], f[2]
            )));
        }
        let peer: IpAddr = f[3]
            .parse()
            .map_err(|_| err(format!("bad peer address {:?}", Shown(f[3]))))?;
        let origin = match f[7] {
            "IGP" => 0,
            "EGP" => 1,
            "INCOMPLETE" => 2,
            o => {
                return Err(err(format!(
                    "bad origin {:?} (expected IGP, EGP or INCOMPLETE)",
                    Shown(o)
                )))
            }
        };
        let next_hop = if f[8].is_empty() {
            None
        } else {
            Some(
                f[8].parse::<IpAddr>()
                    .map_err(|_| err(format!("bad next hop {:?}", Shown(f[8]))))?,
            )
        };
        let local_pref = if f[9].is_empty() {
            0
        } else {
            f[9].parse::<u32>()
                .map_err(|_| err(format!("bad LOCAL_PREF {:?}", Shown(f[9]))))?
        };
        let path = PathAttrs {
            peer,
            local_pref,
            as_path_len: as_path_len(f[6]),
            origin,
            next_hop,
        };
        let ptok = f[5];
        match guess_family(ptok) {
            Family::V4 => {
                let p = parse_prefix::<Ipv4>(ptok, opts.normalize)
                    .map_err(|e| err(prefix_message::<Ipv4>(ptok, e, FamilyOrigin::Requested)))?;
                rib.add_v4(p, path);
            }
            Family::V6 => {
                let p = parse_prefix::<Ipv6>(ptok, opts.normalize)
                    .map_err(|e| err(prefix_message::<Ipv6>(ptok, e, FamilyOrigin::Requested)))?;
                rib.add_v6(p, path);
            }
        }
    }
    rib.stats.lines = lines.line();
    rib.finish(source)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_lengths() {
        assert_eq!(as_path_len(""), 0);
        assert_eq!(as_path_len("2497 2914 4788"), 3);
        assert_eq!(as_path_len("2497 {1,2,3}"), 2);
        assert_eq!(as_path_len("(65001 65002) 2497 4788"), 2);
        assert_eq!(as_path_len("[65001] 2497"), 1);
        assert_eq!(as_path_len("1 {2 3 4} 5"), 3);
    }

    #[test]
    fn detection() {
        assert!(is_bgpdump_line(
            " TABLE_DUMP2|1|B|1.2.3.4|1|10.0.0.0/8|1|IGP|1.2.3.4|0|0||NAG||"
        ));
        assert!(!is_bgpdump_line("10.0.0.0/8 a"));
    }

    fn read(text: &str, opts: &TableOptions) -> Result<(AnyTable, ReadStats), ReadError> {
        read_bgpdump_rib(&mut LineReader::new(text.as_bytes(), "r"), opts, None)
    }

    #[test]
    fn best_path_and_peer() {
        let text = "TABLE_DUMP2|1|B|192.0.2.2|2|10.0.0.0/8|2 3|IGP|192.0.2.2|0|0||NAG||\n\
                    TABLE_DUMP2|1|B|192.0.2.1|1|10.0.0.0/8|1 5 3|IGP|192.0.2.9|0|0||NAG||\n\
                    TABLE_DUMP2|1|B|192.0.2.1|1|11.0.0.0/8|1 3|INCOMPLETE|192.0.2.9|0|0||NAG||\n\
                    TABLE_DUMP2|1|B|192.0.2.2|2|11.0.0.0/8|2 3|IGP|192.0.2.2|0|0||NAG||\n\
                    TABLE_DUMP2|1|B|192.0.2.2|2|2001:db8::/32|2 3|IGP|2001:db8::1|0|0||NAG||\n";
        let (t, s) = read(text, &TableOptions::default()).unwrap();
        let AnyTable::V4(t) = t else { panic!() };
        let name = |a: u32| t.next_hops.value(t.rib.lookup(a).unwrap()).unwrap().clone();
        assert_eq!(name(0x0a00_0000), "192.0.2.2");
        assert_eq!(name(0x0b00_0000), "192.0.2.2"); // IGP beats INCOMPLETE
        assert_eq!((s.rib_entries, s.peers, s.other_family), (5, 2, 1));
        let opts = TableOptions {
            peer: Some("192.0.2.1".parse().unwrap()),
            ..TableOptions::default()
        };
        let (t, s) = read(text, &opts).unwrap();
        let AnyTable::V4(t) = t else { panic!() };
        assert_eq!(
            t.next_hops
                .value(t.rib.lookup(0x0a00_0000).unwrap())
                .unwrap(),
            "192.0.2.9"
        );
        assert_eq!(s.other_peers, 3);
        let opts = TableOptions {
            peer: Some("192.0.2.7".parse().unwrap()),
            ..TableOptions::default()
        };
        let e = read(text, &opts).unwrap_err();
        assert_eq!(
            e.to_string(),
            "r: no routes from peer 192.0.2.7 (the 2 peers are: 192.0.2.1, 192.0.2.2)"
        );
        let e = read(
            "TABLE_DUMP2|1|B|x|1|10.0.0.0/8|1|IGP|1.2.3.4|0|0||NAG||\n",
            &TableOptions::default(),
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "r:1: bad peer address \"x\"");
    }
}
