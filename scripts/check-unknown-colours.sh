#!/usr/bin/env bash
# The whole Rust test suite as on a machine whose page-colour bits cannot
# be derived (issue 25): TINCT_TOPOLOGY_ROOT points tinct's colour rule at
# tinct-sys's fixture of a KVM guest of an Intel Xeon Emerald Rapids (L3
# 300 MiB 20-way, a 15 MiB way), whatever machine this is. A test that
# passes only where the bits can be derived fails here. Run after
# scripts/test.sh (it reuses its build).
set -euo pipefail
cd "$(dirname "$0")/.."
export TINCT_TOPOLOGY_ROOT="$PWD/crates/tinct-sys/tests/fixtures/machines/kvm-xeon-emr"
test -f "$TINCT_TOPOLOGY_ROOT/proc/cpuinfo"
cargo test --workspace --all-targets --no-fail-fast "$@"
