//! Heap misuse by the program: what the shim does when `free` or
//! `realloc` is given a pointer it must not take — a block freed already,
//! a pointer it never handed out (the stack, static data, another
//! mapping), or one inside a block. As glibc does (`malloc_printerr`), it
//! prints one line naming the call, the problem and the pointer to stderr
//! and aborts the process (SIGABRT): going on would hand one block to two
//! owners later.
//!
//! The checks themselves live with the memory they check (the heap's size
//! classes and runs, the bootstrap arena); this module only words and
//! reports. Nothing here allocates: the line is built in a buffer on the
//! stack and written with [`write_stderr`].

use crate::stderr::write_stderr;

/// What is wrong with a pointer given to `free` or `realloc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misuse {
    /// The block was freed already: it is on a free list, or its pages
    /// are free.
    DoubleFree,
    /// The allocator never handed out this address.
    NotFromMalloc,
    /// The address lies inside a block, not at its start.
    Interior,
}

/// The call that was given the pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// `free` (and `free_sized`, `free_aligned_sized`).
    Free,
    /// `realloc` (and `reallocarray`).
    Realloc,
}

impl Call {
    fn name(self) -> &'static str {
        match self {
            Call::Free => "free",
            Call::Realloc => "realloc",
        }
    }
}

impl Misuse {
    /// The problem in words, as the line names it.
    fn words(self, call: Call) -> &'static str {
        match (self, call) {
            (Misuse::DoubleFree, Call::Free) => "double free detected",
            (Misuse::DoubleFree, Call::Realloc) => "pointer already freed",
            (Misuse::NotFromMalloc, _) => "invalid pointer, never returned by malloc",
            (Misuse::Interior, _) => "invalid pointer, inside a block",
        }
    }
}

/// Longest line: the prefix, the longest call and problem, 16 digits.
const LINE: usize = 128;

/// A line on the stack.
struct Line {
    bytes: [u8; LINE],
    len: usize,
}

impl Line {
    fn push(&mut self, text: &str) {
        let end = (self.len + text.len()).min(LINE);
        self.bytes[self.len..end].copy_from_slice(&text.as_bytes()[..end - self.len]);
        self.len = end;
    }

    fn push_hex(&mut self, value: usize) {
        let digits = (usize::BITS - value.leading_zeros()).div_ceil(4).max(1);
        for shift in (0..digits).rev() {
            let digit = (value >> (shift * 4)) & 0xf;
            let ascii = b"0123456789abcdef"[digit];
            if self.len < LINE {
                self.bytes[self.len] = ascii;
                self.len += 1;
            }
        }
    }

    fn as_str(&self) -> &str {
        // Only ASCII was pushed, and `push` cuts at a byte boundary of
        // ASCII text: always valid UTF-8.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("tinct-preload: heap misuse\n")
    }
}

/// The line reported for `misuse` of `ptr` by `call`, e.g.
/// `tinct-preload: free(): double free detected (0x5581e2a0)`, ending in
/// a newline; written into `line` (no allocation).
fn format(call: Call, misuse: Misuse, ptr: *const u8, line: &mut Line) {
    line.push("tinct-preload: ");
    line.push(call.name());
    line.push("(): ");
    line.push(misuse.words(call));
    line.push(" (0x");
    line.push_hex(ptr as usize);
    line.push(")\n");
}

/// Prints the line for `misuse` of `ptr` by `call` on stderr and aborts
/// the process (SIGABRT), as glibc's allocator does on heap corruption.
#[cold]
#[inline(never)]
pub fn abort(call: Call, misuse: Misuse, ptr: *const u8) -> ! {
    let mut line = Line {
        bytes: [0; LINE],
        len: 0,
    };
    format(call, misuse, ptr, &mut line);
    write_stderr(line.as_str());
    // SAFETY: abort has no preconditions; it never returns.
    unsafe { libc::abort() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(call: Call, misuse: Misuse, ptr: usize) -> String {
        let mut line = Line {
            bytes: [0; LINE],
            len: 0,
        };
        format(call, misuse, ptr as *const u8, &mut line);
        line.as_str().to_string()
    }

    #[test]
    fn lines_name_the_call_the_problem_and_the_pointer() {
        assert_eq!(
            line(Call::Free, Misuse::DoubleFree, 0x5581_e2a0),
            "tinct-preload: free(): double free detected (0x5581e2a0)\n"
        );
        assert_eq!(
            line(Call::Realloc, Misuse::DoubleFree, 0x10),
            "tinct-preload: realloc(): pointer already freed (0x10)\n"
        );
        assert_eq!(
            line(Call::Free, Misuse::Interior, usize::MAX),
            "tinct-preload: free(): invalid pointer, inside a block (0xffffffffffffffff)\n"
        );
        assert_eq!(
            line(Call::Realloc, Misuse::NotFromMalloc, 0),
            "tinct-preload: realloc(): invalid pointer, never returned by malloc (0x0)\n"
        );
        let longest = line(Call::Realloc, Misuse::NotFromMalloc, usize::MAX);
        assert!(
            longest.len() < LINE && longest.ends_with(")\n"),
            "{longest}"
        );
    }
}
