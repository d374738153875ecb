//! Controller-local and controller-remote memory on NUMA machines.
//!
//! On a machine with several NUMA nodes each node is a memory controller
//! (chandru-mueller's "controller-local" allocation). Linux places a page on
//! the node of the CPU that first touches it, so memory that a thread pinned
//! to CPU *c* allocates and writes lies on *c*'s node: local for threads of
//! that node, remote for the others. Placement is then checked, not assumed:
//! frames are mapped to nodes through the memory blocks sysfs lists under
//! each node (`/sys/devices/system/node/nodeN/memoryM`, blocks of
//! `/sys/devices/system/memory/block_size_bytes`).

use crate::{Error, Result};
use std::collections::HashMap;
use tinct_sys::SysRoot;
use tinct_sys::pagemap::Pagemap;

/// Which node each physical memory block belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeMap {
    block_bytes: u64,
    node_of_block: HashMap<u64, u32>,
}

impl NodeMap {
    /// Reads the map under `root`; `None` when the machine lists no node
    /// memory blocks (no NUMA support or memory hotplug sysfs).
    pub fn read(root: &SysRoot) -> Result<Option<Self>> {
        let Some(size) = root.read_line_optional("/sys/devices/system/memory/block_size_bytes")?
        else {
            return Ok(None);
        };
        let block_bytes = u64::from_str_radix(size.trim().trim_start_matches("0x"), 16)
            .ok()
            .filter(|&b| b > 0)
            .ok_or_else(|| {
                Error::Measurement(format!(
                    "{}: expected a hexadecimal block size, found {size:?}",
                    root.path("/sys/devices/system/memory/block_size_bytes")
                        .display()
                ))
            })?;
        let mut node_of_block = HashMap::new();
        for entry in root.list_dir("/sys/devices/system/node")? {
            let Some(node) = entry
                .strip_prefix("node")
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            for block in root.list_dir(&format!("/sys/devices/system/node/{entry}"))? {
                if let Some(index) = block.strip_prefix("memory").and_then(|b| b.parse().ok()) {
                    node_of_block.insert(index, node);
                }
            }
        }
        Ok((!node_of_block.is_empty()).then_some(Self {
            block_bytes,
            node_of_block,
        }))
    }

    /// The node of physical frame `frame` of `page_bytes`-byte pages.
    pub fn node_of_frame(&self, frame: u64, page_bytes: u64) -> Option<u32> {
        let block = frame.saturating_mul(page_bytes) / self.block_bytes;
        self.node_of_block.get(&block).copied()
    }
}

/// `words` zero-initialized 64-bit words allocated and written by a thread
/// pinned to `cpu`, so first touch puts them on `cpu`'s node.
pub fn first_touch(cpu: u32, words: usize) -> Result<Vec<u64>> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tinct_sys::sched::set_affinity(&[cpu])?;
                Ok(vec![1u64; words])
            })
            .join()
            .map_err(|_| Error::Measurement("the first-touch thread panicked".into()))?
    })
}

/// Fraction of the pages of `words` that lie on `node` (`None` when frames
/// cannot be read).
pub fn share_on_node(words: &[u64], node: u32, map: &NodeMap) -> Option<f64> {
    let pagemap = Pagemap::open_self().ok()?;
    let page_bytes = pagemap.page_size();
    let start = words.as_ptr() as usize;
    let first_page = (start as u64).div_ceil(page_bytes) * page_bytes;
    let end = start as u64 + 8 * words.len() as u64;
    let pages = (end.saturating_sub(first_page) / page_bytes) as usize;
    if pages == 0 {
        return None;
    }
    let frames = pagemap.frames(first_page as usize, pages).ok()?;
    let on_node = frames
        .iter()
        .filter(|&&f| map.node_of_frame(f, page_bytes) == Some(node))
        .count();
    Some(on_node as f64 / pages as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("sys/devices/system");
        std::fs::create_dir_all(base.join("memory")).unwrap();
        std::fs::write(base.join("memory/block_size_bytes"), "8000000\n").unwrap();
        for (node, blocks) in [(0, [0, 1]), (1, [2, 3])] {
            for block in blocks {
                std::fs::create_dir_all(base.join(format!("node/node{node}/memory{block}")))
                    .unwrap();
            }
            std::fs::write(base.join(format!("node/node{node}/cpulist")), "0\n").unwrap();
        }
        std::fs::create_dir_all(base.join("node/power")).unwrap();
        dir
    }

    #[test]
    fn frames_map_to_the_node_owning_their_block() {
        let dir = fixture();
        let map = NodeMap::read(&SysRoot::at(dir.path())).unwrap().unwrap();
        let block = 0x800_0000u64; // 128 MiB
        assert_eq!(map.node_of_frame(0, 4096), Some(0));
        assert_eq!(map.node_of_frame((2 * block - 4096) / 4096, 4096), Some(0));
        assert_eq!(map.node_of_frame(2 * block / 4096, 4096), Some(1));
        assert_eq!(map.node_of_frame(4 * block / 4096, 4096), None);
    }

    #[test]
    fn a_tree_without_memory_blocks_has_no_map() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(NodeMap::read(&SysRoot::at(dir.path())).unwrap(), None);
    }

    #[test]
    fn first_touch_memory_is_on_the_cpus_node_here() {
        if !tinct_sys::testing::privileged_or_skip("reading frames of first-touch memory") {
            return;
        }
        let Some(map) = NodeMap::read(&SysRoot::live()).unwrap() else {
            eprintln!("no NUMA memory blocks in sysfs: nothing to check");
            return;
        };
        let topology = tinct_sys::topology::Topology::read(&SysRoot::live()).unwrap();
        let cpu = tinct_sys::sched::affinity().unwrap()[0];
        let node = topology
            .numa_nodes
            .iter()
            .find(|n| n.cpus.contains(&cpu))
            .map_or(0, |n| n.id);
        let words = first_touch(cpu, 1 << 20).unwrap();
        let share = share_on_node(&words, node, &map).unwrap();
        assert!(
            share > 0.9,
            "only {share} of first-touch pages on node {node}"
        );
    }
}
