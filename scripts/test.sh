#!/usr/bin/env bash
# The whole test suite, as the README and CI run it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo test --workspace --all-targets "$@"
cargo test --workspace --doc
