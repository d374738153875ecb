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

/// Flushes every cache line of `words` from every cache level and waits
/// until the flushes are globally visible (`MFENCE`).
pub fn flush_from_caches(words: &[u64]) -> Result<()> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_clflush, _mm_mfence};
        let bytes = std::mem::size_of_val(words);
        let start = words.as_ptr().cast::<u8>();
        let mut offset = 0;
        while offset < bytes {
            // SAFETY: `start + offset` lies inside `words` (offset < its
            // length in bytes), a live shared borrow, so the address is
            // mapped for the whole call; CLFLUSH reads no data and changes
            // no value, only where the line is cached, so it cannot break
            // the borrow's aliasing rules. SSE2 (and CLFLUSH) are part of the
            // x86-64 baseline.
            unsafe { _mm_clflush(start.add(offset)) };
            offset += FLUSH_STRIDE;
        }
        // The last line of an unaligned buffer can start before its end
        // and be missed by the stride above: flush it too.
        if let Some(last) = words.last() {
            // SAFETY: as above, a pointer to the buffer's last element.
            unsafe { _mm_clflush(std::ptr::from_ref(last).cast::<u8>()) };
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
    use std::time::Instant;

    #[test]
    fn flushing_keeps_the_values_and_covers_odd_lengths() {
        let words: Vec<u64> = (0..1001).collect();
        flush_from_caches(&words).unwrap();
        flush_from_caches(&words[3..10]).unwrap();
        flush_from_caches(&[]).unwrap();
        assert!(words.iter().enumerate().all(|(i, &w)| w == i as u64));
        assert!(supported());
    }

    /// A flushed buffer is read from memory: a pass after a flush is slower
    /// than a warm pass (the fastest of several, in the same run; a
    /// comparison, never an absolute time).
    #[test]
    fn a_flushed_buffer_is_read_from_memory() {
        let words: Vec<u64> = (0..(256 << 10) / 8).collect(); // 256 KiB: fits L2
        let pass = |w: &[u64]| {
            let start = Instant::now();
            let mut sum = 0u64;
            for line in w.chunks(8) {
                sum = sum.wrapping_add(line[0]);
            }
            std::hint::black_box(sum);
            start.elapsed()
        };
        let mut warm = std::time::Duration::MAX;
        let mut cold = std::time::Duration::MAX;
        for _ in 0..15 {
            pass(&words);
            warm = warm.min(pass(&words));
            flush_from_caches(&words).unwrap();
            cold = cold.min(pass(&words));
        }
        assert!(cold > warm, "cold {cold:?} vs warm {warm:?}");
    }
}
