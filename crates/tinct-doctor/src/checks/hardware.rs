//! CPUs, caches, page colors and NUMA nodes.

use super::{finding, subject};
use crate::{Finding, Level};
use tinct_base::geometry::{ColorGeometry, GeometryError};
use tinct_base::units::human_bytes;
use tinct_sys::cpulist::format_cpu_list;
use tinct_sys::topology::{Cache, CacheType, Topology};

pub(super) fn cpus(t: &Topology) -> Finding {
    let packages = t.packages().len().max(1);
    let cores = t.physical_cores();
    let mut found = format!(
        "{} online CPUs ({}), {} physical cores, {} package(s)",
        t.online_cpus.len(),
        format_cpu_list(&t.online_cpus),
        cores,
        packages
    );
    let groups = t.smt_sibling_groups();
    if groups.is_empty() {
        found.push_str(", no SMT siblings");
    } else {
        let shown: Vec<String> = groups.iter().take(4).map(|g| format_cpu_list(g)).collect();
        found.push_str(&format!(
            ", SMT on: siblings {}{}",
            shown.join(" "),
            if groups.len() > 4 { " ..." } else { "" }
        ));
        return finding(
            subject::CPUS,
            Level::Warning,
            found,
            Some(
                "SMT siblings share L1 and L2: give a real-time task a whole core (keep its sibling idle), \
                 or turn SMT off: `echo off > /sys/devices/system/cpu/smt/control` (or boot with `nosmt`)"
                    .into(),
            ),
        );
    }
    if t.online_cpus.len() < 2 {
        return finding(
            subject::CPUS,
            Level::Warning,
            found,
            Some(
                "one CPU cannot show inter-core interference: use a machine with 2 or more cores"
                    .into(),
            ),
        );
    }
    finding(subject::CPUS, Level::Ok, found, None)
}

pub(super) fn caches(t: &Topology) -> Finding {
    if t.caches.is_empty() {
        return finding(
            subject::CACHES,
            Level::Warning,
            "sysfs exposes no cache information (/sys/devices/system/cpu/cpu*/cache)",
            Some(
                "give the LLC geometry (size, ways, line) in the task set's [platform] table"
                    .into(),
            ),
        );
    }
    let mut kinds: Vec<(u8, CacheType)> = t.caches.iter().map(|c| (c.level, c.kind)).collect();
    kinds.dedup();
    let text: Vec<String> = kinds
        .iter()
        .map(|&(level, kind)| {
            let instances: Vec<&Cache> = t
                .caches
                .iter()
                .filter(|c| (c.level, c.kind) == (level, kind))
                .collect();
            let first = instances[0];
            let sharing = if instances.len() == 1 {
                format!("shared by CPUs {}", format_cpu_list(&first.shared_cpus))
            } else {
                format!("each shared by {} CPU(s)", first.shared_cpus.len())
            };
            format!(
                "{} {} {}-way x{} ({sharing})",
                first.name(),
                human_bytes(first.size_bytes),
                first.ways.map_or("?".into(), |w| w.to_string()),
                instances.len(),
            )
        })
        .collect();
    finding(subject::CACHES, Level::Ok, text.join("; "), None)
}

pub(super) fn colors(
    t: &Topology,
    geometry: Option<Result<ColorGeometry, GeometryError>>,
    page_bytes: u64,
    virtual_machine: bool,
) -> Finding {
    const FIX: &str = "give the colour bits: `--color-bits 12-16` on a command, \
                       `TINCT_COLOR_BITS=12-16`, `color_bits = [12, 13, ...]` in the task set's \
                       [platform] table, or once for this machine `tinct doctor --save --color-bits \
                       12-16`";
    let Some(llc) = t.last_level_caches().first().copied() else {
        return finding(
            subject::COLORS,
            Level::Warning,
            "no last-level cache found",
            Some(FIX.into()),
        );
    };
    let geometry = match geometry {
        Some(Ok(geometry)) => geometry,
        Some(Err(e)) => {
            return finding(
                subject::COLORS,
                Level::Warning,
                format!(
                    "{}: colours cannot be derived: {e}; commands that colour refuse until \
                     they are given, the rest work",
                    llc.name()
                ),
                Some(what_to_do(llc, page_bytes, virtual_machine)),
            );
        }
        None => {
            return finding(
                subject::COLORS,
                Level::Warning,
                format!(
                    "{}: associativity unknown, colours cannot be derived",
                    llc.name()
                ),
                Some(FIX.into()),
            );
        }
    };
    let colors = &geometry.colors;
    let base = format!(
        "{}: {} colors (way {} / page {}; {}: {})",
        llc.name(),
        colors.colors,
        human_bytes(colors.way_bytes),
        human_bytes(page_bytes),
        geometry.rule,
        geometry.reason
    );
    match colors.address_bits {
        _ if colors.colors < 2 => finding(
            subject::COLORS,
            Level::Blocker,
            format!(
                "{base}: a way is not larger than a page, page coloring cannot partition this cache"
            ),
            Some("use resctrl (hardware cache allocation) if offered".into()),
        ),
        Some((low, high)) => finding(
            subject::COLORS,
            Level::Ok,
            format!("{base}; physical address bits {low}-{}", high - 1),
            None,
        ),
        None => finding(
            subject::COLORS,
            Level::Warning,
            format!(
                "{base}; the way size is not a power of two (sliced or hashed cache), the color bits are not known; \
                 commands that colour refuse until they are given, the rest work"
            ),
            Some(what_to_do(llc, page_bytes, virtual_machine)),
        ),
    }
}

pub(super) fn numa(t: &Topology) -> Finding {
    if t.numa_nodes.is_empty() {
        return finding(
            subject::NUMA,
            Level::Ok,
            "no NUMA information (kernel without CONFIG_NUMA): one memory node",
            None,
        );
    }
    let nodes: Vec<String> = t
        .numa_nodes
        .iter()
        .map(|n| {
            let memory = n
                .memory_bytes
                .map_or(String::new(), |b| format!(", {}", human_bytes(b)));
            format!("node {}: CPUs {}{}", n.id, format_cpu_list(&n.cpus), memory)
        })
        .collect();
    let found = format!("{} node(s): {}", t.numa_nodes.len(), nodes.join("; "));
    if t.numa_nodes.len() > 1 {
        finding(
            subject::NUMA,
            Level::Warning,
            found,
            Some(
                "keep each real-time task's memory on its own node: pin it to that node's CPUs \
                 (or run under `numactl --membind=N --cpunodebind=N`)"
                    .into(),
            ),
        )
    } else {
        finding(subject::NUMA, Level::Ok, found, None)
    }
}

/// What a user does about colour bits that cannot be derived: the bits
/// safe to assume ([`tinct_base::geometry::assumed_safe_bits`]), how to check
/// them and the one command that saves them for every command.
fn what_to_do(llc: &Cache, page_bytes: u64, virtual_machine: bool) -> String {
    let line = u64::from(llc.line_bytes.unwrap_or(64));
    // The whole cache's way: a slice count from misleading evidence can
    // make the per-slice way fractional; the slice bound still holds.
    let way_bytes = llc.size_bytes / u64::from(llc.ways.unwrap_or(1).max(1));
    let bits = tinct_base::geometry::assumed_safe_bits(way_bytes, line, page_bytes);
    let Some((first, last)) = bits.first().zip(bits.last()) else {
        return "no colour bits are safe to assume here: use resctrl (hardware cache allocation) \
                if offered"
            .into();
    };
    let list = format!("{first}-{last}");
    let verify = if virtual_machine {
        "on a virtual machine the probe cannot confirm them (guest frames are not host \
         frames): ask the host's owner, or take them as a model only"
            .to_string()
    } else {
        format!("verify: `tinct doctor --probe-colors --color-bits {list}` (as root)")
    };
    format!(
        "safe to assume: bits {list} ({} colours, below the set index of the smallest documented \
         LLC slice, {} sets of {line}-byte lines); {verify}; save them for every command: \
         `tinct doctor --save --color-bits {list}` (or give `--color-bits {list}` / \
         TINCT_COLOR_BITS={list} each time)",
        1u64 << bits.len(),
        tinct_base::geometry::MIN_SETS_PER_SLICE
    )
}
