//! Intrusive doubly linked lists over page indices.
//!
//! Every page sits in two lists at once (its color list and its bank list),
//! as in chandru-mueller Section 3 ("each free memory chunk is part of both
//! lists"), so taking a page out of one list must unlink it from the other
//! in O(1). The links live in flat arrays indexed by page, allocated once
//! when the pool is built: list operations never allocate.

/// "No page".
pub(crate) const NIL: u32 = u32::MAX;

/// A family of lists (one per color, or one per bank) over the same pages.
#[derive(Debug, Clone)]
pub(crate) struct ListFamily {
    next: Vec<u32>,
    prev: Vec<u32>,
    head: Vec<u32>,
    tail: Vec<u32>,
    len: Vec<u32>,
}

impl ListFamily {
    /// `lists` empty lists over `pages` pages.
    pub(crate) fn new(lists: usize, pages: usize) -> Self {
        Self {
            next: vec![NIL; pages],
            prev: vec![NIL; pages],
            head: vec![NIL; lists],
            tail: vec![NIL; lists],
            len: vec![0; lists],
        }
    }

    /// Makes room for members numbered up to `members - 1` (new members
    /// are in no list).
    pub(crate) fn grow_to(&mut self, members: usize) {
        if members > self.next.len() {
            self.next.resize(members, NIL);
            self.prev.resize(members, NIL);
        }
    }

    /// Number of pages in list `list`.
    #[inline]
    pub(crate) fn len(&self, list: usize) -> u32 {
        self.len[list]
    }

    /// First page of `list`.
    #[inline]
    pub(crate) fn first(&self, list: usize) -> Option<u32> {
        let head = self.head[list];
        (head != NIL).then_some(head)
    }

    /// Appends `page` at the back (never-used pages, in address order).
    pub(crate) fn push_back(&mut self, list: usize, page: u32) {
        let tail = self.tail[list];
        self.prev[page as usize] = tail;
        self.next[page as usize] = NIL;
        if tail == NIL {
            self.head[list] = page;
        } else {
            self.next[tail as usize] = page;
        }
        self.tail[list] = page;
        self.len[list] += 1;
    }

    /// Inserts `page` at the front (freed pages are reused first,
    /// kim2013 footnote 5).
    #[inline]
    pub(crate) fn push_front(&mut self, list: usize, page: u32) {
        let head = self.head[list];
        self.next[page as usize] = head;
        self.prev[page as usize] = NIL;
        if head == NIL {
            self.tail[list] = page;
        } else {
            self.prev[head as usize] = page;
        }
        self.head[list] = page;
        self.len[list] += 1;
    }

    /// Unlinks `page` from `list` (the page must be in it).
    #[inline]
    pub(crate) fn unlink(&mut self, list: usize, page: u32) {
        let (prev, next) = (self.prev[page as usize], self.next[page as usize]);
        if prev == NIL {
            self.head[list] = next;
        } else {
            self.next[prev as usize] = next;
        }
        if next == NIL {
            self.tail[list] = prev;
        } else {
            self.prev[next as usize] = prev;
        }
        self.len[list] -= 1;
    }

    /// Pages of `list`, front to back.
    pub(crate) fn iter(&self, list: usize) -> impl Iterator<Item = u32> + '_ {
        let mut cursor = self.head[list];
        std::iter::from_fn(move || {
            (cursor != NIL).then(|| {
                let page = cursor;
                cursor = self.next[page as usize];
                page
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_and_back_order_and_unlink() {
        let mut lists = ListFamily::new(2, 6);
        for page in 0..3 {
            lists.push_back(0, page);
        }
        lists.push_front(0, 5);
        assert_eq!(lists.iter(0).collect::<Vec<_>>(), vec![5, 0, 1, 2]);
        lists.unlink(0, 1);
        lists.unlink(0, 5);
        assert_eq!(lists.iter(0).collect::<Vec<_>>(), vec![0, 2]);
        lists.unlink(0, 2);
        lists.unlink(0, 0);
        assert_eq!(lists.len(0), 0);
        assert_eq!(lists.first(0), None);
        lists.push_front(0, 4);
        assert_eq!(lists.iter(0).collect::<Vec<_>>(), vec![4]);
        assert_eq!(lists.len(1), 0);
    }
}
