//! Builds a pool on this machine and prints its statistics as JSON.
//!
//! `cargo run -p tinct-mem --example pool_stats -- 64` (size in MiB; add
//! `--uncolored` to run without readable frame numbers).

use tinct_mem::mapping::LayoutSpec;
use tinct_mem::{Pool, PoolOptions, machine_mapping};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mib: usize = args.first().map_or(Ok(64), |a| a.parse())?;
    let uncolored = args.iter().any(|a| a == "--uncolored");
    let mapping = machine_mapping(&LayoutSpec::default())?;
    let options = PoolOptions {
        uncolored,
        ..PoolOptions::new(mib << 20)
    };
    let pool = Pool::new(mapping, options)?;
    println!("{}", serde_json::to_string_pretty(&pool.stats())?);
    Ok(())
}
