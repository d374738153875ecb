//! The task-set file as written, before validation.
//!
//! Every struct rejects unknown keys (`deny_unknown_fields`): a misspelt key
//! is an error, never silently ignored. Durations and sizes are kept as the
//! scalar the user wrote, so validation can say exactly what it found.

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A scalar as written: a string, an integer or a float.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Scalar {
    /// A string, e.g. `"40ms"`.
    Text(String),
    /// An integer, e.g. `40`.
    Int(i64),
    /// A float, e.g. `0.5`.
    Float(f64),
    /// An integer outside the 64-bit signed range, e.g.
    /// `18446744073709551616`: no field takes one, but a refusal shows it
    /// as written (not as a rounded float, nor as a parser's "integer too
    /// large").
    Wide(i128),
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Text(s) => write!(f, "\"{s}\""),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x}"),
            Scalar::Wide(i) => write!(f, "{i}"),
        }
    }
}

struct ScalarVisitor;

impl Visitor<'_> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string such as \"40ms\" or \"18MiB\", or a number")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar::Text(v.to_string()))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
        Ok(i64::try_from(v).map_or(Scalar::Wide(i128::from(v)), Scalar::Int))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Scalar, E> {
        Ok(i64::try_from(v).map_or(Scalar::Wide(v), Scalar::Int))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Scalar, E> {
        // Beyond i128 (no parser tinct uses gives one): the largest i128
        // is as refused as any.
        self.visit_i128(i128::try_from(v).unwrap_or(i128::MAX))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar::Float(v))
    }
}

impl Serialize for Scalar {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Scalar::Text(text) => s.serialize_str(text),
            Scalar::Int(i) => s.serialize_i64(*i),
            Scalar::Float(x) => s.serialize_f64(*x),
            Scalar::Wide(i) => s.serialize_i128(*i),
        }
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

/// `wcet = "10ms"` (cache-insensitive) or `wcet = { 1 = "22.76ms", 8 = "11.94ms" }`.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum RawWcet {
    /// One value for every p.
    Single(Scalar),
    /// C^p listed sparsely by p, in file order; keys as written, so that
    /// `1` and `01` (the same p) can be told apart and refused.
    Table(Vec<(String, Scalar)>),
}

impl Serialize for RawWcet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RawWcet::Single(value) => value.serialize(s),
            RawWcet::Table(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (p, c) in entries {
                    map.serialize_entry(p, c)?;
                }
                map.end()
            }
        }
    }
}

struct WcetVisitor;

impl<'de> Visitor<'de> for WcetVisitor {
    type Value = RawWcet;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a duration such as \"10ms\" or a table { p = \"duration\", ... }")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<RawWcet, E> {
        ScalarVisitor.visit_str(v).map(RawWcet::Single)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawWcet, E> {
        Ok(RawWcet::Single(Scalar::Int(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawWcet, E> {
        ScalarVisitor.visit_u64(v).map(RawWcet::Single)
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<RawWcet, E> {
        ScalarVisitor.visit_i128(v).map(RawWcet::Single)
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<RawWcet, E> {
        ScalarVisitor.visit_u128(v).map(RawWcet::Single)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<RawWcet, E> {
        Ok(RawWcet::Single(Scalar::Float(v)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawWcet, A::Error> {
        let mut table = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Scalar>()? {
            table.push((k, v));
        }
        Ok(RawWcet::Table(table))
    }
}

impl<'de> Deserialize<'de> for RawWcet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(WcetVisitor)
    }
}

/// `partitions = [1, 2, 3]` or `partitions = "1-3,8"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "a list of partition numbers or a range string such as \"1-8,12\""
)]
pub(super) enum RawPartitions {
    /// A list of numbers.
    List(Vec<i64>),
    /// A range string.
    Text(String),
}

/// The whole file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTaskSet {
    /// `[platform]`.
    pub platform: RawPlatform,
    /// `[[task]]`.
    #[serde(default, alias = "tasks")]
    pub task: Vec<RawTask>,
    /// `[[resource]]`.
    #[serde(default, alias = "resources", skip_serializing_if = "Vec::is_empty")]
    pub resource: Vec<RawResource>,
    /// `[[edge]]`.
    #[serde(default, alias = "edges", skip_serializing_if = "Vec::is_empty")]
    pub edge: Vec<RawEdge>,
}

/// `[[resource]]`: `name = "bus"`, `protocol = "pcp" | "pip" | "none"`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawResource {
    /// Unique name.
    pub name: String,
    /// pcp | pip | none.
    pub protocol: String,
}

/// `[[edge]]`: `from = "producer"`, `to = "consumer"`, `buffer = "4KiB"`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEdge {
    /// The producer's name.
    pub from: String,
    /// The consumer's name.
    pub to: String,
    /// Bytes handed over per job.
    pub buffer: Scalar,
}

/// `{ resource = "bus", length = "200us" }`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSection {
    /// The resource's name.
    pub resource: String,
    /// Worst-case length.
    pub length: Scalar,
}

/// `overheads = { context_switch = "5us", release_latency = "20us", tick = "1us", tick_period = "4ms" }`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOverheads {
    /// δ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_switch: Option<Scalar>,
    /// Release latency, added to every J_i.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub release_latency: Option<Scalar>,
    /// One timer interrupt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tick: Option<Scalar>,
    /// The scheduler tick's period.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tick_period: Option<Scalar>,
}

/// `[platform]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPlatform {
    /// N_C.
    pub cores: Scalar,
    /// N_P.
    pub partitions: Scalar,
    /// M_total.
    pub memory: Scalar,
    /// Δ; may be left to a calibration (see `LoadOptions`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refill: Option<Scalar>,
    /// Physical address bits of the page colour, overriding the machine's
    /// LLC rule (sliced caches: `tinct doctor` suggests them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color_bits: Option<Vec<Scalar>>,
    /// A DRAM mapping file (`tinct bench dram-map`), relative to this file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram_map: Option<String>,
    /// The overheads the analysis charges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overheads: Option<RawOverheads>,
    /// Groups of cores sharing their lowest cache level.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_domains: Option<Vec<Vec<i64>>>,
}

/// `[[task]]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTask {
    /// Unique name.
    pub name: String,
    /// T_i (a data-triggered task may leave it to its producers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<Scalar>,
    /// D_i.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<Scalar>,
    /// M_i.
    pub memory: Scalar,
    /// C_i^p.
    pub wcet: RawWcet,
    /// 1 is the highest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<Scalar>,
    /// From 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub core: Option<Scalar>,
    /// S(i).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partitions: Option<RawPartitions>,
    /// Job body for `tinct run`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<RawBody>,
    /// Critical sections of one job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub critical_sections: Option<Vec<RawSection>>,
    /// J_i.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter: Option<Scalar>,
    /// Explicit B_i.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocking: Option<Scalar>,
    /// "timer" (default) or "data".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// "fifo" (default) or "deadline".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// Q of a `deadline` task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Scalar>,
}

/// `body = { kernel = "chase", working_set = "4MiB", target = "2ms" }`, or
/// a program: `body = { command = ["./filter", "-q"], protocol = "lines" }`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBody {
    /// chase | read | write | rmw | compute | mixed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// A program and its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// How a program's jobs are asked for: lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// A program's anonymous mmap coloured too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mmap: Option<bool>,
    /// Bytes touched per job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub working_set: Option<Scalar>,
    /// Calibrated target execution time per job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<Scalar>,
    /// Fixed work per job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iterations: Option<Scalar>,
    /// Memory share of a mixed job, percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_percent: Option<Scalar>,
}
