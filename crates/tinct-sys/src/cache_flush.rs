//! Flushing a buffer's cache lines from every cache level (x86-64 `CLFLUSH`).
//!
//! `tinct bench wcet-profile --conditions cold` flushes a job's working set
//! before each job, so the job starts with none of its lines cached in any
//! level — the cold start of a task whose partitions another task filled.
//! `CLFLUSH` invalidates the line in every cache of the coherence domain,
//! the host's caches included when this runs in a virtual machine (the
//! instruction is not trapped), which an eviction buffer could not promise
//! where guest page colours are not host cache colours.

#[cfg(not(target_arch = "x86_64"))]
use crate::error::Error;
use crate::error::Result;

/// Bytes between two flushed addresses: the x86-64 cache line. A larger
/// line is flushed more than once, never missed.
pub const FLUSH_STRIDE: usize = 64;

/// True if this machine can flush lines (every x86-64 CPU has `CLFLUSH`).
pub fn supported() -> bool {
    cfg!(target_arch = "x86_64")
}

/// The addresses [`flush_from_caches`] flushes for `bytes` bytes at
/// `start`: one every [`FLUSH_STRIDE`] from `start`, and the buffer's last
/// byte, whose line the stride misses when `start` is not line-aligned.
/// Together they name every line the buffer touches.
pub fn flush_addresses(start: usize, bytes: usize) -> impl Iterator<Item = usize> {
    let last = bytes.checked_sub(1).map(|last| start + last);
    (start..start + bytes).step_by(FLUSH_STRIDE).chain(last)
}

/// Flushes every cache line of `words` from every cache level and waits
/// until the flushes are globally visible (`MFENCE`).
pub fn flush_from_caches(words: &[u64]) -> Result<()> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_clflush, _mm_mfence};
        let start = words.as_ptr().cast::<u8>();
        for address in flush_addresses(start as usize, std::mem::size_of_val(words)) {
            // SAFETY: `address` lies inside `words` (flush_addresses yields
            // addresses of its bytes only), a live shared borrow, so it is
            // mapped for the whole call; CLFLUSH reads no data and changes
            // no value, only where the line is cached, so it cannot break
            // the borrow's aliasing rules. SSE2 (and CLFLUSH) are part of
            // the x86-64 baseline.
            unsafe { _mm_clflush(start.add(address - start as usize)) };
        }
        // SAFETY: MFENCE has no operands and no preconditions.
        unsafe { _mm_mfence() };
        Ok(())
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = words;
        Err(Error::InvalidArgument(
            "flushing cache lines (CLFLUSH) is implemented for x86-64 only".into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flushing_keeps_the_values_and_covers_odd_lengths() {
        let words: Vec<u64> = (0..1001).collect();
        flush_from_caches(&words).unwrap();
        flush_from_caches(&words[3..10]).unwrap();
        flush_from_caches(&[]).unwrap();
        assert!(words.iter().enumerate().all(|(i, &w)| w == i as u64));
        assert!(supported());
    }

    /// Every line a buffer touches is flushed, and nothing outside it,
    /// whatever its alignment and length. (That a flushed pass is slower
    /// than a warm one is timing, measured side by side by
    /// `cargo bench -p tinct-sys --bench cache_flush`.)
    #[test]
    fn every_line_of_the_buffer_and_no_other_is_flushed() {
        let line = |address: usize| address / FLUSH_STRIDE;
        for start in (4096..4096 + 2 * FLUSH_STRIDE).step_by(4) {
            for bytes in 0..5 * FLUSH_STRIDE {
                let flushed: std::collections::BTreeSet<usize> =
                    flush_addresses(start, bytes).map(line).collect();
                let touched: std::collections::BTreeSet<usize> =
                    (start..start + bytes).map(line).collect();
                assert_eq!(flushed, touched, "{bytes} bytes at {start}");
                assert!(flush_addresses(start, bytes).all(|a| (start..start + bytes).contains(&a)));
            }
        }
    }
}
