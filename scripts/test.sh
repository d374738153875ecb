#!/usr/bin/env bash
# The whole test suite, as the README and CI run it.
#
# Builds once (the `tinct` binary and the C/LD_PRELOAD libraries that the
# end-to-end tests run), then runs every test target and the doc tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --workspace
cargo test --workspace --all-targets --no-fail-fast "$@"
cargo test --workspace --doc
