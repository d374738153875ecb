#!/usr/bin/env bash
# Installs what tinct's build, tests and benchmarks need on a fresh Debian
# machine. Idempotent: installs only what is missing. Run as root (or with
# sudo available); CI runs it first.
set -euo pipefail

need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(gcc)
command -v make >/dev/null 2>&1 || need_apt+=(make)
# libFuzzer (cargo-fuzz's libfuzzer-sys) is C++.
command -v c++ >/dev/null 2>&1 || need_apt+=(g++)
# Real programs the LD_PRELOAD shim is tested with, and setpriv/runuser for
# the unprivileged-user tests.
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
command -v xz >/dev/null 2>&1 || need_apt+=(xz-utils)
command -v sort >/dev/null 2>&1 || need_apt+=(coreutils)
command -v setpriv >/dev/null 2>&1 || need_apt+=(util-linux)
# The Python package (crates/tinct-py) is built and tested in a venv.
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
command -v runuser >/dev/null 2>&1 || need_apt+=(util-linux)
# Headless browser for the test of `tinct report`'s page (Debian's
# chromium; the test fails without it when TINCT_REQUIRE_BROWSER=1 or CI).
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
# Peers measured side by side with tinct in benchmarks (cyclictest).
if [ "${TINCT_SETUP_PEERS:-0}" = 1 ]; then
  command -v cyclictest >/dev/null 2>&1 || need_apt+=(rt-tests)
fi

if [ ${#need_apt[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${need_apt[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need_apt[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install Rust (https://rustup.rs) first" >&2
  exit 1
fi
rustup component list --installed 2>/dev/null | grep -q rustfmt || rustup component add rustfmt clippy

# Fuzzing (scripts/fuzz.sh): cargo-fuzz and the nightly toolchain it builds
# with (sanitizer flags are nightly-only).
if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  echo "setup: installing the nightly toolchain (for cargo-fuzz)"
  rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "setup: installing cargo-fuzz"
  cargo install cargo-fuzz --locked --version '^0.13'
fi

# CI's unused-dependency check (`cargo machete`, .ci/run): reads the
# sources, builds nothing.
if ! cargo machete --version >/dev/null 2>&1; then
  echo "setup: installing cargo-machete"
  cargo install cargo-machete --locked --version '^0.9'
fi

# The Python package's build and test tools, in a project-local venv (.venv,
# never the system's Python): maturin, numpy, pytest, dask[distributed], at
# the versions of crates/tinct-py/requirements-dev.txt. pip returns at once
# when they are already there.
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv for the Python package"
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -r crates/tinct-py/requirements-dev.txt
