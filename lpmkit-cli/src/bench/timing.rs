//! The timed loops of `lpmkit bench`: one run of a scheme over the keys (in batches, one
//! dependent key at a time, or with keys made just in time), on one or more threads, and
//! the answer sum every run is checked by; TSC ticks per 16-key call.

use std::sync::Barrier;
use std::time::Instant;

use lpmkit::traffic::{self, Lcg};
use lpmkit::{Address, Fib, NextHop};

use super::{Cycles, Mode};
use crate::tsc;

/// Settings of just-in-time key generation.
pub(super) struct JitKeys<'a> {
    pub(super) v6: bool,
    pub(super) patterns: &'a [u32],
    pub(super) seed: u64,
}

/// The sum of `answers` modulo 2^32: what the timed loops add per batch. Summed in 32-bit
/// lanes (it vectorizes without widening), 256 bits wide where the CPU has AVX2, so the
/// harness's share of a run stays small beside the fastest lookups.
#[inline(always)]
pub(super) fn sum_answers(answers: &[u32]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2.
        return unsafe { sum_answers_avx2(answers) };
    }
    sum_answers_plain(answers)
}

#[inline(always)]
fn sum_answers_plain(answers: &[u32]) -> u32 {
    answers.iter().fold(0u32, |s, &a| s.wrapping_add(a))
}

/// [`sum_answers_plain`] compiled for AVX2.
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sum_answers_avx2(answers: &[u32]) -> u32 {
    sum_answers_plain(answers)
}

/// One timed run; returns (seconds of the slowest thread, checksum).
pub(super) fn measure<A: Address>(
    fib: &dyn Fib<A>,
    keys: &[A],
    threads: usize,
    batch: usize,
    mode: Mode,
    jit: &JitKeys<'_>,
    total: usize,
) -> (f64, u32) {
    let per = keys.len().div_ceil(threads);
    let barrier = Barrier::new(threads);
    let results: Vec<(f64, u32)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let section = &keys[(t * per).min(keys.len())..((t + 1) * per).min(keys.len())];
                let barrier = &barrier;
                s.spawn(move || {
                    // Two batches of answers (see `Answers`).
                    let mut out = vec![0u32; 2 * batch];
                    barrier.wait();
                    let t0 = Instant::now();
                    let sum = match mode {
                        Mode::Batch => run_batch(fib, section, &mut out),
                        Mode::Dependent => run_dependent(fib, section),
                        Mode::JustInTime => {
                            let n = total.div_ceil(threads);
                            run_jit(fib, n, &mut out, jit, t as u64)
                        }
                        Mode::HotBatch => return run_batch_hot(fib, section, &mut out[..batch]),
                    };
                    (t0.elapsed().as_secs_f64(), sum)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let secs = results.iter().map(|r| r.0).fold(0.0, f64::max);
    let sum = results.iter().fold(0u32, |s, r| s.wrapping_add(r.1));
    (secs, sum)
}

/// The answers of the timed loops, in two batch buffers used in turn: each batch's answers
/// are summed after the next batch is looked up, when the lookup's stores have long
/// reached the cache (summing them at once would make the sum's wide loads wait on the
/// narrower stores of some schemes, and not of others).
struct Answers<'a> {
    this: &'a mut [u32],
    last: &'a mut [u32],
    /// Answers in `last` not summed yet.
    pending: usize,
    sum: u32,
}

impl<'a> Answers<'a> {
    /// Batches of up to `out.len() / 2` keys.
    fn new(out: &'a mut [u32]) -> Self {
        let (this, last) = out.split_at_mut(out.len() / 2);
        Answers {
            this,
            last,
            pending: 0,
            sum: 0,
        }
    }

    /// The most keys per batch.
    fn batch(&self) -> usize {
        self.this.len()
    }

    /// Looks `keys` (at most [`batch`](Self::batch)) up, and sums the batch before.
    #[inline(always)]
    fn look_up<A: Address>(&mut self, fib: &dyn Fib<A>, keys: &[A]) {
        fib.lookup_batch(keys, &mut self.this[..keys.len()]);
        self.sum = self
            .sum
            .wrapping_add(sum_answers(&self.last[..self.pending]));
        self.pending = keys.len();
        core::mem::swap(&mut self.this, &mut self.last);
    }

    /// The sum of every answer.
    fn sum(self) -> u32 {
        self.sum
            .wrapping_add(sum_answers(&self.last[..self.pending]))
    }
}

/// Looks `keys` up in batches of `out.len() / 2` (see [`Answers`]); returns their sum.
#[inline(never)]
fn run_batch<A: Address>(fib: &dyn Fib<A>, keys: &[A], out: &mut [u32]) -> u32 {
    let mut answers = Answers::new(out);
    for chunk in keys.chunks(answers.batch()) {
        answers.look_up(fib, chunk);
    }
    answers.sum()
}

/// Looks `keys` up in batches of `out.len()`, each batch's keys read into the cache just
/// before its call (as a data plane's just-received burst is), timing the calls alone
/// (fenced TSC reads, their empty interval taken off); returns (seconds in the calls, the
/// answers' sum).
#[inline(never)]
fn run_batch_hot<A: Address>(fib: &dyn Fib<A>, keys: &[A], out: &mut [u32]) -> (f64, u32) {
    let empty = tsc::empty_interval();
    let (wall0, tsc0) = (Instant::now(), tsc::ticks_fenced());
    let mut in_calls = 0u64;
    let mut sum = 0u32;
    for chunk in keys.chunks(out.len()) {
        let mut touched = A::ZERO;
        for &k in chunk {
            touched = A::from_u128(touched.to_u128() ^ k.to_u128());
        }
        std::hint::black_box(touched);
        let out = &mut out[..chunk.len()];
        let t0 = tsc::ticks_fenced();
        fib.lookup_batch(chunk, out);
        let t1 = tsc::ticks_fenced();
        in_calls += t1.wrapping_sub(t0).saturating_sub(empty);
        sum = sum.wrapping_add(sum_answers(out));
    }
    // Ticks to seconds by the run's own wall time.
    let ticks = tsc::ticks_fenced().wrapping_sub(tsc0).max(1);
    let secs = wall0.elapsed().as_secs_f64() * in_calls as f64 / ticks as f64;
    (secs.max(1e-12), sum)
}

#[inline(never)]
fn run_dependent<A: Address>(fib: &dyn Fib<A>, keys: &[A]) -> u32 {
    let mut sum = 0u32;
    let mut prev = 0u32;
    for &k in keys {
        let key = traffic::seq_key(k, prev);
        prev = NextHop::raw(fib.lookup(key));
        sum = sum.wrapping_add(prev);
    }
    sum
}

#[inline(never)]
fn run_jit<A: Address>(
    fib: &dyn Fib<A>,
    n: usize,
    out: &mut [u32],
    jit: &JitKeys<'_>,
    thread: u64,
) -> u32 {
    let mut lcg = Lcg::new(jit.seed.wrapping_add(thread.wrapping_mul(0x9e37_79b9)));
    let mut answers = Answers::new(out);
    let mut left = n;
    let b = answers.batch();
    let mut k4 = vec![0u32; b];
    let mut k6 = vec![0u128; if jit.v6 { b } else { 0 }];
    let mut ka: Vec<A> = vec![A::ZERO; b];
    while left > 0 {
        let m = left.min(b);
        if jit.v6 {
            lcg.fill_v6_matching(jit.patterns, &mut k6[..m]);
            for (d, &s) in ka.iter_mut().zip(&k6[..m]) {
                *d = A::from_u128(s);
            }
        } else if A::BITS == 32 {
            lcg.fill_v4(&mut k4[..m]);
            for (d, &s) in ka.iter_mut().zip(&k4[..m]) {
                *d = A::from_u128(s as u128);
            }
        } else {
            for d in ka[..m].iter_mut() {
                let hi = (lcg.next_u32() as u128) << 96 | (lcg.next_u32() as u128) << 64;
                *d = A::from_u128(hi | (lcg.next_u32() as u128) << 32 | lcg.next_u32() as u128);
            }
        }
        answers.look_up(fib, &ka[..m]);
        left -= m;
    }
    answers.sum()
}

/// TSC ticks of each 16-key `lookup_batch` call over the first 2^20 keys.
pub(super) fn measure_cycles<A: Address>(fib: &dyn Fib<A>, keys: &[A]) -> Cycles {
    let n = keys.len().min(1 << 20) / 16;
    let mut out = [0u32; 16];
    let overhead = tsc::empty_interval();
    let mut ticks: Vec<u64> = Vec::with_capacity(n);
    for i in 0..n {
        let k = &keys[i * 16..i * 16 + 16];
        let t0 = tsc::ticks_fenced();
        fib.lookup_batch(k, &mut out);
        let t1 = tsc::ticks_fenced();
        std::hint::black_box(&out);
        ticks.push(t1.saturating_sub(t0).saturating_sub(overhead));
    }
    let mean = ticks.iter().sum::<u64>() as f64 / ticks.len().max(1) as f64;
    ticks.sort_unstable();
    let pct = |p: f64| {
        ticks
            .get(((ticks.len() as f64 * p) as usize).min(ticks.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0)
    };
    Cycles {
        mean,
        p50: pct(0.50),
        p75: pct(0.75),
        p90: pct(0.90),
        p99: pct(0.99),
    }
}
