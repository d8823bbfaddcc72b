//! Builds `examples/lookup.c` against the static library with the system C compiler, runs
//! its checks (add/delete, error codes and messages), compares its answers on real tables
//! with the library's, and runs it under AddressSanitizer and valgrind when the machine
//! has them (CI installs both; `LPMKIT_REQUIRE_C_TOOLS=1` makes their absence a failure).

use std::path::{Path, PathBuf};
use std::process::Command;

use lpmkit::{AnyTable, Table};

fn require_tools() -> bool {
    std::env::var_os("LPMKIT_REQUIRE_C_TOOLS").is_some()
}

/// The static library cargo built beside this test binary.
fn staticlib() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    for dir in [deps.parent().unwrap(), deps] {
        let p = dir.join("liblpmkit_capi.a");
        if p.is_file() {
            return p;
        }
    }
    panic!("liblpmkit_capi.a not found next to {}", exe.display());
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lpmkit-capi-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Compiles the example; `None` if the compiler refuses `extra` flags (a sanitizer the
/// machine lacks).
fn compile(out: &Path, extra: &[&str]) -> Option<PathBuf> {
    let dir = env!("CARGO_MANIFEST_DIR");
    let exe = out.join(if extra.is_empty() {
        "lookup"
    } else {
        "lookup-asan"
    });
    let o = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-std=gnu11", "-O1", "-g", "-Wall", "-Wextra", "-Werror"])
        .args(extra)
        .arg(format!("-I{dir}/include"))
        .arg(format!("{dir}/examples/lookup.c"))
        .arg(staticlib())
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe)
        .output()
        .expect("a C compiler (cc) is installed");
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!extra.is_empty(), "the example does not compile:\n{err}");
        eprintln!("note: cc {extra:?} failed:\n{err}");
        return None;
    }
    Some(exe)
}

fn data(rel: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("LPMKIT_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"));
    let p = dir.join(rel);
    if p.is_file() {
        return Some(p);
    }
    assert!(
        std::env::var_os("LPMKIT_REQUIRE_DATA").is_none(),
        "LPMKIT_REQUIRE_DATA is set but {} is missing",
        p.display()
    );
    eprintln!("note: {} is missing; skipping", p.display());
    None
}

/// Runs the example on `table` and compares each line with the library's answer.
fn compare<A: lpmkit::Address>(
    exe: &Path,
    table_path: &Path,
    t: &Table<A>,
    keys: &[A],
    dir: &Path,
) {
    let addrs = dir.join("addrs.txt");
    let text: String = keys
        .iter()
        .map(|&k| format!("{}\n", lpmkit::prefix::format_addr(k)))
        .collect();
    std::fs::write(&addrs, text).unwrap();
    let o = Command::new(exe)
        .arg(table_path)
        .arg(&addrs)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    let mut n = 0;
    for (line, &k) in out.lines().zip(keys) {
        let want = match t.rib.lookup(k) {
            // Values are the next hops' ids: 1, 2, … in order of first appearance.
            Some(nh) => format!(
                "{} {} {}",
                lpmkit::prefix::format_addr(k),
                nh.get(),
                t.next_hops.value(nh).unwrap()
            ),
            None => format!("{} 0 -", lpmkit::prefix::format_addr(k)),
        };
        assert_eq!(line, want);
        n += 1;
    }
    assert_eq!(n, keys.len(), "one line per address");
}

#[test]
fn the_c_example_agrees_with_the_library() {
    let dir = scratch("agree");
    let exe = compile(&dir, &[]).unwrap();
    let o = Command::new(&exe).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for rel in [
        "fib/ipv4-ris-rrc06-2010-07-01-fib.txt.xz",
        "fib/ipv6-ris-rrc01-linx-2017-01-12-fib.txt.xz",
    ] {
        let Some(path) = data(rel) else { continue };
        match lpmkit::io::read_table(&path, &Default::default()).unwrap() {
            AnyTable::V4(t) => {
                let mut keys: Vec<u32> = lpmkit::traffic::uniform(20_000, 5);
                keys.extend(lpmkit::traffic::boundary_keys(&t.rib).iter().step_by(31));
                compare(&exe, &path, &t, &keys, &dir);
            }
            AnyTable::V6(t) => {
                let mut keys = lpmkit::traffic::v6_matching(&t.rib, 20_000, 5);
                keys.extend(lpmkit::traffic::boundary_keys(&t.rib).iter().step_by(7));
                compare(&exe, &path, &t, &keys, &dir);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The example's checks and a small table under AddressSanitizer (with leak detection)
/// and under valgrind's memcheck.
#[test]
fn the_c_example_is_clean_under_asan_and_valgrind() {
    let dir = scratch("clean");
    let table = dir.join("t.txt");
    std::fs::write(&table, "0.0.0.0/0 up\n10.0.0.0/8 AS1\n10.1.0.0/16 AS2\n").unwrap();
    let addrs = dir.join("a.txt");
    std::fs::write(&addrs, "10.1.0.1\n10.2.0.1\n11.0.0.1\n").unwrap();
    let want = "10.1.0.1 3 AS2\n10.2.0.1 2 AS1\n11.0.0.1 1 up\n";

    match compile(&dir, &["-fsanitize=address", "-fno-omit-frame-pointer"]) {
        Some(asan) => {
            let o = Command::new(&asan)
                .arg(&table)
                .arg(&addrs)
                .env(
                    "ASAN_OPTIONS",
                    "detect_leaks=1:abort_on_error=0:exitcode=23",
                )
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "ASan: {err}");
            assert_eq!(String::from_utf8_lossy(&o.stdout), want);
        }
        None => assert!(
            !require_tools(),
            "LPMKIT_REQUIRE_C_TOOLS is set but ASan is missing"
        ),
    }

    let exe = compile(&dir, &[]).unwrap();
    match Command::new("valgrind")
        .args([
            "--error-exitcode=23",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
            "-q",
        ])
        .arg(&exe)
        .arg(&table)
        .arg(&addrs)
        .output()
    {
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "valgrind: {err}");
            assert_eq!(String::from_utf8_lossy(&o.stdout), want);
        }
        Err(_) => assert!(
            !require_tools(),
            "LPMKIT_REQUIRE_C_TOOLS is set but valgrind is missing"
        ),
    }
    let _ = std::fs::remove_dir_all(&dir);
}
