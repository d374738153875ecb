//! The real pool: every page handed out is re-translated through
//! /proc/self/pagemap and must lie in the requested color, bank and
//! controller. These tests need root (PFNs); with
//! TINCT_REQUIRE_PRIVILEGED=1 they fail instead of skipping.

use std::collections::{HashMap, HashSet};
use std::os::unix::process::CommandExt;
use std::process::Command;

use tinct_mem::mapping::LayoutSpec;
use tinct_mem::{
    AddressMapping, BankOptions, BankRequest, ColorCursor, Locking, MemError, Modes, PageId, Pool,
    PoolOptions, XorFunctions, machine_mapping,
};
use tinct_sys::pagemap::Pagemap;
use tinct_sys::testing::privileged_or_skip;

const MIB: usize = 1 << 20;

fn page_size() -> u64 {
    rustix::param::page_size() as u64
}

/// The `k` colors with the most free pages (frames of a small pool on a
/// busy machine are far from uniform over colors).
fn fullest_colors(pool: &Pool, k: usize) -> Vec<u32> {
    let stats = pool.stats();
    let mut colors: Vec<u32> = (0..stats.colors.len() as u32).collect();
    colors.sort_by_key(|&c| std::cmp::Reverse(stats.colors[c as usize].free));
    colors.truncate(k);
    colors
}

/// Physical address of `address`, read now (not from the pool's table).
fn physical(pagemap: &Pagemap, address: *const u8) -> u64 {
    pagemap
        .physical_address(address as usize)
        .expect("pagemap readable")
        .expect("page present")
}

#[test]
fn colored_pages_lie_in_their_colors_with_equal_counts() {
    if !privileged_or_skip("checking page colors through pagemap") {
        return;
    }
    let mapping = machine_mapping(&LayoutSpec {
        color_bits: Some(tinct_sys::testing::mechanism_color_bits()),
        ..LayoutSpec::default()
    })
    .unwrap();
    let mut pool = Pool::new(mapping.clone(), PoolOptions::new(32 * MIB)).unwrap();
    assert!(!pool.is_uncolored());
    let wanted = fullest_colors(&pool, 3);
    let per_color = (0..wanted.len())
        .map(|i| pool.book().free_in_color(wanted[i]))
        .min()
        .unwrap()
        .min(8);
    assert!(
        per_color >= 2,
        "a 32 MiB pool must hold at least 2 pages per color"
    );
    let mut cursor = ColorCursor::new(&wanted).unwrap();
    let mut pages = Vec::new();
    pool.alloc_colored(&mut cursor, per_color * wanted.len(), &mut pages)
        .unwrap();

    let pagemap = Pagemap::open_self().unwrap();
    let mut per: HashMap<u32, usize> = HashMap::new();
    let mut seen = HashSet::new();
    for &page in &pages {
        assert!(seen.insert(page), "page {page:?} handed out twice");
        let address = pool.page_address(page);
        // Write to it: the page must be ours and writable.
        // SAFETY: the page was just handed out by the pool and is unused.
        unsafe { address.write_bytes(0xA5, page_size() as usize) };
        let phys = physical(&pagemap, address);
        assert_eq!(
            phys / page_size(),
            pool.frame(page),
            "frame unchanged since setup"
        );
        let color = mapping.classify(phys).color;
        assert!(
            wanted.contains(&color),
            "page at {phys:#x} has color {color}, not in {wanted:?}"
        );
        *per.entry(color).or_default() += 1;
    }
    assert!(
        per.values().all(|&n| n == per_color),
        "equal pages per color: {per:?}"
    );

    // Free then alloc: the freed page comes back first.
    let victim = pages[1];
    let color = pool.class(victim).color;
    pool.free(victim).unwrap();
    assert_eq!(pool.alloc_page(color).unwrap(), victim);
    let stats = pool.stats();
    assert_eq!(stats.total.used as usize, pages.len());
    assert!(!stats.uncolored);
    assert_eq!(
        pool.changed_frames().unwrap(),
        vec![],
        "no page migrated meanwhile"
    );
}

#[test]
fn bank_aware_pages_lie_in_their_bank_and_controller() {
    if !privileged_or_skip("checking DRAM banks through pagemap") {
        return;
    }
    // Illustrative DRAMA-style functions over page-granular bits.
    let mapping = AddressMapping::new(
        page_size(),
        XorFunctions::from_bits(&[12, 13]).unwrap(),
        XorFunctions::parse("0x22000,0x44000").unwrap(),
        XorFunctions::parse("0x108000").unwrap(),
    )
    .unwrap();
    let mut pool = Pool::new(mapping.clone(), PoolOptions::new(32 * MIB)).unwrap();
    let pagemap = Pagemap::open_self().unwrap();
    let mut seen = HashSet::new();
    for controller in 0..mapping.controllers() {
        for bank in 0..mapping.banks() {
            for _ in 0..4 {
                let request = BankRequest {
                    controller,
                    bank,
                    size: 100,
                    modes: Modes::EXACT,
                };
                let grant = pool.alloc_bank_aware(request).unwrap();
                // The paper's 8 KiB chunk: two pages, both in the bank.
                assert_eq!(grant.pages, 2);
                for page in grant.first.0..grant.first.0 + grant.pages {
                    assert!(seen.insert(page), "page handed out twice");
                    let class =
                        mapping.classify(physical(&pagemap, pool.page_address(PageId(page))));
                    assert_eq!((class.controller, class.bank), (controller, bank));
                }
            }
        }
    }
    let stats = pool.stats();
    assert!(stats.banks.iter().all(|b| b.used == 8), "{:?}", stats.banks);
    assert!(
        stats
            .controllers
            .iter()
            .all(|c| c.used == 8 * u64::from(mapping.banks()))
    );
}

/// chandru-mueller's controller-interleaved pool: every controller keeps
/// the same number of whole free chunks, and one-page chunks serve
/// functions that read bit 12.
#[test]
fn an_interleaved_pool_offers_every_controller_the_same_memory() {
    if !privileged_or_skip("filing a real pool by DRAM controller") {
        return;
    }
    let mapping = AddressMapping::new(
        page_size(),
        XorFunctions::none(),
        XorFunctions::parse("0x22000").unwrap(),
        XorFunctions::parse("0x108000").unwrap(),
    )
    .unwrap();
    let banks = BankOptions {
        interleave_controllers: true,
        ..BankOptions::default()
    };
    let pool = Pool::with_bank_options(mapping.clone(), PoolOptions::new(16 * MIB), banks).unwrap();
    let book = pool.book();
    let chunks: Vec<usize> = (0..2).map(|c| book.free_chunks_in_controller(c)).collect();
    assert_eq!(chunks[0], chunks[1], "{chunks:?}");
    assert!(chunks[0] > 0);
    // Functions reading bit 12 need one-page chunks.
    let bit12 = AddressMapping::new(
        page_size(),
        XorFunctions::none(),
        XorFunctions::parse("0x1000").unwrap(),
        XorFunctions::none(),
    )
    .unwrap();
    let err = Pool::new(bit12.clone(), PoolOptions::new(MIB)).unwrap_err();
    assert!(err.to_string().contains("bit 12"), "{err}");
    let one_page = BankOptions {
        chunk_bytes: page_size(),
        ..BankOptions::default()
    };
    assert!(Pool::with_bank_options(bit12, PoolOptions::new(MIB), one_page).is_ok());
}

#[test]
fn split_blocks_are_contiguous_free_pages() {
    if !privileged_or_skip("bank-aware SPLIT on a real pool") {
        return;
    }
    let mapping = machine_mapping(&LayoutSpec {
        color_bits: Some(tinct_sys::testing::mechanism_color_bits()),
        ..LayoutSpec::default()
    })
    .unwrap();
    let mut pool = Pool::new(mapping, PoolOptions::new(4 * MIB)).unwrap();
    let request = BankRequest {
        controller: 0,
        bank: 0,
        size: 5 * page_size(),
        modes: Modes::SPLIT,
    };
    let grant = pool.alloc_bank_aware(request).unwrap();
    assert_eq!(grant.pages, 5);
    let start = pool.page_address(grant.first);
    // SAFETY: the five pages were just handed out and are contiguous.
    unsafe { start.write_bytes(1, 5 * page_size() as usize) };
    for page in grant.first.0..grant.first.0 + 5 {
        assert!(pool.book().is_used(PageId(page)));
    }
    pool.free_grant(grant).unwrap();
    assert_eq!(pool.book().free_pages(), pool.pages());
}

#[test]
fn without_frame_numbers_the_pool_refuses_unless_uncolored() {
    if !privileged_or_skip("dropping privileges to nobody") {
        return;
    }
    // Run a copy in the system temp directory: the build tree may sit
    // where `nobody` cannot reach it (e.g. under /root in CI).
    let copy = std::env::temp_dir().join(format!("tinct-mem-unprivileged-{}", std::process::id()));
    std::fs::copy(std::env::current_exe().unwrap(), &copy).unwrap();
    std::fs::set_permissions(&copy, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let output = Command::new(&copy)
        .args(["--ignored", "--exact", "unprivileged_child", "--nocapture"])
        .env("TINCT_MEM_CHILD", "1")
        .current_dir(std::env::temp_dir())
        .uid(65534)
        .gid(65534)
        .output();
    let _ = std::fs::remove_file(&copy);
    let output = output.unwrap();
    let text = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "child failed:\n{text}");
    assert!(text.contains("1 passed"), "child did not run:\n{text}");
}

/// Runs as `nobody`, started by the test above.
#[test]
#[ignore = "started as a child process by without_frame_numbers_the_pool_refuses_unless_uncolored"]
fn unprivileged_child() {
    assert_eq!(
        std::env::var("TINCT_MEM_CHILD").as_deref(),
        Ok("1"),
        "run by the parent test"
    );
    assert!(!rustix::process::geteuid().is_root());
    let colors = tinct_base::geometry::PageColors::of_cache(1 << 20, 16, page_size()).unwrap();
    let mapping = AddressMapping::from_colors(&colors).unwrap();
    let error = Pool::new(mapping.clone(), PoolOptions::new(MIB)).unwrap_err();
    assert!(
        matches!(error, MemError::FramesUnreadable { .. }),
        "{error}"
    );
    let text = error.to_string();
    assert!(
        text.contains("CAP_SYS_ADMIN") && text.contains("run as root"),
        "{text}"
    );
    assert!(text.contains("uncolored"), "{text}");

    let options = PoolOptions {
        uncolored: true,
        ..PoolOptions::new(MIB)
    };
    let mut pool = Pool::new(mapping, options).unwrap();
    assert!(pool.is_uncolored());
    assert!(pool.uncolored_reason().unwrap().contains("CAP_SYS_ADMIN"));
    assert!(pool.stats().uncolored);
    let mut cursor = ColorCursor::new(&[0, 1]).unwrap();
    let mut pages = Vec::new();
    pool.alloc_colored(&mut cursor, 4, &mut pages).unwrap();
    assert_eq!(pages.len(), 4);
}

/// The `/proc/self/smaps` block of the mapping containing `address`.
fn smaps_block(address: usize) -> String {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut block = String::new();
    let mut inside = false;
    for line in smaps.lines() {
        let header = line.split_whitespace().next().and_then(|range| {
            let (start, end) = range.split_once('-')?;
            Some((
                usize::from_str_radix(start, 16).ok()?,
                usize::from_str_radix(end, 16).ok()?,
            ))
        });
        if let Some((start, end)) = header.filter(|_| !line.starts_with(char::is_uppercase)) {
            inside = (start..end).contains(&address);
        }
        if inside {
            block.push_str(line);
            block.push('\n');
        }
    }
    block
}

#[test]
fn pool_memory_refuses_huge_pages_and_can_be_locked() {
    if !privileged_or_skip("locking pool memory (CAP_IPC_LOCK)") {
        return;
    }
    let mapping = machine_mapping(&LayoutSpec {
        color_bits: Some(tinct_sys::testing::mechanism_color_bits()),
        ..LayoutSpec::default()
    })
    .unwrap();
    let options = PoolOptions {
        lock: Locking::Required,
        ..PoolOptions::new(8 * MIB)
    };
    let pool = Pool::new(mapping, options).unwrap();
    let block = smaps_block(pool.start() as usize);
    let flags = block
        .lines()
        .find(|l| l.starts_with("VmFlags:"))
        .expect(&block);
    let flags: Vec<&str> = flags.split_whitespace().collect();
    assert!(flags.contains(&"nh"), "MADV_NOHUGEPAGE missing: {flags:?}");
    assert!(flags.contains(&"lo"), "mlock missing: {flags:?}");
    let huge = block
        .lines()
        .find(|l| l.starts_with("AnonHugePages:"))
        .expect(&block);
    assert!(huge.split_whitespace().nth(1) == Some("0"), "{huge}");
    // Populated: every page of the pool's own range is present. (Not smaps'
    // Rss: the kernel merges the pool's mapping with an adjacent one of the
    // same flags, such as another test's locked pool, into one block.)
    let pagemap = Pagemap::open_self().unwrap();
    let pages = 8 * MIB / pagemap.page_size() as usize;
    let entries = pagemap.entries(pool.start() as usize, pages).unwrap();
    let absent = entries.iter().filter(|e| !e.present()).count();
    assert_eq!(
        absent, 0,
        "the pool is populated: {absent} of {pages} pages absent"
    );
    assert_eq!(pool.unlocked_reason(), None);
    // Locked by default too (root has CAP_IPC_LOCK); turned off, it says so.
    let default = Pool::new(pool.mapping().clone(), PoolOptions::new(MIB)).unwrap();
    assert_eq!(default.unlocked_reason(), None);
    let flags = smaps_block(default.start() as usize);
    assert!(flags.contains(" lo"), "default pool not mlocked: {flags}");
    let off = PoolOptions {
        lock: Locking::Off,
        ..PoolOptions::new(MIB)
    };
    let unlocked = Pool::new(pool.mapping().clone(), off).unwrap();
    assert_eq!(
        unlocked.unlocked_reason(),
        Some(tinct_mem::locking::LOCKING_OFF)
    );
}

#[test]
fn retained_colors_keep_their_pages_and_others_are_given_back() {
    let mapping = AddressMapping::new(
        page_size(),
        XorFunctions::from_bits(&[12, 13, 14]).unwrap(),
        XorFunctions::none(),
        XorFunctions::none(),
    )
    .unwrap();
    let options = PoolOptions {
        uncolored: true,
        ..PoolOptions::new(8 * MIB)
    };
    let mut pool = Pool::new(mapping, options).unwrap();
    let fullest = fullest_colors(&pool, 3);
    let (keep, other) = ([fullest[0], fullest[1]], fullest[2]);
    let busy = pool.alloc_page(other).unwrap();
    let kept: usize = keep.iter().map(|&c| pool.book().free_in_color(c)).sum();
    let retired = pool.retain_colors(&keep).unwrap();
    assert_eq!(retired + kept + 1, pool.pages());
    let stats = pool.stats();
    assert_eq!(stats.total.free as usize, kept);
    assert_eq!(stats.total.used, 1, "the page in use stays");
    assert_eq!(
        stats.colors[other as usize],
        tinct_mem::Counts { free: 0, used: 1 }
    );
    let gone = (0..8).find(|c| !keep.contains(c) && *c != other).unwrap();
    assert_eq!(
        stats.colors[gone as usize].free + stats.colors[gone as usize].used,
        0
    );
    assert!(matches!(pool.alloc_page(gone), Err(MemError::Exhausted(_))));
    let page = pool.alloc_page(keep[1]).unwrap();
    assert_eq!(pool.class(page).color, keep[1]);
    // SAFETY: a page just handed out.
    unsafe { pool.page_address(page).write_bytes(3, page_size() as usize) };
    // Retired pages are no longer backed (pagemap's present bit needs no root).
    let present = Pagemap::open_self()
        .unwrap()
        .entries(pool.start() as usize, pool.pages())
        .unwrap()
        .iter()
        .filter(|e| e.present())
        .count();
    assert_eq!(
        present,
        kept + 1,
        "kept colors and the busy page stay, the rest is given back"
    );
    pool.free(busy).unwrap();
    assert!(pool.retain_colors(&[8]).is_err());
}
