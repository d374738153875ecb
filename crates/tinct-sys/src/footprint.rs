//! The resident pages of this process outside given address ranges: what
//! its threads can touch besides the memory tinct placed (working sets,
//! coloured stacks), with the physical frames of each page.
//!
//! `/proc/self/maps` lists the mappings; `/proc/self/pagemap`
//! ([`crate::pagemap`]) says which of their pages are resident and on
//! which frame. A page that is not resident was not touched since it was
//! last reclaimed (anonymous memory of a locked process never is), so the
//! resident pages bound what the process touched from above: code and
//! libraries, their data, the heap, thread stacks and tinct's own
//! bookkeeping, which page colouring leaves uncoloured.

use crate::pagemap::Pagemap;
use crate::{Error, Result};
use std::ops::Range;
use std::path::Path;
use tinct_base::InputError;

/// What a mapping holds, by its permissions and name in `/proc/self/maps`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum MappingKind {
    /// Executable: the program's and libraries' code, the vDSO.
    Code,
    /// A file's pages that are not code: libraries' data, mapped files.
    FileData,
    /// The heap of `brk` and anonymous memory: allocations, thread stacks,
    /// thread-local storage.
    Anonymous,
    /// The main thread's stack.
    MainStack,
}

impl MappingKind {
    /// In a few words, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            MappingKind::Code => "code",
            MappingKind::FileData => "file data",
            MappingKind::Anonymous => "heap, thread stacks and other anonymous memory",
            MappingKind::MainStack => "main stack",
        }
    }
}

/// One line of `/proc/<pid>/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// Its virtual addresses.
    pub range: Range<usize>,
    /// `r`, `w`, `x` as the kernel prints them.
    pub readable: bool,
    /// Writable.
    pub writable: bool,
    /// Executable.
    pub executable: bool,
    /// The file or pseudo-name (`[heap]`, `[stack]`, `[vdso]`); empty for
    /// anonymous memory.
    pub name: String,
}

impl Mapping {
    /// What it holds; `None` for the kernel's special mappings that no
    /// page table of this process maps (`[vsyscall]`, `[vvar]`): they hold
    /// no frame of this process's to place.
    pub fn kind(&self) -> Option<MappingKind> {
        match self.name.as_str() {
            "[vsyscall]" => None,
            name if name.starts_with("[vvar") => None,
            "[stack]" => Some(MappingKind::MainStack),
            _ if self.executable => Some(MappingKind::Code),
            "" | "[heap]" => Some(MappingKind::Anonymous),
            name if name.starts_with("[anon") => Some(MappingKind::Anonymous),
            _ => Some(MappingKind::FileData),
        }
    }
}

/// The mappings of a maps file's text (`path` names it in errors).
pub fn parse_maps(text: &str, path: &Path) -> Result<Vec<Mapping>> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| {
            let bad = |expected: &str| {
                Error::Input(
                    InputError::new(
                        path.display().to_string(),
                        "",
                        expected,
                        format!("{line:?}"),
                    )
                    .at_line(Some(index + 1)),
                )
            };
            let mut fields = line.split_ascii_whitespace();
            let range = fields.next().ok_or_else(|| bad("an address range"))?;
            let (lo, hi) = range
                .split_once('-')
                .ok_or_else(|| bad("an address range `lo-hi`"))?;
            let address = |hex: &str| {
                usize::from_str_radix(hex, 16).map_err(|_| bad("hexadecimal addresses"))
            };
            let (lo, hi) = (address(lo)?, address(hi)?);
            if hi < lo {
                return Err(bad("an address range whose end is not below its start"));
            }
            let perms = fields
                .next()
                .filter(|p| p.len() == 4)
                .ok_or_else(|| bad("permissions such as `r-xp`"))?
                .as_bytes();
            // offset, device, inode, then the name (which may hold spaces).
            for what in ["an offset", "a device", "an inode"] {
                fields.next().ok_or_else(|| bad(what))?;
            }
            let name = fields.collect::<Vec<_>>().join(" ");
            Ok(Mapping {
                range: lo..hi,
                readable: perms[0] == b'r',
                writable: perms[1] == b'w',
                executable: perms[2] == b'x',
                name,
            })
        })
        .collect()
}

/// This process's mappings, from `/proc/self/maps`.
pub fn mappings_of_self() -> Result<Vec<Mapping>> {
    let path = Path::new("/proc/self/maps");
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_maps(&text, path)
}

/// The resident pages of one kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ResidentPages {
    /// Resident pages.
    pub pages: u64,
    /// Their frame numbers (one per page, in address order).
    pub frames: Vec<u64>,
}

/// This process's resident pages outside the excluded ranges, by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Footprint {
    /// Page size, bytes.
    pub page_size: u64,
    /// Per kind (each kind once, in [`MappingKind`] order).
    pub kinds: Vec<(MappingKind, ResidentPages)>,
}

impl Footprint {
    /// Adds the pages of `other` (another process's, of the same page
    /// size), each frame once per kind: a file's page cache and shared
    /// memory mapped in both count once.
    pub fn merge(&mut self, other: Footprint) {
        for (kind, pages) in other.kinds {
            match self.kinds.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, mine)) => mine.frames.extend(pages.frames),
                None => self.kinds.push((kind, pages)),
            }
        }
        self.kinds.sort_by_key(|(kind, _)| *kind);
        self.dedup();
    }

    /// Each frame once per kind.
    fn dedup(&mut self) {
        for (_, pages) in &mut self.kinds {
            pages.frames.sort_unstable();
            pages.frames.dedup();
            pages.pages = pages.frames.len() as u64;
        }
    }

    /// Every frame, of every kind.
    pub fn frames(&self) -> impl Iterator<Item = u64> + '_ {
        self.kinds
            .iter()
            .flat_map(|(_, r)| r.frames.iter().copied())
    }

    /// Bytes of resident pages in all (each frame once per kind).
    pub fn bytes(&self) -> u64 {
        self.kinds
            .iter()
            .map(|(_, r)| r.pages * self.page_size)
            .sum()
    }
}

/// The resident pages of this process outside `exclude`, read from
/// `/proc/self/maps` and `/proc/self/pagemap`. Frame numbers must be
/// readable (root): without them the kernel shows frame 0 and this is an
/// error that says so.
pub fn of_self(exclude: &[Range<usize>]) -> Result<Footprint> {
    let mappings = mappings_of_self()?;
    let pagemap = Pagemap::open_self()?;
    let page = pagemap.page_size() as usize;
    let mut kinds: std::collections::BTreeMap<MappingKind, ResidentPages> = Default::default();
    for mapping in mappings {
        let Some(kind) = mapping.kind() else { continue };
        if !mapping.readable && !mapping.writable && !mapping.executable {
            continue; // a guard: nothing can be touched there
        }
        for part in outside(mapping.range.clone(), exclude) {
            // Every page the part touches, a page cut by an unaligned
            // exclusion included (read twice at worst: frames dedup).
            let first = part.start / page * page;
            let pages = part.end.div_ceil(page) - part.start / page;
            if pages == 0 {
                continue;
            }
            let entries = pagemap.entries(first, pages)?;
            let resident = kinds.entry(kind).or_default();
            for entry in entries.into_iter().filter(|e| e.present()) {
                // Frame 0 is what the kernel shows without CAP_SYS_ADMIN.
                let frame = entry
                    .frame()
                    .filter(|&f| f != 0)
                    .ok_or_else(|| crate::pagemap::frames_hidden_error("/proc/self/pagemap"))?;
                resident.frames.push(frame);
            }
        }
    }
    let mut footprint = Footprint {
        page_size: page as u64,
        kinds: kinds.into_iter().collect(),
    };
    footprint.dedup();
    footprint.kinds.retain(|(_, r)| r.pages > 0);
    Ok(footprint)
}

/// The parts of `range` outside every range of `exclude`.
fn outside(range: Range<usize>, exclude: &[Range<usize>]) -> Vec<Range<usize>> {
    let mut parts = vec![range];
    for cut in exclude.iter().filter(|c| !c.is_empty()) {
        parts = parts
            .into_iter()
            .flat_map(|p| {
                if cut.end <= p.start || cut.start >= p.end {
                    return vec![p];
                }
                let mut kept = Vec::new();
                if cut.start > p.start {
                    kept.push(p.start..cut.start);
                }
                if cut.end < p.end {
                    kept.push(cut.end..p.end);
                }
                kept
            })
            .collect();
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0a0000000-55d0a0100000 r--p 00000000 fe:01 123 /usr/bin/tinct
55d0a0100000-55d0a0400000 r-xp 00100000 fe:01 123 /usr/bin/tinct
55d0a1000000-55d0a1021000 rw-p 00000000 00:00 0 [heap]
7f0000000000-7f0000001000 ---p 00000000 00:00 0
7f0000001000-7f0000801000 rw-p 00000000 00:00 0
7f1000000000-7f1000002000 rw-s 00000000 00:05 77 /dev/shm/a file with spaces
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]
7ffd00100000-7ffd00104000 r--p 00000000 00:00 0 [vvar]
7ffd00104000-7ffd00106000 r-xp 00000000 00:00 0 [vdso]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]
";

    #[test]
    fn each_mapping_is_read_and_classified() {
        let maps = parse_maps(MAPS, Path::new("maps")).unwrap();
        let kinds: Vec<Option<MappingKind>> = maps.iter().map(Mapping::kind).collect();
        use MappingKind::*;
        assert_eq!(
            kinds,
            [
                Some(FileData),
                Some(Code),
                Some(Anonymous),
                Some(Anonymous),
                Some(Anonymous),
                Some(FileData),
                Some(MainStack),
                None,
                Some(Code),
                None
            ]
        );
        assert_eq!(maps[5].name, "/dev/shm/a file with spaces");
        assert_eq!(maps[1].range, 0x55d0a0100000..0x55d0a0400000);
        assert!(!maps[3].readable && !maps[3].writable);
    }

    #[test]
    fn a_bad_line_is_named_with_what_was_expected() {
        let text = "55d0a0000000-55d0a0100000 r--p 0 fe:01 1 /bin/x\nnot a mapping\n";
        let message = parse_maps(text, Path::new("/proc/1/maps"))
            .unwrap_err()
            .to_string();
        assert!(message.contains("/proc/1/maps:2: expected"), "{message}");
        assert!(message.contains("not a mapping"), "{message}");
        let reversed = "2000-1000 rw-p 0 0:0 0\n";
        assert!(parse_maps(reversed, Path::new("m")).is_err());
    }

    #[test]
    #[allow(clippy::single_range_in_vec_init)] // lists of one range, meant
    fn excluded_ranges_are_cut_out() {
        assert_eq!(outside(0..100, &[]), [0..100]);
        assert_eq!(outside(0..100, &[10..20, 50..60]), [0..10, 20..50, 60..100]);
        assert_eq!(outside(0..100, &[0..100]), Vec::<Range<usize>>::new());
        assert_eq!(outside(10..20, &[0..15, 18..30]), [15..18]);
        assert_eq!(outside(0..100, &[200..300]), [0..100]);
    }

    #[test]
    fn merging_counts_each_frame_once_per_kind() {
        let of = |kind, frames: Vec<u64>| Footprint {
            page_size: 4096,
            kinds: vec![(
                kind,
                ResidentPages {
                    pages: frames.len() as u64,
                    frames,
                },
            )],
        };
        let mut child = of(MappingKind::Code, vec![5, 3, 9]);
        child.merge(of(MappingKind::Code, vec![3, 9, 11]));
        child.merge(of(MappingKind::Anonymous, vec![3]));
        assert_eq!(child.kinds[0].1.frames, [3, 5, 9, 11]);
        assert_eq!(child.kinds[0].1.pages, 4);
        assert_eq!(child.kinds[1].0, MappingKind::Anonymous);
        assert_eq!(child.bytes(), 5 * 4096);
    }

    #[test]
    fn this_process_has_resident_code_and_excluding_a_buffer_drops_its_pages() {
        if !crate::testing::capable_or_skip(
            "reading frame numbers from /proc/self/pagemap",
            crate::privilege::Capability::SysAdmin,
        ) {
            return;
        }
        let page = rustix::param::page_size();
        let buffer = vec![1u8; 64 * page];
        let start = buffer.as_ptr() as usize;
        let range = start.next_multiple_of(page)..(start + buffer.len()) / page * page;
        let whole = of_self(&[]).unwrap();
        let without = of_self(std::slice::from_ref(&range)).unwrap();
        let code = |f: &Footprint| {
            f.kinds
                .iter()
                .find(|(k, _)| *k == MappingKind::Code)
                .map_or(0, |(_, r)| r.pages)
        };
        assert!(code(&whole) > 0, "no resident code: {whole:?}");
        // The buffer's own frames: in the whole, not in the rest (other
        // tests' threads may fault other pages in between).
        let mine = crate::pagemap::Pagemap::open_self()
            .unwrap()
            .frames(range.start, range.len() / page)
            .unwrap();
        let frames = |f: &Footprint| f.frames().collect::<std::collections::HashSet<u64>>();
        let (with, rest) = (frames(&whole), frames(&without));
        assert!(
            mine.iter().all(|f| with.contains(f)),
            "the buffer in the whole"
        );
        assert!(!mine.iter().any(|f| rest.contains(f)), "the buffer cut out");
        assert!(whole.frames().all(|f| f > 0));
        // An exclusion that does not cover its first and last pages whole
        // leaves them in.
        let inner = of_self(std::slice::from_ref(&(range.start + 1..range.end - 1))).unwrap();
        let inner = frames(&inner);
        assert!(inner.contains(&mine[0]) && inner.contains(mine.last().unwrap()));
        assert!(!inner.contains(&mine[1]));
        std::hint::black_box(&buffer);
    }
}
