//! The LD_PRELOAD shim's settings (`TINCT_COLORS`, `TINCT_BANKS`,
//! `TINCT_BANK_FUNCTIONS`, `TINCT_POOL`, ...), through the shim's own
//! contract, `tinct_mem::ShimConfig::from_lookup` (what the shim reads at
//! start-up).
//!
//! The input is an environment: one `NAME=VALUE` per line (the last line
//! for a name wins; a name on no line is unset). An accepted configuration
//! has sorted, unique colors (at least one unless banks or controllers
//! narrow the heap), banks and controllers that exist under their XOR
//! functions, and a pool of at least 1 MiB.

use tinct_mem::ShimConfig;

/// The target.
pub fn check(data: &[u8]) {
    let Some(text) = crate::text(data) else {
        return;
    };
    let lookup = |name: &str| {
        text.lines()
            .rev()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix('='))
            .map(str::to_string)
    };
    let Ok(config) = ShimConfig::from_lookup(lookup) else {
        return;
    };
    let sorted_unique = |list: &[u32]| list.windows(2).all(|w| w[0] < w[1]);
    assert!(sorted_unique(&config.colors), "{config:?}");
    assert!(
        !config.colors.is_empty() || config.banks.is_some() || config.controllers.is_some(),
        "no colors, banks or controllers: {config:?}"
    );
    for (list, functions) in [
        (&config.banks, &config.bank_functions),
        (&config.controllers, &config.controller_functions),
    ] {
        if let Some(list) = list {
            assert!(!list.is_empty() && sorted_unique(list), "{config:?}");
            let count = 1u64 << functions.len();
            assert!(
                list.iter().all(|&i| u64::from(i) < count),
                "an index beyond 2^{} functions: {config:?}",
                functions.len()
            );
        }
    }
    assert!(config.pool_bytes >= 1 << 20, "{config:?}");
}
