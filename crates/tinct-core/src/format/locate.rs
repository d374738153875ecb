//! Where each key of a task-set file stands, so that an error found after
//! parsing (a deadline above its period, say) can still name its line.
//!
//! The index maps a path such as `task.2.deadline` to the byte offset of the
//! key. TOML files are indexed from `toml`'s spanned tables; JSON files by a
//! small scanner over text that `serde_json` has already accepted.

use std::collections::HashMap;

/// One step of a path: a table key or an array index.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Seg {
    /// A key of a table / object.
    Key(String),
    /// An element of an array.
    Index(usize),
}

/// Byte offsets of keys and array elements, and the line starts of the text.
#[derive(Debug, Default)]
pub struct SourceIndex {
    offsets: HashMap<Vec<Seg>, usize>,
    line_starts: Vec<usize>,
    /// JSON numbers that the parser reads as floats, as written (an integer
    /// beyond 2^64 − 1 would otherwise be shown rounded, e.g.
    /// 18446744073709551616 as 18446744073709552000).
    literals: HashMap<Vec<Seg>, String>,
}

impl SourceIndex {
    fn new(text: &str) -> SourceIndex {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        SourceIndex {
            offsets: HashMap::new(),
            line_starts,
            literals: HashMap::new(),
        }
    }

    /// The number at `path` as the file writes it, where the parser kept
    /// only a float (JSON: a fraction, an exponent, or an integer beyond
    /// 64 bits); `None` elsewhere.
    pub fn written(&self, path: &[Seg]) -> Option<&str> {
        self.literals.get(path).map(String::as_str)
    }

    /// The 1-based line of a byte offset.
    pub fn line_of_offset(&self, offset: usize) -> usize {
        self.line_starts.partition_point(|&start| start <= offset)
    }

    /// The line of the deepest indexed prefix of `path` (the field itself if
    /// present, else its table, else the file's first line).
    pub fn line_of(&self, path: &[Seg]) -> usize {
        (0..=path.len())
            .rev()
            .find_map(|n| self.offsets.get(&path[..n]))
            .map_or(1, |&offset| self.line_of_offset(offset))
    }

    /// Indexes a TOML document. Returns an empty index if it does not parse
    /// (the parse error is reported separately, with its own position).
    pub fn toml(text: &str) -> SourceIndex {
        let mut index = SourceIndex::new(text);
        if let Ok(root) = toml::de::DeTable::parse(text) {
            index.walk_toml_table(&mut Vec::new(), root.get_ref());
        }
        index
    }

    fn walk_toml_table(&mut self, path: &mut Vec<Seg>, table: &toml::de::DeTable<'_>) {
        for (key, value) in table {
            path.push(Seg::Key(key.get_ref().to_string()));
            self.offsets.entry(path.clone()).or_insert(key.span().start);
            self.walk_toml_value(path, value);
            path.pop();
        }
    }

    fn walk_toml_value(
        &mut self,
        path: &mut Vec<Seg>,
        value: &toml::Spanned<toml::de::DeValue<'_>>,
    ) {
        match value.get_ref() {
            toml::de::DeValue::Table(table) => self.walk_toml_table(path, table),
            toml::de::DeValue::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    path.push(Seg::Index(i));
                    self.offsets.insert(path.clone(), item.span().start);
                    self.walk_toml_value(path, item);
                    path.pop();
                }
            }
            _ => {}
        }
    }

    /// Indexes a JSON document that `serde_json` has accepted.
    pub fn json(text: &str) -> SourceIndex {
        let mut index = SourceIndex::new(text);
        let mut scanner = JsonScanner {
            bytes: text.as_bytes(),
            pos: 0,
        };
        scanner.value(&mut Vec::new(), &mut index);
        index
    }
}

/// A minimal JSON walker: it trusts that the text is valid JSON and only
/// records where keys and array elements start.
struct JsonScanner<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl JsonScanner<'_> {
    fn skip_ws(&mut self) {
        while self.pos < self.bytes.len() && self.bytes[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn string(&mut self) -> String {
        let start = self.pos + 1;
        self.pos += 1;
        while let Some(b) = self.peek() {
            self.pos += 1;
            match b {
                b'\\' => self.pos += 1,
                b'"' => break,
                _ => {}
            }
        }
        let raw = &self.bytes[start..self.pos.saturating_sub(1).max(start)];
        serde_json::from_slice::<String>(&[b"\"", raw, b"\""].concat())
            .unwrap_or_else(|_| String::from_utf8_lossy(raw).into_owned())
    }

    fn value(&mut self, path: &mut Vec<Seg>, index: &mut SourceIndex) {
        self.skip_ws();
        match self.peek() {
            Some(b'{') => {
                self.pos += 1;
                loop {
                    self.skip_ws();
                    match self.peek() {
                        Some(b'"') => {
                            let at = self.pos;
                            let key = self.string();
                            path.push(Seg::Key(key));
                            index.offsets.entry(path.clone()).or_insert(at);
                            self.skip_ws();
                            self.pos += 1; // ':'
                            self.value(path, index);
                            path.pop();
                        }
                        Some(b',') => self.pos += 1,
                        Some(b'}') => {
                            self.pos += 1;
                            return;
                        }
                        _ => return,
                    }
                }
            }
            Some(b'[') => {
                self.pos += 1;
                let mut i = 0;
                loop {
                    self.skip_ws();
                    match self.peek() {
                        Some(b']') => {
                            self.pos += 1;
                            return;
                        }
                        Some(b',') => self.pos += 1,
                        Some(_) => {
                            path.push(Seg::Index(i));
                            index.offsets.insert(path.clone(), self.pos);
                            self.value(path, index);
                            path.pop();
                            i += 1;
                        }
                        None => return,
                    }
                }
            }
            Some(b'"') => {
                self.string();
            }
            Some(_) => {
                let start = self.pos;
                while let Some(b) = self.peek() {
                    if matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace() {
                        break;
                    }
                    self.pos += 1;
                }
                // A number the parser reads as a float (anything but a
                // 64-bit integer): kept as written, for messages.
                let token = String::from_utf8_lossy(&self.bytes[start..self.pos]);
                let number = token.starts_with(|c: char| c == '-' || c.is_ascii_digit());
                if number && token.parse::<i64>().is_err() && token.parse::<u64>().is_err() {
                    index.literals.insert(path.clone(), token.into_owned());
                }
            }
            None => {}
        }
    }
}

/// Builds a path from `task`, index, field.
pub(super) fn path(parts: &[&str]) -> Vec<Seg> {
    parts
        .iter()
        .map(|p| match p.parse::<usize>() {
            Ok(i) => Seg::Index(i),
            Err(_) => Seg::Key((*p).to_string()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOML: &str = "[platform]\ncores = 4\n\n[[task]]\nname = \"a\"\nperiod = \"1ms\"\n\n[[task]]\nname = \"b\"\nwcet = { 1 = \"2ms\", 3 = \"1ms\" }\n";

    #[test]
    fn toml_keys_have_their_lines() {
        let index = SourceIndex::toml(TOML);
        assert_eq!(index.line_of(&path(&["platform", "cores"])), 2);
        assert_eq!(index.line_of(&path(&["task", "0", "period"])), 6);
        assert_eq!(index.line_of(&path(&["task", "1", "name"])), 9);
        assert_eq!(index.line_of(&path(&["task", "1", "wcet", "3"])), 10);
        // A missing field falls back to its task's table.
        assert_eq!(index.line_of(&path(&["task", "1", "deadline"])), 8);
    }

    #[test]
    fn json_keys_have_their_lines() {
        let text = "{\n \"platform\": {\"cores\": 4},\n \"task\": [\n  {\"name\": \"a\\\"x\",\n   \"period\": \"1ms\"},\n  {\"name\": \"b\"}\n ]\n}\n";
        let index = SourceIndex::json(text);
        assert_eq!(index.line_of(&path(&["platform", "cores"])), 2);
        assert_eq!(index.line_of(&path(&["task", "0", "period"])), 5);
        assert_eq!(index.line_of(&path(&["task", "1", "name"])), 6);
        assert_eq!(index.line_of(&path(&["task", "1", "memory"])), 6);
    }

    #[test]
    fn json_numbers_read_as_floats_are_kept_as_written() {
        let text =
            "{\"platform\": {\"memory\": 18446744073709551616, \"cores\": 4, \"x\": [1e300, 2]}}";
        let index = SourceIndex::json(text);
        assert_eq!(
            index.written(&path(&["platform", "memory"])),
            Some("18446744073709551616")
        );
        assert_eq!(index.written(&path(&["platform", "x", "0"])), Some("1e300"));
        assert_eq!(index.written(&path(&["platform", "cores"])), None);
        assert_eq!(index.written(&path(&["platform", "x", "1"])), None);
    }
}
