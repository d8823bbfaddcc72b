//! The forwarding engine: an emulated NIC (RX and TX descriptor rings over a buffer
//! pool) and a run-to-completion worker that takes a batch from its RX ring, parses,
//! looks the batch up, rewrites and enqueues on per-port TX rings.

use lpmkit::sync::LookupHandle;
use lpmkit::Address;

use super::packet::{self, Drop, HEADROOM};
use crate::tsc::ticks;

/// Buffer slot size (one frame, as a DPDK mbuf's data room).
const SLOT: usize = 2048;
/// RX ring descriptors.
const RX_RING: usize = 1024;
/// A TX ring is handed to the NIC when it holds this many frames.
const TX_BURST: usize = 32;

/// The frames arriving on the wire, in order (cycled): their first [`HEADROOM`] bytes
/// (all the forwarder reads or writes) and their length.
pub struct Wire {
    pub headers: Vec<[u8; HEADROOM]>,
    pub lens: Vec<u16>,
}

/// Per next-hop id: the MACs to write (neighbour's, then the port's) and the port.
pub struct Neighbours {
    pub macs: Vec<[u8; 12]>,
    pub port: Vec<u16>,
    pub ports: usize,
}

impl Neighbours {
    /// Next hop `nh` goes out of port `nh % ports` to MAC 02:00:nh(32 bits); port `p`'s
    /// MAC is 02:00:00:00:ff:p.
    pub fn new(max_nh: usize, ports: usize) -> Self {
        let mut macs = vec![[0u8; 12]; max_nh + 1];
        let mut port = vec![0u16; max_nh + 1];
        for nh in 1..=max_nh {
            let p = nh % ports;
            let n = (nh as u32).to_be_bytes();
            macs[nh] = [
                0x02, 0, n[0], n[1], n[2], n[3], 0x02, 0, 0, 0, 0xff, p as u8,
            ];
            port[nh] = p as u16;
        }
        Neighbours { macs, port, ports }
    }
}

#[derive(Clone, Copy, Debug)]
struct Desc {
    slot: u32,
    len: u16,
    /// Index of the frame on the wire (for the reference check).
    wire: u32,
}

/// Frames per outcome.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    pub received: u64,
    pub forwarded: u64,
    pub no_route: u64,
    pub expired: u64,
    pub malformed: u64,
    pub tx_bytes: u64,
}

impl Counters {
    pub fn add(&mut self, o: &Counters) {
        self.received += o.received;
        self.forwarded += o.forwarded;
        self.no_route += o.no_route;
        self.expired += o.expired;
        self.malformed += o.malformed;
        self.tx_bytes += o.tx_bytes;
    }
}

/// Time-stamp counter ticks per phase.
#[derive(Clone, Copy, Debug, Default)]
pub struct Phases {
    /// The emulated NIC refilling the RX ring (a DMA write of the header line) and
    /// handing descriptors over.
    pub rx: u64,
    pub parse: u64,
    pub lookup: u64,
    pub rewrite: u64,
    /// Enqueue on TX rings and the emulated NIC's transmit (buffer recycling).
    pub tx: u64,
}

impl Phases {
    pub fn add(&mut self, o: &Phases) {
        self.rx += o.rx;
        self.parse += o.parse;
        self.lookup += o.lookup;
        self.rewrite += o.rewrite;
        self.tx += o.tx;
    }
    pub fn total(&self) -> u64 {
        self.rx + self.parse + self.lookup + self.rewrite + self.tx
    }
}

/// Where forwarded frames go in check mode: (wire index, port, frame).
pub type Tap<'t> = &'t mut dyn FnMut(u32, usize, &[u8]);

/// One run-to-completion worker with its own rings and buffers (as one RSS queue).
pub struct Worker<'w, A: Address> {
    wire: &'w Wire,
    nbr: &'w Neighbours,
    next: usize,
    pool: Vec<u8>,
    free: Vec<u32>,
    rx: Vec<Desc>,
    rx_head: usize,
    rx_len: usize,
    tx: Vec<Vec<Desc>>,
    batch: Vec<Desc>,
    sel: Vec<u32>,
    keys: Vec<A>,
    out: Vec<u32>,
    pub counters: Counters,
    pub phases: Phases,
}

/// Buffer slots of a worker with `ports` output ports.
fn slots(ports: usize) -> usize {
    RX_RING + ports * TX_BURST + 64
}

/// Bytes of a worker's buffer pool with `ports` output ports.
pub fn worker_bytes(ports: usize) -> usize {
    slots(ports) * SLOT
}

impl<'w, A: Address> Worker<'w, A> {
    /// A worker that starts reading the wire at `start`.
    pub fn new(wire: &'w Wire, nbr: &'w Neighbours, start: usize) -> Self {
        let slots = slots(nbr.ports);
        Worker {
            wire,
            nbr,
            next: start % wire.lens.len(),
            pool: vec![0u8; slots * SLOT],
            free: (0..slots as u32).rev().collect(),
            rx: vec![
                Desc {
                    slot: 0,
                    len: 0,
                    wire: 0
                };
                RX_RING
            ],
            rx_head: 0,
            rx_len: 0,
            tx: (0..nbr.ports)
                .map(|_| Vec::with_capacity(TX_BURST))
                .collect(),
            batch: Vec::with_capacity(64),
            sel: Vec::new(),
            keys: Vec::new(),
            out: Vec::new(),
            counters: Counters::default(),
            phases: Phases::default(),
        }
    }

    /// The emulated NIC: fills free RX descriptors with the next frames of the wire.
    fn nic_refill(&mut self) {
        while self.rx_len < RX_RING {
            let Some(slot) = self.free.pop() else { break };
            let w = self.next;
            self.next = if w + 1 == self.wire.lens.len() {
                0
            } else {
                w + 1
            };
            let off = slot as usize * SLOT;
            self.pool[off..off + HEADROOM].copy_from_slice(&self.wire.headers[w]);
            let at = (self.rx_head + self.rx_len) % RX_RING;
            self.rx[at] = Desc {
                slot,
                len: self.wire.lens[w],
                wire: w as u32,
            };
            self.rx_len += 1;
        }
    }

    /// The emulated NIC transmits a TX ring: counts it and recycles its buffers.
    fn nic_transmit(&mut self, port: usize) {
        for d in self.tx[port].drain(..) {
            self.counters.forwarded += 1;
            self.counters.tx_bytes += d.len as u64;
            self.free.push(d.slot);
        }
    }

    /// Processes one batch of up to `n` frames. With `timed`, the phases are counted
    /// in TSC ticks (which costs a few ns per batch); with `tap`, forwarded frames are
    /// copied out (check mode).
    pub fn step(
        &mut self,
        n: usize,
        lookup: &mut dyn LookupHandle<A>,
        timed: bool,
        mut tap: Option<Tap<'_>>,
    ) {
        let t0 = if timed { ticks() } else { 0 };
        // RX: the NIC tops the ring up; the worker takes a batch of descriptors.
        if self.rx_len < n {
            self.nic_refill();
        }
        let take = n.min(self.rx_len);
        self.batch.clear();
        for _ in 0..take {
            self.batch.push(self.rx[self.rx_head]);
            self.rx_head = (self.rx_head + 1) % RX_RING;
        }
        self.rx_len -= take;
        self.counters.received += take as u64;
        let t1 = if timed { ticks() } else { 0 };
        // Parse: destinations of forwardable frames.
        self.sel.clear();
        self.keys.clear();
        for (i, d) in self.batch.iter().enumerate() {
            let off = d.slot as usize * SLOT;
            let f = &self.pool[off..off + (d.len as usize).min(HEADROOM)];
            match packet::parse::<A>(f) {
                Ok(dst) => {
                    self.keys.push(dst);
                    self.sel.push(i as u32);
                }
                Err(Drop::Expired) => {
                    self.counters.expired += 1;
                    self.free.push(d.slot);
                }
                Err(_) => {
                    self.counters.malformed += 1;
                    self.free.push(d.slot);
                }
            }
        }
        let t2 = if timed { ticks() } else { 0 };
        // Lookup: the whole batch at once.
        let m = self.keys.len();
        self.out.resize(m, 0);
        lookup.lookup_batch(&self.keys, &mut self.out[..m]);
        let t3 = if timed { ticks() } else { 0 };
        // Rewrite: MACs, TTL/hop limit, checksum; the port goes in `out`.
        for j in 0..m {
            let nh = self.out[j] as usize;
            let d = self.batch[self.sel[j] as usize];
            if nh == 0 || nh >= self.nbr.macs.len() {
                self.out[j] = u32::MAX;
                continue;
            }
            let off = d.slot as usize * SLOT;
            packet::rewrite(
                &mut self.pool[off..off + HEADROOM],
                &self.nbr.macs[nh],
                A::FAMILY,
            );
            self.out[j] = self.nbr.port[nh] as u32;
        }
        let t4 = if timed { ticks() } else { 0 };
        // Enqueue on the port's TX ring; a full ring goes to the NIC.
        for j in 0..m {
            let d = self.batch[self.sel[j] as usize];
            let port = self.out[j];
            if port == u32::MAX {
                self.counters.no_route += 1;
                self.free.push(d.slot);
                continue;
            }
            if let Some(t) = tap.as_mut() {
                let off = d.slot as usize * SLOT;
                t(
                    d.wire,
                    port as usize,
                    &self.pool[off..off + (d.len as usize).min(HEADROOM)],
                );
            }
            let p = port as usize;
            self.tx[p].push(d);
            if self.tx[p].len() >= TX_BURST {
                self.nic_transmit(p);
            }
        }
        if timed {
            let t5 = ticks();
            self.phases.rx += t1 - t0;
            self.phases.parse += t2 - t1;
            self.phases.lookup += t3 - t2;
            self.phases.rewrite += t4 - t3;
            self.phases.tx += t5 - t4;
        }
    }

    /// Transmits what the TX rings still hold.
    pub fn flush(&mut self) {
        for p in 0..self.tx.len() {
            self.nic_transmit(p);
        }
    }
}
