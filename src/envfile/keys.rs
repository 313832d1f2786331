//! An env file's final key set: the distinct names, each its last entry
//! (the kubelet's grammar: its first), in one table for the imports and the
//! `fileKeyRef` lookups.

use super::{Entry, ABSENT};
use crate::index::SmallIndex;

/// An env file's distinct names: `order[k]` is the last entry of the `k`th
/// distinct name (in order of first occurrence); `index` maps a name to its `k`.
/// One table serves the imports and the `fileKeyRef` lookups.
#[derive(Debug)]
pub(super) struct Keys {
    pub(super) index: SmallIndex,
    /// (Entry numbers fit 16 bits: see the assertion on `SMALL_MAX`; 2 KiB for 1,000 keys, not 4.)
    pub(super) order: Vec<u16>,
    /// The [`crate::index::hash`] of each distinct name, for the environment's table.
    pub(super) hashes: Vec<u32>,
    /// The bytes of the names and values of the final key set.
    pub(super) bytes: usize,
    /// The names given more than once: how many times a name was given
    /// again, and the first time, its two lines (the one before, this one).
    pub(super) duplicates: (u32, Option<(u32, u32)>),
    /// The distinct names whose entry is [`ABSENT`]: the last of `order` (see [`Keys::absent_last`]), never imported.
    pub(super) absent: usize,
}

impl Keys {
    /// The kubelet's grammar: each name's first entry, not its last (a name
    /// given again changes nothing, and is no duplicate to warn of). Only
    /// for a file that gives a name twice: the others pay nothing.
    pub(super) fn first_wins(&mut self, data: &[u8], entries: &[Entry]) {
        let name_of = |e: &Entry| &data[e.name_start as usize..e.name_start as usize + e.name_len as usize];
        let mut first = vec![u16::MAX; self.order.len()];
        for (i, e) in entries.iter().enumerate() {
            // Every entry's name is in the index.
            if let Some(k) = self.index.get(name_of(e), |k| self.hashes[k as usize], |k| name_of(&entries[self.order[k as usize] as usize])) {
                if first[k as usize] == u16::MAX {
                    first[k as usize] = i as u16;
                }
            }
        }
        self.bytes = first.iter().map(|&i| entries[i as usize].name_len as usize + entries[i as usize].value_len as usize).sum();
        (self.order, self.duplicates) = (first, (0, None));
    }

    /// The kubelet's grammar: the names it does not find moved after the
    /// others (the index made anew), so that an import takes the first
    /// `order.len() - absent` with no test of each (a test of each cost the
    /// start a measurable share: docs/performance.md, the kubelet's grammar).
    pub(super) fn absent_last(&mut self, data: &[u8], entries: &[Entry]) {
        let is_absent = |&(i, _): &(u16, u32)| entries[i as usize].flags & ABSENT != 0;
        let keys = self.order.iter().copied().zip(self.hashes.iter().copied());
        let (gone, kept): (Vec<_>, Vec<_>) = keys.partition(is_absent);
        if gone.is_empty() {
            return;
        }
        let absent = gone.len();
        let (order, hashes): (Vec<u16>, Vec<u32>) = kept.into_iter().chain(gone).unzip();
        let mut index = SmallIndex::with_capacity(order.len());
        let name_of = |e: &Entry| &data[e.name_start as usize..e.name_start as usize + e.name_len as usize];
        for (k, (&i, &hash)) in order.iter().zip(&hashes).enumerate() {
            let _ = index.get_or_insert_hashed(
                name_of(&entries[i as usize]),
                hash,
                k as u32,
                |k| hashes[k as usize],
                |k| name_of(&entries[order[k as usize] as usize]),
            );
        }
        (self.index, self.order, self.hashes, self.absent) = (index, order, hashes, absent);
    }

    /// The final key set of `entries`, a table sized once for all of them
    /// (after the parse, when their number is known).
    pub(super) fn new(data: &[u8], entries: &[Entry]) -> Keys {
        let n = entries.len();
        let mut keys = Keys {
            index: SmallIndex::with_capacity(n),
            order: Vec::with_capacity(n),
            hashes: Vec::with_capacity(n),
            bytes: 0,
            duplicates: (0, None),
            absent: 0,
        };
        let Keys { index, order, hashes, bytes, duplicates, .. } = &mut keys;
        let name_of = |e: &Entry| &data[e.name_start as usize..e.name_start as usize + e.name_len as usize];
        let hash_keys = crate::index::keys();
        for (i, e) in entries.iter().enumerate() {
            // A name seen before now points at this entry.
            let name = name_of(e);
            let hash = hash_keys.hash(name);
            let (hash_of, key_name) = (|k: u32| hashes[k as usize], |k: u32| name_of(&entries[order[k as usize] as usize]));
            match index.get_or_insert_hashed(name, hash, order.len() as u32, hash_of, key_name) {
                Ok(k) => {
                    let before = &entries[order[k as usize] as usize];
                    *bytes = *bytes + e.value_len as usize - before.value_len as usize;
                    duplicates.0 += 1;
                    duplicates.1.get_or_insert((before.line, e.line));
                    order[k as usize] = i as u16;
                }
                // (Err(u32::MAX), a full table, cannot happen: it has room for every entry.)
                Err(_) => {
                    *bytes += name.len() + e.value_len as usize;
                    order.push(i as u16);
                    hashes.push(hash);
                }
            }
        }
        keys
    }
}
