#!/usr/bin/env bash
# Fuzzes tinct's readers with cargo-fuzz (libFuzzer): each target for
# SECONDS (default 60), all targets unless some are named, one after the
# other, and prints the executions per target.
#
#   scripts/fuzz.sh                 # every target, 60 s each
#   scripts/fuzz.sh 300 units       # one target, 5 minutes
#
# Targets and their checks: fuzz/src/lib.rs. The committed seeds
# (fuzz/seeds/TARGET, read only) start each run; what the fuzzer finds
# grows fuzz/corpus/TARGET (not committed) and is reused by the next run. A
# crash stops its target, leaves the input in fuzz/artifacts/TARGET and
# makes this script exit 1 after the other targets ran; reproduce with
#   cargo +nightly fuzz run --features libfuzzer TARGET fuzz/artifacts/TARGET/crash-...
# Needs the nightly toolchain and cargo-fuzz (scripts/setup.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]: SECONDS must be a whole number > 0, found '$seconds'" >&2
  exit 2
fi
shift $(($# > 0 ? 1 : 0))

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz: needs the nightly toolchain and cargo-fuzz: run scripts/setup.sh" >&2
  exit 2
fi

# The same options for the build and every run, so that `fuzz run` finds
# the targets built and builds nothing. Release with debug assertions and
# overflow checks (cargo-fuzz's defaults): a wrapped sum is a crash.
fuzz=(cargo +nightly fuzz)
build_options=(--features libfuzzer)

all_targets=$("${fuzz[@]}" list)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets <<<"$all_targets"
for target in "${targets[@]}"; do
  if ! grep -qx -- "$target" <<<"$all_targets"; then
    echo "fuzz: no target '$target': expected one of:" $all_targets >&2
    exit 2
  fi
done

# Thin LTO (the workspace's release profile) would make every build of
# the seven binaries minutes longer and buys the fuzzer nothing.
export CARGO_PROFILE_RELEASE_LTO=false
echo "== building the fuzz targets once"
"${fuzz[@]}" build "${build_options[@]}"

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
summary=()
failed=0
for target in "${targets[@]}"; do
  corpus=fuzz/corpus/$target
  mkdir -p "$corpus" "fuzz/artifacts/$target"
  dict=()
  [ -f "fuzz/dicts/$target.dict" ] && dict=(-dict="fuzz/dicts/$target.dict")
  echo "== $target: ${seconds} s"
  log=$logs/$target.log
  # -timeout: one input may take 10 s (the host stalls for tens of ms; a
  # hang is a defect). -rss_limit_mb: an input that makes a reader
  # allocate GBs is a defect too. The corpus comes first: libFuzzer adds
  # what it finds there, never to the seeds.
  status=ok
  started=$SECONDS
  if ! "${fuzz[@]}" run "${build_options[@]}" "$target" "$corpus" "fuzz/seeds/$target" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    "${dict[@]}" >"$log" 2>&1; then
    status=FAILED
    failed=1
    grep -E "^==[0-9]+==|panicked at|Test unit written to|^SUMMARY" "$log" | head -n 20 >&2 || true
    # The input itself, so that a CI log is enough to reproduce it.
    artifact=$(sed -n 's/.*Test unit written to //p' "$log" | tail -n 1)
    [ -n "$artifact" ] && [ -f "$artifact" ] && od -A d -c "$artifact" | head -n 40 >&2
  fi
  ran=$((SECONDS - started))
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  per_second=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  corpus_size=$(find "$corpus" -type f | wc -l)
  summary+=("$(printf '%-18s %8s %12s %10s %8s  %s' "$target" "$ran" \
    "${executions:-?}" "${per_second:-?}" "$corpus_size" "$status")")
done

echo
printf '%-18s %8s %12s %10s %8s  %s\n' target seconds executions "exec/s" corpus status
printf '%s\n' "${summary[@]}"
exit "$failed"
