//! [`HugePageBuffer`]: an owned buffer that asks for transparent huge pages
//! and reports whether it got them.
//!
//! The mapping is aligned to the huge-page size (`hpage_pmd_size`, 2 MiB on
//! x86-64), marked `MADV_HUGEPAGE` before any page is touched, and then
//! populated. Whether the kernel actually backed it with huge pages
//! (THP may be `never`, or memory too fragmented) is read back from
//! `/proc/self/smaps` (`AnonHugePages` of the mapping), which needs no
//! privilege.

use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use crate::{Error, Result, SysRoot};

/// The huge-page size of this machine (`hpage_pmd_size`), 2 MiB if unknown.
pub fn huge_page_size() -> usize {
    SysRoot::live()
        .read_line_optional("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size")
        .ok()
        .flatten()
        .and_then(|line| line.trim().parse().ok())
        .filter(|&size: &usize| size.is_power_of_two())
        .unwrap_or(2 << 20)
}

/// Zero-filled 64-bit words in memory aligned to, and sized in, whole huge
/// pages; unmapped on drop.
#[derive(Debug)]
pub struct HugePageBuffer {
    start: NonNull<u64>,
    bytes: usize,
    huge_page: usize,
    huge_bytes: u64,
}

// SAFETY: the buffer owns its mapping exclusively; the pointer is only an
// address, and access to the words goes through `&self` / `&mut self`.
unsafe impl Send for HugePageBuffer {}
// SAFETY: shared access only reads through `&[u64]`.
unsafe impl Sync for HugePageBuffer {}

impl HugePageBuffer {
    /// At least `bytes` (rounded up to whole huge pages), aligned to the
    /// huge-page size, advised `MADV_HUGEPAGE` and populated.
    pub fn new(bytes: usize) -> Result<Self> {
        let huge_page = huge_page_size();
        let bytes = bytes.max(1).div_ceil(huge_page) * huge_page;
        let reserve = bytes + huge_page;
        let os = |call: String| move |errno: rustix::io::Errno| Error::syscall(call, errno.into());
        // SAFETY: a fresh anonymous private mapping at an address the
        // kernel chooses cannot alias any existing Rust object.
        let raw = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                reserve,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::PRIVATE,
            )
        }
        .map_err(os(format!("mmap(anonymous, {reserve} bytes)")))?;
        let first = raw as usize;
        let aligned = first.next_multiple_of(huge_page);
        let head = aligned - first;
        let tail = reserve - head - bytes;
        // SAFETY: the head and tail lie inside the mapping made above and
        // nothing references them; the aligned middle stays mapped.
        unsafe {
            if head > 0 {
                let _ = rustix::mm::munmap(raw, head);
            }
            if tail > 0 {
                let _ = rustix::mm::munmap((aligned + bytes) as *mut _, tail);
            }
        }
        let start = NonNull::new(aligned as *mut u64)
            .ok_or_else(|| Error::InvalidArgument("mmap returned a null mapping".into()))?;
        let mut buffer = HugePageBuffer {
            start,
            bytes,
            huge_page,
            huge_bytes: 0,
        };
        // SAFETY: the range is exactly our aligned mapping, untouched yet.
        unsafe {
            rustix::mm::madvise(
                start.as_ptr().cast(),
                bytes,
                rustix::mm::Advice::LinuxHugepage,
            )
        }
        .map_err(os(format!("madvise(MADV_HUGEPAGE, {bytes} bytes)")))?;
        buffer
            .words_mut()
            .iter_mut()
            .step_by(4096 / 8)
            .for_each(|w| *w = 0);
        buffer.huge_bytes = buffer.measure_huge_bytes().unwrap_or(0);
        Ok(buffer)
    }

    fn words_mut(&mut self) -> &mut [u64] {
        // SAFETY: the mapping holds `bytes` readable, writable bytes (zero
        // filled by the kernel), aligned to a huge page, owned by `self`,
        // and borrowed mutably for the lifetime of `&mut self`.
        unsafe { std::slice::from_raw_parts_mut(self.start.as_ptr(), self.bytes / 8) }
    }

    /// Bytes of the buffer (whole huge pages).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The huge-page size used for alignment.
    pub fn huge_page_size(&self) -> usize {
        self.huge_page
    }

    /// Bytes backed by transparent huge pages when the buffer was made
    /// (`AnonHugePages` of its mapping in `/proc/self/smaps`).
    pub fn huge_bytes(&self) -> u64 {
        self.huge_bytes
    }

    /// True if every byte is backed by huge pages.
    pub fn fully_huge(&self) -> bool {
        self.huge_bytes >= self.bytes as u64
    }

    /// Reads `AnonHugePages` of the mapping that contains this buffer now
    /// (capped at the buffer's size: the kernel may have merged it with a
    /// neighbouring mapping of the same kind).
    pub fn measure_huge_bytes(&self) -> Result<u64> {
        let path = "/proc/self/smaps";
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.into(),
            source,
        })?;
        let start = self.start.as_ptr() as usize;
        Ok(anon_huge_bytes_at(&text, start).min(self.bytes as u64))
    }
}

/// `AnonHugePages` (in bytes) of the smaps entry whose range contains
/// `address`, 0 if there is none.
fn anon_huge_bytes_at(smaps: &str, address: usize) -> u64 {
    let mut inside = false;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((from, to)) = first.split_once('-')
            && let (Ok(from), Ok(to)) = (
                usize::from_str_radix(from, 16),
                usize::from_str_radix(to, 16),
            )
        {
            inside = (from..to).contains(&address);
            continue;
        }
        if inside && let Some(rest) = line.strip_prefix("AnonHugePages:") {
            let kib: u64 = rest
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .unwrap_or(0);
            return kib * 1024;
        }
    }
    0
}

impl Deref for HugePageBuffer {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        // SAFETY: as in `words_mut`, shared for the lifetime of `&self`.
        unsafe { std::slice::from_raw_parts(self.start.as_ptr(), self.bytes / 8) }
    }
}

impl DerefMut for HugePageBuffer {
    fn deref_mut(&mut self) -> &mut [u64] {
        self.words_mut()
    }
}

impl Drop for HugePageBuffer {
    fn drop(&mut self) {
        // SAFETY: the aligned mapping of `bytes` bytes was created in `new`
        // and no reference into it outlives `self`.
        let _ = unsafe { rustix::mm::munmap(self.start.as_ptr().cast(), self.bytes) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smaps_entries_are_matched_by_address() {
        let smaps = "\
7f0000000000-7f0000400000 rw-p 00000000 00:00 0
Size:               4096 kB
AnonHugePages:      2048 kB
7f0000400000-7f0000600000 rw-p 00000000 00:00 0
AnonHugePages:         0 kB
";
        assert_eq!(anon_huge_bytes_at(smaps, 0x7f0000200000), 2 << 20);
        assert_eq!(anon_huge_bytes_at(smaps, 0x7f0000400000), 0);
        assert_eq!(anon_huge_bytes_at(smaps, 0x1000), 0);
    }

    #[test]
    fn a_buffer_is_aligned_whole_huge_pages_and_reports_its_backing() {
        let mut buffer = HugePageBuffer::new(3 << 20).unwrap();
        let huge = buffer.huge_page_size();
        assert_eq!(buffer.bytes() % huge, 0);
        assert!(buffer.bytes() >= 3 << 20);
        assert_eq!(buffer.as_ptr() as usize % huge, 0);
        assert!(buffer.iter().all(|&w| w == 0));
        let last = buffer.len() - 1;
        buffer[last] = 7;
        assert_eq!(buffer[last], 7);
        assert!(buffer.huge_bytes() <= buffer.bytes() as u64);
        // With THP enabled (always or madvise) on an idle machine the
        // kernel normally backs the buffer; when it cannot, the buffer
        // says so instead of pretending.
        let mode = crate::system::ThpMode::read(&SysRoot::live()).unwrap();
        if mode == Some(crate::system::ThpMode::Never) {
            assert_eq!(buffer.huge_bytes(), 0);
        }
        // khugepaged may collapse more of the buffer at any moment, so a
        // later measurement can only be whole huge pages within the buffer.
        let measured = buffer.measure_huge_bytes().unwrap();
        assert_eq!(measured % huge as u64, 0);
        assert!(measured <= buffer.bytes() as u64);
    }
}
