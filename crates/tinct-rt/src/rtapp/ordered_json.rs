//! A JSON value whose objects keep their keys in file order and keep
//! duplicate keys: rt-app runs a task's events in the order they are
//! written, so order is meaning. (`serde_json::Value` sorts keys unless the
//! workspace-wide `preserve_order` feature is on, which would change every
//! other crate's JSON.)

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// A JSON value with ordered objects.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum OrderedValue {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A number that is not an integer.
    Float(f64),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<OrderedValue>),
    /// An object, keys in file order.
    Object(Vec<(String, OrderedValue)>),
}

impl OrderedValue {
    /// What kind of value this is, for messages.
    pub(super) fn kind(&self) -> String {
        match self {
            OrderedValue::Null => "null".into(),
            OrderedValue::Bool(b) => format!("{b}"),
            OrderedValue::Int(i) => format!("the integer {i}"),
            OrderedValue::Float(f) => format!("the number {f}"),
            OrderedValue::String(s) => format!("the string \"{s}\""),
            OrderedValue::Array(_) => "an array".into(),
            OrderedValue::Object(_) => "an object".into(),
        }
    }
}

/// Why comments could not be stripped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CommentError {
    /// A `/*` without its `*/`, opened on `line` (1-based).
    Unclosed {
        /// The line of the `/*`.
        line: usize,
    },
    /// A `/` outside a string followed by neither `/` nor `*`.
    Stray {
        /// The line of the `/`.
        line: usize,
    },
}

/// `text` with its comments (`// …`, `# …` to the end of the line, `/* …
/// */`) replaced by spaces, outside strings, as json-c reads them. Every
/// newline is kept (in a block comment too), so a line of the result is
/// the line of the file: errors found later name the right line.
pub(crate) fn strip_comments(text: &str) -> Result<String, CommentError> {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut line = 1;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => line += 1,
            b'"' => i = string_end(bytes, i, &mut line),
            b'/' if bytes.get(i + 1) == Some(&b'/') => i = blank_line_comment(&mut out, i),
            b'#' => i = blank_line_comment(&mut out, i),
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let opened = line;
                i = blank_block_comment(&mut out, i, &mut line)
                    .ok_or(CommentError::Unclosed { line: opened })?;
            }
            b'/' => return Err(CommentError::Stray { line }),
            _ => {}
        }
        i += 1;
    }
    // Only whole comments became ASCII spaces (newlines kept): still UTF-8.
    Ok(String::from_utf8(out).unwrap_or_else(|_| text.to_string()))
}

/// The index of the `"` closing the string opened at `start` (the last
/// byte when it is not closed: the JSON parser reports that), counting
/// the newlines passed.
fn string_end(bytes: &[u8], start: usize, line: &mut usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'"' => return i,
            b'\n' => *line += 1,
            _ => {}
        }
        i += 1;
    }
    bytes.len()
}

/// Blanks the line comment starting at `start`; returns the index of its
/// last byte (the newline, kept, is handled by the caller's next step).
fn blank_line_comment(out: &mut [u8], start: usize) -> usize {
    let mut i = start;
    while i < out.len() && out[i] != b'\n' {
        out[i] = b' ';
        i += 1;
    }
    i - 1
}

/// Blanks the block comment starting at `start` but its newlines; returns
/// the index of its closing `/`, or `None` when it is not closed.
fn blank_block_comment(out: &mut [u8], start: usize, line: &mut usize) -> Option<usize> {
    let mut i = start + 2;
    out[start] = b' ';
    out[start + 1] = b' ';
    while i < out.len() {
        if out[i] == b'*' && out.get(i + 1) == Some(&b'/') {
            out[i] = b' ';
            out[i + 1] = b' ';
            return Some(i + 1);
        }
        if out[i] == b'\n' {
            *line += 1;
        } else {
            out[i] = b' ';
        }
        i += 1;
    }
    None
}

/// `text` with every trailing comma (a `,` followed, past whitespace, by
/// `}` or `]`) replaced by a space, outside strings: json-c, rt-app's
/// parser, accepts them; serde_json does not. Lines and columns stay put.
/// Comments must be stripped first.
pub(crate) fn strip_trailing_commas(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b',' => {
                let next = bytes[i + 1..].iter().find(|c| !c.is_ascii_whitespace());
                if matches!(next, Some(b'}' | b']')) {
                    out[i] = b' ';
                }
            }
            _ => {}
        }
    }
    // Only ASCII commas were replaced by ASCII spaces: still UTF-8.
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

struct OrderedVisitor;

impl<'de> Visitor<'de> for OrderedVisitor {
    type Value = OrderedValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<OrderedValue, E> {
        Ok(OrderedValue::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<OrderedValue, E> {
        Ok(OrderedValue::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<OrderedValue, E> {
        Ok(OrderedValue::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<OrderedValue, E> {
        Ok(i64::try_from(v).map_or(OrderedValue::Float(v as f64), OrderedValue::Int))
    }
    fn visit_f64<E>(self, v: f64) -> Result<OrderedValue, E> {
        Ok(OrderedValue::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<OrderedValue, E> {
        Ok(OrderedValue::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<OrderedValue, E> {
        Ok(OrderedValue::String(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<OrderedValue, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(OrderedValue::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OrderedValue, A::Error> {
        let mut entries = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, OrderedValue>()? {
            entries.push((key, value));
        }
        Ok(OrderedValue::Object(entries))
    }
}

impl<'de> Deserialize<'de> for OrderedValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<OrderedValue, D::Error> {
        deserializer.deserialize_any(OrderedVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_commas_go_and_commas_in_strings_stay() {
        let text = "{ \"a\": [1, 2, ],\n \"b,}\": { \"c\": 1,\n },\n}";
        let stripped = strip_trailing_commas(text);
        assert_eq!(stripped.len(), text.len());
        assert_eq!(stripped.lines().count(), text.lines().count());
        let v: OrderedValue = serde_json::from_str(&stripped).unwrap();
        let OrderedValue::Object(entries) = v else {
            panic!("not an object")
        };
        assert_eq!(entries[1].0, "b,}", "a comma inside a string is kept");
        assert!(serde_json::from_str::<OrderedValue>("[1,,]").is_err());
        assert!(
            serde_json::from_str::<OrderedValue>(&strip_trailing_commas("[1,,]")).is_err(),
            "only a trailing comma goes, not a missing value"
        );
    }

    #[test]
    fn objects_keep_file_order_and_duplicates() {
        let v: OrderedValue =
            serde_json::from_str(r#"{"z": 1, "a": [true, null, 1.5], "z": "x"}"#).unwrap();
        let OrderedValue::Object(entries) = v else {
            panic!("not an object")
        };
        let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["z", "a", "z"]);
        assert_eq!(
            entries[1].1,
            OrderedValue::Array(vec![
                OrderedValue::Bool(true),
                OrderedValue::Null,
                OrderedValue::Float(1.5)
            ])
        );
        assert_eq!(entries[2].1, OrderedValue::String("x".into()));
    }
}
