//! Passes over memory that several benches run: timed read and write
//! passes over every word (bandwidth, Δ's cache wipe, the CRPD preempter's
//! wipe), and the aggressor's sweep of one word per cache line until told
//! to stop (isolation's aggressors, wcet-profile's co-runners).

use crate::pinned_threads::nanos;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Words of one 64-byte cache line.
pub const LINE_WORDS: usize = 8;

/// Reads every word of `words`; returns the elapsed nanoseconds.
pub fn read_pass(words: &[u64]) -> u64 {
    let start = Instant::now();
    let sum = words.iter().fold(0u64, |acc, &w| acc.wrapping_add(w));
    let elapsed = nanos(start.elapsed());
    std::hint::black_box(sum);
    elapsed
}

/// Writes every word of `words`; returns the elapsed nanoseconds.
pub fn write_pass(words: &mut [u64], value: u64) -> u64 {
    let start = Instant::now();
    for w in words.iter_mut() {
        *w = value;
    }
    std::hint::black_box(&words);
    nanos(start.elapsed())
}

/// Sweeps `pages` touching one word per cache line, at least once and then
/// until `stop` is set; returns the number of sweeps.
pub fn aggress(pages: &mut [&mut [u64]], stop: &AtomicBool) -> u64 {
    let mut sweeps = 0;
    loop {
        for page in pages.iter_mut() {
            for word in page.iter_mut().step_by(LINE_WORDS) {
                *word = word.wrapping_add(1);
            }
        }
        sweeps += 1;
        if stop.load(Ordering::Relaxed) {
            return sweeps;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_touch_every_word() {
        let mut words = vec![1u64; 1000];
        write_pass(&mut words, 7);
        assert!(words.iter().all(|&w| w == 7));
        read_pass(&words);
    }

    #[test]
    fn aggressors_stop_when_told() {
        let mut words = vec![0u64; 2 * 512];
        let mut pages: Vec<&mut [u64]> = words.chunks_exact_mut(512).collect();
        let stop = AtomicBool::new(false);
        let sweeps = std::thread::scope(|s| {
            let handle = s.spawn(|| aggress(&mut pages, &stop));
            std::thread::sleep(std::time::Duration::from_millis(5));
            stop.store(true, Ordering::Relaxed);
            handle.join().unwrap()
        });
        assert!(sweeps >= 1);
        assert!(words[0] >= 1 && words[8] >= 1 && words[1] == 0);
    }
}
