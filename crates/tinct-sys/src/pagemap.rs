//! Virtual → physical translation through `/proc/self/pagemap`.
//!
//! The kernel's pagemap file holds one 64-bit entry per virtual page
//! (Documentation/admin-guide/mm/pagemap.rst): bit 63 = present,
//! bit 62 = swapped, bits 0–54 = page frame number (PFN). Without
//! `CAP_SYS_ADMIN` the kernel zeroes the PFN field, so a present page reads
//! PFN 0; [`Pagemap::frames`] turns that into an error that says so.
//!
//! A whole range is translated with one positioned read (`pread`), so
//! translating a pool costs one system call, not one per page.

use crate::{Error, Result};
use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;

/// Size of one pagemap entry in bytes.
pub const ENTRY_SIZE: usize = 8;

const PRESENT_BIT: u64 = 1 << 63;
const SWAPPED_BIT: u64 = 1 << 62;
const EXCLUSIVE_BIT: u64 = 1 << 56;
const FRAME_MASK: u64 = (1 << 55) - 1;

/// One raw pagemap entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PagemapEntry(pub u64);

impl PagemapEntry {
    /// The page is in RAM (bit 63).
    pub fn present(self) -> bool {
        self.0 & PRESENT_BIT != 0
    }

    /// The page is swapped out (bit 62).
    pub fn swapped(self) -> bool {
        self.0 & SWAPPED_BIT != 0
    }

    /// The page is mapped exclusively by this process (bit 56).
    pub fn exclusive(self) -> bool {
        self.0 & EXCLUSIVE_BIT != 0
    }

    /// The page frame number if the page is present (bits 0–54). It reads
    /// 0 when the caller lacks `CAP_SYS_ADMIN`.
    pub fn frame(self) -> Option<u64> {
        self.present().then_some(self.0 & FRAME_MASK)
    }
}

/// An open pagemap file of one process.
#[derive(Debug)]
pub struct Pagemap {
    file: File,
    path: String,
    page_size: u64,
}

impl Pagemap {
    /// Opens `/proc/self/pagemap`.
    pub fn open_self() -> Result<Self> {
        Self::open("/proc/self/pagemap")
    }

    /// Opens a pagemap file (e.g. `/proc/<pid>/pagemap`).
    pub fn open(path: &str) -> Result<Self> {
        let file = File::open(path).map_err(|source| Error::Io {
            path: path.into(),
            source,
        })?;
        Ok(Self {
            file,
            path: path.to_string(),
            page_size: rustix::param::page_size() as u64,
        })
    }

    /// The system page size in bytes.
    pub fn page_size(&self) -> u64 {
        self.page_size
    }

    /// Raw entries of the `pages` virtual pages starting at the page that
    /// holds `address`, with one positioned read (repeated only if the
    /// kernel returns a short read).
    pub fn entries(&self, address: usize, pages: usize) -> Result<Vec<PagemapEntry>> {
        let mut bytes = vec![0u8; pages * ENTRY_SIZE];
        let offset = (address as u64 / self.page_size) * ENTRY_SIZE as u64;
        let mut filled = 0;
        while filled < bytes.len() {
            match self
                .file
                .read_at(&mut bytes[filled..], offset + filled as u64)
            {
                Ok(0) => {
                    return Err(Error::syscall(
                        format!("pread({}) at offset {}", self.path, offset + filled as u64),
                        std::io::Error::new(ErrorKind::UnexpectedEof, "end of pagemap"),
                    ));
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(Error::syscall(
                        format!("pread({}) at offset {}", self.path, offset + filled as u64),
                        source,
                    ));
                }
            }
        }
        Ok(bytes
            .chunks_exact(ENTRY_SIZE)
            .map(|chunk| {
                let mut raw = [0u8; ENTRY_SIZE];
                raw.copy_from_slice(chunk);
                PagemapEntry(u64::from_ne_bytes(raw))
            })
            .collect())
    }

    /// Page frame numbers of `pages` pages starting at `address`.
    ///
    /// Errors if a page is not present (not populated or swapped out), or
    /// if frame numbers are hidden (present page with PFN 0: the caller
    /// lacks `CAP_SYS_ADMIN`).
    pub fn frames(&self, address: usize, pages: usize) -> Result<Vec<u64>> {
        let entries = self.entries(address, pages)?;
        let mut frames = Vec::with_capacity(entries.len());
        for (i, entry) in entries.iter().enumerate() {
            let page_address = address + i * self.page_size as usize;
            match entry.frame() {
                None => {
                    return Err(Error::InvalidArgument(format!(
                        "virtual page {page_address:#x} is not present in RAM (pagemap entry \
                         {:#018x}): populate the range (touch it or MAP_POPULATE) and lock it \
                         (mlock) before translating",
                        entry.0
                    )));
                }
                Some(0) => return Err(frames_hidden_error(&self.path)),
                Some(frame) => frames.push(frame),
            }
        }
        Ok(frames)
    }

    /// The frame of the page holding `address`, `None` if not present.
    /// Errors if frame numbers are hidden.
    pub fn frame_of(&self, address: usize) -> Result<Option<u64>> {
        match self.entries(address, 1)?[0].frame() {
            Some(0) => Err(frames_hidden_error(&self.path)),
            other => Ok(other),
        }
    }

    /// Physical address of the byte at `address`, `None` if its page is
    /// not present.
    pub fn physical_address(&self, address: usize) -> Result<Option<u64>> {
        Ok(self
            .frame_of(address)?
            .map(|frame| frame * self.page_size + address as u64 % self.page_size))
    }
}

/// The error for "PFNs read as 0": why, and how to fix it.
pub fn frames_hidden_error(path: &str) -> Error {
    Error::syscall(
        format!("reading physical frame numbers from {path}"),
        std::io::Error::new(
            ErrorKind::PermissionDenied,
            "the kernel reports frame number 0 because this process lacks CAP_SYS_ADMIN; \
             run as root or grant CAP_SYS_ADMIN (e.g. `setcap cap_sys_admin+ep <binary>`)",
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_bits_decode() {
        let entry = PagemapEntry(PRESENT_BIT | EXCLUSIVE_BIT | 0x1234);
        assert!(entry.present() && entry.exclusive() && !entry.swapped());
        assert_eq!(entry.frame(), Some(0x1234));
        assert_eq!(PagemapEntry(SWAPPED_BIT | 0x55).frame(), None);
        assert_eq!(PagemapEntry(PRESENT_BIT | (1 << 55) | 7).frame(), Some(7));
    }

    #[test]
    fn hidden_frames_error_says_how_to_fix() {
        let text = frames_hidden_error("/proc/self/pagemap").to_string();
        assert!(
            text.contains("CAP_SYS_ADMIN") && text.contains("run as root"),
            "{text}"
        );
    }

    #[test]
    fn untouched_pages_are_reported_not_present() {
        let page = rustix::param::page_size();
        // 4 MiB of capacity: glibc serves it with a fresh mmap whose pages
        // are not populated until written (only the first holds a header).
        let block: Vec<u8> = Vec::with_capacity(1024 * page);
        let start = (block.as_ptr() as usize).next_multiple_of(page) + 8 * page;
        let pagemap = Pagemap::open_self().unwrap();
        let entries = pagemap.entries(start, 16).unwrap();
        assert_eq!(entries.len(), 16);
        assert!(entries.iter().all(|e| !e.present()), "{entries:x?}");
        let error = pagemap.frames(start, 16).unwrap_err().to_string();
        assert!(error.contains("not present"), "{error}");
    }

    #[test]
    fn touched_pages_are_present_and_distinct_when_privileged() {
        let page = rustix::param::page_size();
        let mut block = vec![1u8; 64 * page];
        for chunk in block.chunks_mut(page) {
            chunk[0] = 2;
        }
        let start = (block.as_ptr() as usize).next_multiple_of(page);
        let pagemap = Pagemap::open_self().unwrap();
        let entries = pagemap.entries(start, 63).unwrap();
        assert!(
            entries.iter().all(|e| e.present()),
            "touched pages must be present"
        );
        if !crate::testing::privileged_or_skip("reading frame numbers from pagemap") {
            assert!(
                pagemap.frames(start, 63).is_err(),
                "unprivileged PFNs must be refused"
            );
            return;
        }
        let mut frames = pagemap.frames(start, 63).unwrap();
        assert!(frames.iter().all(|&f| f != 0));
        frames.sort_unstable();
        frames.dedup();
        assert_eq!(
            frames.len(),
            63,
            "distinct virtual pages map to distinct frames"
        );
        let phys = pagemap.physical_address(start + 5).unwrap().unwrap();
        assert_eq!(phys % page as u64, 5);
    }
}
