//! The process's FIB names. As in DPDK, a name is taken by one table at a time, across
//! both families: DPDK names each table's RIB memory pool after it, so an `rte_fib` and an
//! `rte_fib6` cannot share a name either (`EEXIST`), while `find_existing` finds a name
//! only among tables of its own family (`ENOENT`). Names are unique per process (DPDK's
//! are per shared-memory domain: its secondary processes see the primary's tables).

use std::collections::HashMap;
use std::sync::Mutex;

use lpmkit::Family;

/// DPDK's `RTE_FIB_NAMESIZE`: a name fits its 64-byte field with the NUL.
pub const NAMESIZE: usize = 64;

/// Name → (family, handle address).
type Names = HashMap<Vec<u8>, (Family, usize)>;

static NAMES: Mutex<Option<Names>> = Mutex::new(None);

fn with<R>(f: impl FnOnce(&mut Names) -> R) -> R {
    let mut g = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(HashMap::new))
}

/// Takes `name` for the table at `handle`; false if a table of either family has it.
pub fn register(name: &[u8], family: Family, handle: usize) -> bool {
    with(|m| {
        if m.contains_key(name) {
            return false;
        }
        m.insert(name.to_vec(), (family, handle));
        true
    })
}

/// True if a table of either family has `name`.
pub fn taken(name: &[u8]) -> bool {
    with(|m| m.contains_key(name))
}

/// The handle of the table of `family` named `name`.
pub fn find(name: &[u8], family: Family) -> Option<usize> {
    with(|m| match m.get(name) {
        Some(&(f, h)) if f == family => Some(h),
        _ => None,
    })
}

/// Releases `name` if the table at `handle` holds it.
pub fn release(name: &[u8], handle: usize) {
    with(|m| {
        if m.get(name).is_some_and(|&(_, h)| h == handle) {
            m.remove(name);
        }
    });
}
