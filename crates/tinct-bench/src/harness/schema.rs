//! A small schema check for bench JSON output, used by tests.
//!
//! A schema is a list of required fields, each a path and a [`Kind`]. Paths
//! are dot-separated keys; `[]` after a key means "every element of this
//! array" (and the array must not be empty): `levels[].median_ns`.

use serde_json::Value;

/// The JSON type a field must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An integer that fits `u64` (counts, ns, bytes).
    Unsigned,
    /// Any integer.
    Integer,
    /// Any number.
    Number,
    /// A string.
    String,
    /// `true` or `false`.
    Bool,
    /// An array (possibly empty).
    Array,
    /// An object.
    Object,
    /// A number or `null` (an optional measurement).
    NumberOrNull,
    /// A string or `null`.
    StringOrNull,
}

impl Kind {
    fn accepts(self, value: &Value) -> bool {
        match self {
            Kind::Unsigned => value.is_u64(),
            Kind::Integer => value.is_i64() || value.is_u64(),
            Kind::Number => value.is_number(),
            Kind::String => value.is_string(),
            Kind::Bool => value.is_boolean(),
            Kind::Array => value.is_array(),
            Kind::Object => value.is_object(),
            Kind::NumberOrNull => value.is_number() || value.is_null(),
            Kind::StringOrNull => value.is_string() || value.is_null(),
        }
    }
}

/// Checks every `(path, kind)` of `schema` against `value`; returns every
/// violation (path, what was expected, what was found).
pub fn check(value: &Value, schema: &[(&str, Kind)]) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    for &(path, kind) in schema {
        let segments: Vec<&str> = path.split('.').collect();
        check_path(value, &segments, kind, String::new(), &mut errors);
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The fields every bench's result must have (machine description, options).
pub const COMMON: &[(&str, Kind)] = &[
    ("bench", Kind::String),
    ("quick", Kind::Bool),
    ("reps", Kind::Unsigned),
    ("seed", Kind::Unsigned),
    ("cpus", Kind::Array),
    ("machine", Kind::Object),
    ("machine.online_cpus", Kind::Array),
    ("machine.caches", Kind::Array),
    ("machine.page_bytes", Kind::Unsigned),
    ("machine.tinct_version", Kind::String),
];

/// The fields of a [`Stats`](super::Stats) object, to be prefixed with its path.
pub const STATS_FIELDS: &[(&str, Kind)] = &[
    ("count", Kind::Unsigned),
    ("min_ns", Kind::Unsigned),
    ("median_ns", Kind::Unsigned),
    ("p99_ns", Kind::Unsigned),
    ("max_ns", Kind::Unsigned),
    ("mean_ns", Kind::Number),
    ("stddev_ns", Kind::Number),
];

/// Checks that the [`Stats`](super::Stats) at `prefix` are present and ordered
/// (min <= median <= p99 <= max, count >= 1).
pub fn check_stats(value: &Value, prefix: &str) -> Result<(), Vec<String>> {
    let schema: Vec<(String, Kind)> = STATS_FIELDS
        .iter()
        .map(|(f, k)| (format!("{prefix}.{f}"), *k))
        .collect();
    let borrowed: Vec<(&str, Kind)> = schema.iter().map(|(p, k)| (p.as_str(), *k)).collect();
    check(value, &borrowed)?;
    let mut errors = Vec::new();
    for (path, stats) in select(value, prefix) {
        let get = |f: &str| stats[f].as_u64().unwrap_or(0);
        let ordered = get("min_ns") <= get("median_ns")
            && get("median_ns") <= get("p99_ns")
            && get("p99_ns") <= get("max_ns")
            && get("count") >= 1;
        if !ordered {
            errors.push(format!(
                "{path}: expected count >= 1 and min <= median <= p99 <= max, found {stats}"
            ));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Every value selected by `path` (same syntax as the schema), with its concrete path.
pub fn select<'a>(value: &'a Value, path: &str) -> Vec<(String, &'a Value)> {
    let mut found = vec![(String::new(), value)];
    for segment in path.split('.') {
        let (key, each) = match segment.strip_suffix("[]") {
            Some(key) => (key, true),
            None => (segment, false),
        };
        let mut next = Vec::new();
        for (at, v) in found {
            let Some(child) = v.get(key) else { continue };
            let here = join(&at, key);
            if each {
                if let Some(items) = child.as_array() {
                    next.extend(
                        items
                            .iter()
                            .enumerate()
                            .map(|(i, item)| (format!("{here}[{i}]"), item)),
                    );
                }
            } else {
                next.push((here, child));
            }
        }
        found = next;
    }
    found
}

fn check_path(value: &Value, segments: &[&str], kind: Kind, at: String, errors: &mut Vec<String>) {
    let Some((segment, rest)) = segments.split_first() else {
        if !kind.accepts(value) {
            errors.push(format!("{at}: expected {kind:?}, found {}", short(value)));
        }
        return;
    };
    let (key, each) = match segment.strip_suffix("[]") {
        Some(key) => (key, true),
        None => (*segment, false),
    };
    let here = join(&at, key);
    let Some(child) = value.get(key) else {
        errors.push(format!("{here}: required field is missing"));
        return;
    };
    if each {
        match child.as_array() {
            Some(items) if !items.is_empty() => {
                for (i, item) in items.iter().enumerate() {
                    check_path(item, rest, kind, format!("{here}[{i}]"), errors);
                }
            }
            Some(_) => errors.push(format!("{here}: expected a non-empty array, found []")),
            None => errors.push(format!("{here}: expected an array, found {}", short(child))),
        }
    } else {
        check_path(child, rest, kind, here, errors);
    }
}

fn join(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_string()
    } else {
        format!("{at}.{key}")
    }
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.len() > 60 {
        format!("{}...", &text[..57])
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepts_a_matching_document() {
        let doc = json!({"a": 1, "levels": [{"n": 1.5, "s": "x"}, {"n": 2, "s": "y"}]});
        check(
            &doc,
            &[
                ("a", Kind::Unsigned),
                ("levels[].n", Kind::Number),
                ("levels[].s", Kind::String),
            ],
        )
        .unwrap();
    }

    #[test]
    fn reports_missing_wrong_type_and_empty_arrays() {
        let doc = json!({"a": -1, "levels": [{"n": "x"}], "empty": []});
        let errors = check(
            &doc,
            &[
                ("a", Kind::Unsigned),
                ("b", Kind::String),
                ("levels[].n", Kind::Number),
                ("empty[].x", Kind::Number),
            ],
        )
        .unwrap_err();
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert!(errors[0].starts_with("a: expected Unsigned, found -1"));
        assert!(errors[1].contains("b: required field is missing"));
        assert!(errors[2].starts_with("levels[0].n: expected Number"));
        assert!(errors[3].contains("non-empty array"));
    }

    #[test]
    fn stats_must_be_ordered() {
        let good = json!({"s": {"count": 3, "min_ns": 1, "median_ns": 2, "p99_ns": 3, "max_ns": 3, "mean_ns": 2, "stddev_ns": 1}});
        check_stats(&good, "s").unwrap();
        let bad = json!({"r": [{"s": {"count": 3, "min_ns": 5, "median_ns": 2, "p99_ns": 3, "max_ns": 3, "mean_ns": 2, "stddev_ns": 1}}]});
        let errors = check_stats(&bad, "r[].s").unwrap_err();
        assert!(
            errors[0].starts_with("r[0].s: expected count >= 1"),
            "{errors:?}"
        );
    }
}
