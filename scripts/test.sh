#!/usr/bin/env bash
# The whole test suite, as the README and CI run it.
#
# Builds once (the `tinct` binary and the C/LD_PRELOAD libraries that the
# end-to-end tests run), then runs every test target and the doc tests, then
# builds the Python package into .venv (maturin, release) and runs its
# pytest suite, which compares it with the `tinct` binary just built.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --workspace
cargo test --workspace --all-targets --no-fail-fast "$@"
cargo test --workspace --doc

# The Python package: one release build into the venv, then pytest.
export VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PATH"
(cd crates/tinct-py && maturin develop --release --quiet)
python -m pytest crates/tinct-py/tests -q
