//! The page-colour rule against a matrix of real machines, and what the
//! doctor says of each.
//!
//! Every tree under tinct-sys' `tests/fixtures/machines/<name>/` is a real
//! machine,
//! written from public data by `machines/make-machines.sh`; its
//! `SOURCE.md` says where each number comes from, the true colour bits as
//! far as public evidence goes, and what tinct should derive. One row per
//! machine below checks, from the tree alone (never the live machine):
//!
//! 1. **the safety rule**: the bits tinct derives are a subset of the true
//!    colour bits (fewer colours is safe, more is not), or the derivation is
//!    refused where the truth is unknown;
//! 2. the exact result (bits and rule, or a refusal);
//! 3. the doctor's colour finding;
//! 4. that the row and its `SOURCE.md` agree.

use std::ops::Range;
use std::path::PathBuf;
use tinct_doctor::{Level, diagnose, subject};
use tinct_sys::SysRoot;
use tinct_sys::cache_slices::machine_color_geometry;
use tinct_sys::topology::ColorRule;

/// What public evidence says the colour bits are.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Truth {
    /// These physical address bits are colour bits (proven: below the set
    /// index of one slice, or of the whole unsliced cache).
    Bits(Range<u32>),
    /// Not known: tinct must refuse.
    Unknown,
    /// A virtual machine's guest-physical pages: no truth can be checked.
    /// tinct keeps the way-size rule when its way is a power of two (issue
    /// 25's brief) and must say it is unverified.
    Unverifiable,
}

/// What tinct derives.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Expect {
    /// These bits under this rule.
    Bits(Range<u32>, ColorRule),
    /// No bits: an error, or colours whose bits are unknown.
    Refused,
}

/// One machine.
struct Row {
    /// The tree, relative to `tests/fixtures`.
    tree: &'static str,
    /// Its `SOURCE.md`, relative to `tests/fixtures`.
    source: &'static str,
    truth: Truth,
    expect: Expect,
    /// The doctor's colour finding: its level and words it must contain.
    doctor: (Level, &'static [&'static str]),
}

const fn sliced(bits: Range<u32>, slices: u64) -> Expect {
    Expect::Bits(bits, ColorRule::Sliced { slices })
}

fn rows() -> Vec<Row> {
    vec![
        Row {
            tree: "machines/i7-2600-snb",
            source: "machines/i7-2600-snb/SOURCE.md",
            truth: Truth::Bits(12..17),
            expect: sliced(12..17, 4),
            doctor: (
                Level::Ok,
                &[
                    "32 colors",
                    "sliced-cache rule, 4 slices",
                    "uncore_cbox_0 .. uncore_cbox_3",
                    "bits 12-16",
                ],
            ),
        },
        Row {
            tree: "machines/xeon-gold-6130-skx",
            source: "machines/xeon-gold-6130-skx/SOURCE.md",
            truth: Truth::Bits(12..17),
            expect: sliced(12..17, 16),
            doctor: (
                Level::Ok,
                &[
                    "32 colors",
                    "sliced-cache rule, 16 slices",
                    "uncore_cha_0 .. uncore_cha_15",
                    "bits 12-16",
                ],
            ),
        },
        Row {
            tree: "machines/xeon-gold-6130-skx-nopmu",
            source: "machines/xeon-gold-6130-skx-nopmu/SOURCE.md",
            truth: Truth::Bits(12..17),
            expect: sliced(12..17, 16),
            doctor: (
                Level::Ok,
                &[
                    "32 colors",
                    "sliced-cache rule, 16 slices",
                    "1.375 MiB 11-way",
                    "bits 12-16",
                ],
            ),
        },
        Row {
            tree: "machines/xeon-gold-6256-clx-nopmu",
            source: "machines/xeon-gold-6256-clx-nopmu/SOURCE.md",
            truth: Truth::Bits(12..17),
            expect: sliced(12..17, 24),
            doctor: (
                Level::Ok,
                &[
                    "32 colors",
                    "sliced-cache rule, 24 slices",
                    "12 physical cores",
                    "bits 12-16",
                ],
            ),
        },
        Row {
            tree: "machines/i9-12900k-adl",
            source: "machines/i9-12900k-adl/SOURCE.md",
            truth: Truth::Unknown,
            expect: Expect::Refused,
            doctor: (
                Level::Warning,
                &[
                    "colours cannot be derived",
                    "10 uncore_cbox PMUs",
                    "model 0x97",
                    "give them explicitly",
                ],
            ),
        },
        Row {
            tree: "machines/epyc-7313-zen3",
            source: "machines/epyc-7313-zen3/SOURCE.md",
            truth: Truth::Bits(12..18),
            expect: sliced(12..18, 8),
            doctor: (
                Level::Ok,
                &[
                    "64 colors",
                    "sliced-cache rule, 8 slices",
                    "4 physical cores",
                    "bits 12-17",
                ],
            ),
        },
        Row {
            tree: "machines/ryzen-7950x-zen4",
            source: "machines/ryzen-7950x-zen4/SOURCE.md",
            truth: Truth::Bits(12..18),
            expect: sliced(12..18, 8),
            doctor: (
                Level::Ok,
                &[
                    "64 colors",
                    "sliced-cache rule, 8 slices",
                    "8 physical cores",
                    "bits 12-17",
                ],
            ),
        },
        Row {
            tree: "machines/ryzen-1700-zen1",
            source: "machines/ryzen-1700-zen1/SOURCE.md",
            truth: Truth::Bits(12..17),
            expect: sliced(12..17, 4),
            doctor: (
                Level::Ok,
                &[
                    "32 colors",
                    "sliced-cache rule, 4 slices",
                    "4-core complex",
                    "bits 12-16",
                ],
            ),
        },
        Row {
            tree: "machines/rpi4-cortex-a72",
            source: "machines/rpi4-cortex-a72/SOURCE.md",
            truth: Truth::Bits(12..16),
            expect: Expect::Bits(12..16, ColorRule::WaySize),
            doctor: (
                Level::Ok,
                &[
                    "L2: 16 colors",
                    "way-size rule",
                    "unknown vendor",
                    "bits 12-15",
                ],
            ),
        },
        Row {
            tree: "machines/rpi3-cortex-a53-nocache",
            source: "machines/rpi3-cortex-a53-nocache/SOURCE.md",
            truth: Truth::Bits(12..15),
            expect: Expect::Refused,
            doctor: (Level::Warning, &["no last-level cache found"]),
        },
        Row {
            tree: "machines/kvm-xeon-emr",
            source: "machines/kvm-xeon-emr/SOURCE.md",
            truth: Truth::Unknown,
            expect: Expect::Refused,
            doctor: (
                Level::Warning,
                &["3840 colours", "virtual machine", "not known"],
            ),
        },
        Row {
            tree: "kvm-epyc",
            source: "machines/kvm-epyc/SOURCE.md",
            truth: Truth::Unverifiable,
            expect: Expect::Bits(12..18, ColorRule::Sliced { slices: 8 }),
            doctor: (
                Level::Ok,
                &[
                    "64 colors",
                    "sliced-cache rule, 8 slices",
                    "virtual machine",
                    "unverifiable",
                    "bits 12-17",
                ],
            ),
        },
        Row {
            tree: "machines/i7-6700k-skl",
            source: "machines/i7-6700k-skl/SOURCE.md",
            truth: Truth::Bits(12..16),
            expect: sliced(12..16, 8),
            doctor: (
                Level::Ok,
                &[
                    "16 colors",
                    "sliced-cache rule, 8 slices",
                    "4 CBo boxes, 2 slice(s) each",
                    "bits 12-15",
                ],
            ),
        },
        Row {
            tree: "machines/i5-1035g1-icl",
            source: "machines/i5-1035g1-icl/SOURCE.md",
            truth: Truth::Bits(12..16),
            expect: sliced(12..16, 8),
            doctor: (
                Level::Ok,
                &[
                    "16 colors",
                    "sliced-cache rule, 8 slices",
                    "uops.info",
                    "bits 12-15",
                ],
            ),
        },
        Row {
            tree: "machines/xeon-e5-2637v3-hsx",
            source: "machines/xeon-e5-2637v3-hsx/SOURCE.md",
            truth: Truth::Bits(12..17),
            expect: sliced(12..17, 6),
            doctor: (
                Level::Ok,
                &[
                    "32 colors",
                    "sliced-cache rule, 6 slices",
                    "2.5 MiB 20-way",
                    "bits 12-16",
                ],
            ),
        },
        Row {
            tree: "machines/n100-adln",
            source: "machines/n100-adln/SOURCE.md",
            truth: Truth::Unknown,
            expect: Expect::Refused,
            doctor: (
                Level::Warning,
                &[
                    "colours cannot be derived",
                    "model 0xbe",
                    "publishes no L3 slice count",
                ],
            ),
        },
    ]
}

/// tinct-sys' fixture trees (the readers' tests share them).
fn fixtures() -> PathBuf {
    tinct_sys::testing::fixture_path("")
}

/// The bits tinct derives for `tree` (`None`: refused), and the geometry's
/// reason or the refusal.
fn derived(tree: &str) -> (Option<Range<u32>>, Option<ColorRule>, String) {
    match machine_color_geometry(&SysRoot::at(fixtures().join(tree)), 4096) {
        Ok(geometry) => match geometry.colors.color_bits() {
            Ok(bits) => (Some(bits), Some(geometry.rule), geometry.reason),
            Err(e) => (
                None,
                Some(geometry.rule),
                format!("{e}: {}", geometry.reason),
            ),
        },
        Err(e) => (None, None, e),
    }
}

/// `derived` ⊆ `truth`: every derived colour bit is a true colour bit.
fn is_safe(derived: &Range<u32>, truth: &Range<u32>) -> bool {
    derived.is_empty() || (truth.start <= derived.start && derived.end <= truth.end)
}

#[test]
fn the_safety_check_itself_catches_one_bit_too_many() {
    assert!(is_safe(&(12..17), &(12..17)));
    assert!(is_safe(&(12..16), &(12..17)), "fewer colours is safe");
    assert!(!is_safe(&(12..18), &(12..17)), "one bit too many");
    assert!(!is_safe(&(13..17), &(12..16)));
    assert!(is_safe(&(12..12), &(12..13)), "one colour");
}

#[test]
fn every_machine_derives_only_true_colour_bits_or_refuses() {
    let mut unsafe_rows = Vec::new();
    for row in rows() {
        let (bits, _, why) = derived(row.tree);
        let problem = match (&row.truth, &bits) {
            (Truth::Bits(truth), Some(bits)) if !is_safe(bits, truth) => Some(format!(
                "derived bits {bits:?} are not all colour bits (true: {truth:?})"
            )),
            (Truth::Unknown, Some(bits)) => {
                Some(format!("the truth is unknown, yet tinct derives {bits:?}"))
            }
            (Truth::Unverifiable, _)
                if !(why.contains("virtual machine") && why.contains("unverifi")) =>
            {
                Some("a guest's bits must be said to be unverified".to_string())
            }
            _ => None,
        };
        if let Some(problem) = problem {
            unsafe_rows.push(format!("{}: {problem}: {why}", row.tree));
        }
    }
    assert!(unsafe_rows.is_empty(), "{}", unsafe_rows.join("\n"));
}

#[test]
fn every_machine_derives_exactly_what_its_source_says() {
    let mut wrong = Vec::new();
    for row in rows() {
        let (bits, rule, why) = derived(row.tree);
        let ok = match &row.expect {
            Expect::Bits(expected, expected_rule) => {
                bits.as_ref() == Some(expected) && rule.as_ref() == Some(expected_rule)
            }
            Expect::Refused => bits.is_none(),
        };
        if !ok {
            wrong.push(format!(
                "{}: expected {:?}, derived {bits:?} ({rule:?}): {why}",
                row.tree, row.expect
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_doctor_says_so_for_every_machine() {
    for row in rows() {
        let report = diagnose(&SysRoot::at(fixtures().join(row.tree)));
        let finding = report
            .finding(subject::COLORS)
            .unwrap_or_else(|| panic!("{}: no colour finding", row.tree));
        let (level, words) = row.doctor;
        assert_eq!(finding.level, level, "{}: {}", row.tree, finding.found);
        for word in words {
            assert!(
                finding.found.contains(word),
                "{}: {word:?} missing from {}",
                row.tree,
                finding.found
            );
        }
        // The report's LLC colours are the rule's, bits and all.
        let (bits, _, _) = derived(row.tree);
        let reported = report
            .llc_colors
            .as_ref()
            .and_then(|g| g.colors.color_bits().ok());
        assert_eq!(reported, bits, "{}", row.tree);
    }
}

/// `True colour bits: 12-16` / `unknown` / `unverifiable` and
/// `Expected: bits 12-16 (...)` / `Expected: refused` in a SOURCE.md.
fn source_lines(text: &str) -> (String, String) {
    let line = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("no line starting {key:?}"))
            .trim()
            .to_string()
    };
    (line("True colour bits:"), line("Expected:"))
}

fn bits_text(bits: &Range<u32>) -> String {
    format!("{}-{}", bits.start, bits.end - 1)
}

#[test]
fn every_row_agrees_with_its_source_and_every_tree_has_a_row() {
    let rows = rows();
    for row in &rows {
        let path = fixtures().join(row.source);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let (truth, expected) = source_lines(&text);
        let want_truth = match &row.truth {
            Truth::Bits(bits) => bits_text(bits),
            Truth::Unknown => "unknown".into(),
            Truth::Unverifiable => "unverifiable".into(),
        };
        assert!(
            truth.starts_with(&want_truth),
            "{}: says {truth:?}, the row {want_truth:?}",
            row.source
        );
        let want_expected = match &row.expect {
            Expect::Bits(bits, _) => format!("bits {}", bits_text(bits)),
            Expect::Refused => "refused".into(),
        };
        assert!(
            expected.starts_with(&want_expected),
            "{}: says {expected:?}, the row {want_expected:?}",
            row.source
        );
        assert!(
            text.contains("| fact | in the tree | source |"),
            "{}: no table of facts and their sources",
            row.source
        );
    }
    // Every machine directory is a row (a new tree cannot go untested).
    let mut dirs: Vec<String> = std::fs::read_dir(fixtures().join("machines"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| format!("machines/{}/SOURCE.md", e.file_name().to_string_lossy()))
        .collect();
    dirs.sort();
    let mut sources: Vec<String> = rows.iter().map(|r| r.source.to_string()).collect();
    sources.sort();
    assert_eq!(dirs, sources);
    assert!(rows.len() >= 10, "the matrix needs at least ten machines");
}
