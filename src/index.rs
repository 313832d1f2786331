//! A name -> number index for the environment and the env files: an
//! open-addressing table of `u32` ids whose names live elsewhere (the caller
//! passes a function from id to name), so no name is copied into it.
//!
//! It replaced a `HashMap<Vec<u8>, usize>` (a second copy of every name and
//! 32 bytes a bucket) and a sorted `Vec<u32>` (a sort by `memcmp`): both were
//! large parts of a start-up's instructions and page faults
//! (docs/performance.md). Names are hashed with std's `RandomState`
//! (SipHash, keyed per process), so input cannot be crafted to collide. All
//! the tables of a thread share its keys, so a name hashed for one table
//! (an env file's) is not hashed again for another (the environment's).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

/// An empty slot.
const EMPTY: u32 = u32::MAX;

pub struct NameIndex {
    /// (hash, id) pairs; the hash's low 32 bits, to skip most name comparisons.
    slots: Vec<(u32, u32)>,
    len: usize,
}

impl Default for NameIndex {
    fn default() -> Self {
        NameIndex::with_capacity(0)
    }
}

impl std::fmt::Debug for NameIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NameIndex({} names)", self.len)
    }
}

thread_local! {
    /// The SipHash keys of this thread's tables, drawn once.
    static KEYS: RandomState = RandomState::new();
}

/// The hash of `name` in every table of this thread (the low 32 bits of its
/// SipHash: enough for tables up to 2^32 slots).
pub fn hash(name: &[u8]) -> u32 {
    KEYS.with(|keys| {
        let mut h = keys.build_hasher();
        h.write(name);
        h.finish() as u32
    })
}

/// `a == b` for names, eight bytes at a time: `==` on slices calls musl's
/// `bcmp`, a byte loop, which was 5% of a start-up's instructions (the
/// tables' and the manifest reader's key comparisons; docs/performance.md).
pub fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().unwrap_or_default());
    if n < 8 {
        return a.iter().zip(b).all(|(x, y)| x == y);
    }
    // Whole words, then the last eight bytes (overlapping the previous word).
    (0..n / 8).all(|i| word(a, i * 8) == word(b, i * 8)) && word(a, n - 8) == word(b, n - 8)
}

impl NameIndex {
    /// Room for `n` names before the table grows.
    pub fn with_capacity(n: usize) -> Self {
        let mut index = NameIndex { slots: Vec::new(), len: 0 };
        index.resize(n);
        index
    }

    /// The slot holding `name`, or the empty slot where it would go.
    fn slot<'n>(&self, name: &[u8], hash: u32, name_of: impl Fn(u32) -> &'n [u8]) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        loop {
            let (h, id) = self.slots[i];
            if id == EMPTY || (h == hash && same(name_of(id), name)) {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    /// The id of `name`, if it is in the index.
    pub fn get<'n>(&self, name: &[u8], name_of: impl Fn(u32) -> &'n [u8]) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        let id = self.slots[self.slot(name, hash(name), name_of)].1;
        (id != EMPTY).then_some(id)
    }

    /// The id of `name`; when absent, `name` is added with id `new` and Err(new) returned.
    pub fn get_or_insert<'n>(&mut self, name: &[u8], new: u32, name_of: impl Fn(u32) -> &'n [u8]) -> Result<u32, u32> {
        self.get_or_insert_hashed(name, hash(name), new, name_of)
    }

    /// [`NameIndex::get_or_insert`] for a name whose [`hash`] is known.
    pub fn get_or_insert_hashed<'n>(&mut self, name: &[u8], hash: u32, new: u32, name_of: impl Fn(u32) -> &'n [u8]) -> Result<u32, u32> {
        debug_assert!(new != EMPTY && hash == self::hash(name));
        self.reserve(self.len + 1);
        let i = self.slot(name, hash, name_of);
        match self.slots[i].1 {
            EMPTY => {
                self.slots[i] = (hash, new);
                self.len += 1;
                Err(new)
            }
            id => Ok(id),
        }
    }

    /// Maps `name` to `id` (whose name is `name` too), replacing the id it had.
    pub fn put<'n>(&mut self, name: &[u8], id: u32, name_of: impl Fn(u32) -> &'n [u8]) {
        debug_assert!(id != EMPTY);
        self.reserve(self.len + 1);
        let hash = hash(name);
        let i = self.slot(name, hash, name_of);
        self.len += usize::from(self.slots[i].1 == EMPTY);
        self.slots[i] = (hash, id);
    }

    /// Room for `n` names in all (at most three quarters of the slots used,
    /// and one always empty).
    pub fn reserve(&mut self, n: usize) {
        if n * 4 >= self.slots.len() * 3 {
            self.resize(n);
        }
    }

    /// Grows to fit `n` names (ids are unique: no names are compared).
    fn resize(&mut self, n: usize) {
        let size = (n.max(3) * 4 / 3 + 1).next_power_of_two();
        let old = std::mem::replace(&mut self.slots, vec![(0, EMPTY); size]);
        let mask = size - 1;
        for (h, id) in old.into_iter().filter(|&(_, id)| id != EMPTY) {
            let mut i = h as usize & mask;
            while self.slots[i].1 != EMPTY {
                i = (i + 1) & mask;
            }
            self.slots[i] = (h, id);
        }
    }

    /// Forgets every name (the table keeps its size).
    pub fn clear(&mut self) {
        self.slots.iter_mut().for_each(|s| *s = (0, EMPTY));
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_is_slice_equality() {
        let names: Vec<&[u8]> = vec![b"", b"A", b"B", b"AB", b"ABCDEFG", b"ABCDEFH", b"ABCDEFGH", b"ABCDEFGX", b"XBCDEFGH", b"ABCDEFGHIJKLMNOPQ", b"ABCDEFGHIJKLMNOPX", b"ABCDEFGHXJKLMNOPQ"];
        for a in &names {
            for b in &names {
                assert_eq!(same(a, b), a == b, "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn finds_what_was_inserted_across_growth() {
        let mut names: Vec<Vec<u8>> = (0..5000).map(|i| format!("APP_CONFIG_KEY_{i:04}").into_bytes()).collect();
        names.push(names[7].clone());
        let name_of = |id: u32| names[id as usize].as_slice();
        let mut index = NameIndex::with_capacity(0);
        for (i, n) in names[..5000].iter().enumerate() {
            assert_eq!(index.get_or_insert(n, i as u32, name_of), Err(i as u32));
        }
        for (i, n) in names[..5000].iter().enumerate() {
            assert_eq!(index.get(n, name_of), Some(i as u32));
            assert_eq!(index.get_or_insert(n, 9, name_of), Ok(i as u32));
        }
        assert_eq!(index.get(b"APP_CONFIG_KEY_5000", name_of), None);
        assert_eq!(index.get(b"", name_of), None);
        index.put(&names[7], 5000, name_of);
        assert_eq!(index.get(&names[7], name_of), Some(5000));
        index.clear();
        assert_eq!(index.get(&names[0], name_of), None);
    }
}
