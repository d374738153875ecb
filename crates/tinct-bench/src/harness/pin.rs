//! Pinning the measuring thread (tinct-sys `sched::set_affinity`).

use crate::Result;

/// Pins the calling thread to one CPU and restores its previous affinity
/// when dropped.
#[derive(Debug)]
pub struct PinGuard {
    previous: Vec<u32>,
    cpu: u32,
}

impl PinGuard {
    /// Pins the calling thread to `cpu`.
    pub fn pin(cpu: u32) -> Result<Self> {
        let previous = tinct_sys::sched::affinity()?;
        tinct_sys::sched::set_affinity(&[cpu])?;
        Ok(Self { previous, cpu })
    }

    /// The CPU the thread is pinned to.
    pub fn cpu(&self) -> u32 {
        self.cpu
    }
}

impl Drop for PinGuard {
    fn drop(&mut self) {
        // Best effort: a failure here leaves the thread pinned, which is harmless.
        let _ = tinct_sys::sched::set_affinity(&self.previous);
    }
}

/// Pins the calling thread to `cpu` for good (for threads a bench spawns).
pub fn pin_current(cpu: u32) -> Result<()> {
    tinct_sys::sched::set_affinity(&[cpu])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pin_and_restore() {
        let before = tinct_sys::sched::affinity().unwrap();
        let cpu = *before.last().unwrap();
        {
            let guard = PinGuard::pin(cpu).unwrap();
            assert_eq!(guard.cpu(), cpu);
            assert_eq!(tinct_sys::sched::affinity().unwrap(), vec![cpu]);
            assert_eq!(tinct_sys::sched::current_cpu(), cpu);
        }
        assert_eq!(tinct_sys::sched::affinity().unwrap(), before);
    }
}
