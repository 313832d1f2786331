//! Name -> number indexes for the environment ([`NameIndex`]) and the env
//! files ([`SmallIndex`]): open-addressing tables of ids whose names live
//! elsewhere (the caller passes a function from id to name), so no name is
//! copied into them.
//!
//! No second copy of a name, and small slots: the indexes are a large part
//! of a start-up's page faults (docs/performance.md). Names are hashed with a keyed hash (below) whose
//! keys are drawn per process, so input cannot be crafted to collide. All
//! the tables of a thread share its keys, so a name hashed for one table
//! (an env file's) is not hashed again for another (the environment's).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

/// An empty slot's id field.
const EMPTY: u32 = 0;

pub struct NameIndex {
    /// (hash, id + 1) pairs, or [`EMPTY`]; the hash, to skip most name
    /// comparisons. Ids are stored plus one so that a table of empty slots
    /// is zeroed memory: a `memset`, not a loop storing each slot.
    slots: Vec<(u32, u32)>,
    /// A hash's home slot is its top bits: `hash >> shift` (32 - log2 of the size).
    shift: u32,
    len: usize,
}

/// An empty index without a table (it is allocated with the first name).
impl Default for NameIndex {
    fn default() -> Self {
        NameIndex { slots: Vec::new(), shift: 32, len: 0 }
    }
}

impl std::fmt::Debug for NameIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NameIndex({} names)", self.len)
    }
}

/// The Mersenne prime 2^61 - 1: the hash is a polynomial modulo it.
const P: u64 = (1 << 61) - 1;

thread_local! {
    /// This thread's keys: `k` in [1, P) for the polynomial, `m` odd for the
    /// final multiply-shift; drawn once from std's `RandomState` (keyed from
    /// the kernel's random bytes) by hashing two constants.
    static KEYS: (u64, u64) = {
        let draw = |n: u64| {
            let mut h = RandomState::new().build_hasher();
            h.write_u64(n);
            h.finish()
        };
        ((draw(0) % (P - 1)) + 1, draw(1) | 1)
    };
}

/// A value below 2^61 + 4 congruent to `x` modulo [`P`], for any `x` < 2^123
/// (two folds; the hash subtracts P once at the end, not at every chunk).
fn fold(x: u128) -> u64 {
    let r = (x as u64 & P) + (x >> 61) as u64;
    (r & P) + (r >> 61)
}

/// A fixed bijection of 64-bit values (MurmurHash3's finalizer) that breaks
/// up arithmetic progressions: names that differ in their last chunk only
/// (`KEY_0001`, `KEY_0002`, …) give polynomial values in a progression, which
/// multiply-shift alone maps to clustered home slots (long probes in some
/// runs, docs/performance.md). Being a bijection, it keeps distinct values
/// distinct, so the bounds below hold as they are.
#[inline]
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// The hash of `name` in every table of this thread. It replaced SipHash-1-3
/// (a large part of a start-up's instructions) with a universal hash
/// that costs a multiplication per seven bytes:
///
/// - the name's length and its 7-byte chunks (the last padded with zeros) are
///   the coefficients of a polynomial evaluated at the secret `k` modulo the
///   prime P = 2^61 - 1. Two distinct names of at most L chunks give distinct
///   polynomials of degree at most L, which agree on at most L of the P - 1
///   keys: for names chosen without knowing `k`, they collide with
///   probability at most L / (2^61 - 2), below 2^-56 for the 19 chunks of a
///   name from a file or the manifest ([`crate::limits::MAX_NAME_BYTES`]);
/// - that value through the fixed bijection [`mix`], times the secret odd
///   `m`, keeping the top 32 bits (Dietzfelbinger's multiply-shift): two
///   distinct values agree in their top b bits with probability at most 2 / 2^b. The tables take a name's home
///   slot from the top bits ([`NameIndex`]), so this bounds both full 32-bit
///   collisions (2^-31) and two names sharing a home slot in a table of 2^b.
///
/// The keys never leave the process (no output depends on them: tables keep
/// their own order), so input written before the start cannot aim at them;
/// with 1,000,000 imported names at most, about 230 pairs share all 32 bits
/// on average, each costing one name comparison more.
pub fn hash(name: &[u8]) -> u32 {
    keys().hash(name)
}

/// This thread's keys of [`hash`], read once for many names: its
/// [`HashKeys::hash`] is inlined where it is called, without the thread-local
/// access and the call of each [`hash`] (an env file's keys: 1,000 names).
#[derive(Clone, Copy)]
pub struct HashKeys {
    k: u64,
    m: u64,
}

#[inline]
pub fn keys() -> HashKeys {
    KEYS.with(|&(k, m)| HashKeys { k, m })
}

impl HashKeys {
    /// [`hash`] with these keys.
    #[inline(always)]
    pub fn hash(self, name: &[u8]) -> u32 {
        let HashKeys { k, m } = self;
        let n = name.len();
        let word = |at: usize| u64::from_le_bytes(name[at..at + 8].try_into().unwrap_or_default());
        let step = |h: u64, chunk: u64| fold(h as u128 * k as u128 + chunk as u128);
        let mut h = n as u64;
        let mut i = 0;
        // Whole chunks while eight bytes can be read, then the last 1 to 7
        // bytes: the end of the name's last eight, or byte by byte when shorter.
        while i + 8 <= n {
            h = step(h, word(i) & 0x00ff_ffff_ffff_ffff);
            i += 7;
        }
        if i < n {
            let last = if n >= 8 { word(n - 8) >> (8 * (8 - (n - i))) } else { name.iter().rev().fold(0, |w, &b| w << 8 | b as u64) };
            h = step(h, last);
        }
        let h = if h >= P { h - P } else { h };
        (mix(h).wrapping_mul(m) >> 32) as u32
    }
}

/// `a == b` for names, eight bytes at a time: `==` on slices calls musl's
/// `bcmp`, a byte loop, and the tables and the manifest reader compare keys
/// all the time.
#[inline]
pub fn same(a: &[u8], b: &[u8]) -> bool {
    #[inline]
    fn word(s: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(s[at..at + 8].try_into().unwrap_or_default())
    }
    #[inline]
    fn half(s: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(s[at..at + 4].try_into().unwrap_or_default())
    }
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n < 8 {
        // 4 to 7 bytes (most of the manifest's field names): the first four
        // and the last four (overlapping), not a byte loop.
        if n >= 4 {
            return half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4);
        }
        return a.iter().zip(b).all(|(x, y)| x == y);
    }
    // Whole words, then the last eight bytes (overlapping the previous word).
    (0..n / 8).all(|i| word(a, i * 8) == word(b, i * 8)) && word(a, n - 8) == word(b, n - 8)
}

impl NameIndex {
    /// Room for `n` names before the table grows.
    pub fn with_capacity(n: usize) -> Self {
        let mut index = NameIndex::default();
        index.resize(n);
        index
    }

    /// The slot holding `name`, or the empty slot where it would go.
    fn slot<'n>(&self, name: &[u8], hash: u32, name_of: impl Fn(u32) -> &'n [u8]) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = (hash >> self.shift) as usize;
        loop {
            let (h, id) = self.slots[i];
            if id == EMPTY || (h == hash && same(name_of(id - 1), name)) {
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
        id.checked_sub(1)
    }

    /// The id of `name`; when absent, `name` is added with id `new` and Err(new) returned.
    pub fn get_or_insert<'n>(&mut self, name: &[u8], new: u32, name_of: impl Fn(u32) -> &'n [u8]) -> Result<u32, u32> {
        self.get_or_insert_hashed(name, hash(name), new, name_of)
    }

    /// [`NameIndex::get_or_insert`] for a name whose [`hash`] is known.
    pub fn get_or_insert_hashed<'n>(&mut self, name: &[u8], hash: u32, new: u32, name_of: impl Fn(u32) -> &'n [u8]) -> Result<u32, u32> {
        debug_assert!(new != u32::MAX && hash == self::hash(name));
        self.reserve(self.len + 1);
        let i = self.slot(name, hash, name_of);
        match self.slots[i].1 {
            EMPTY => {
                self.slots[i] = (hash, new + 1);
                self.len += 1;
                Err(new)
            }
            id => Ok(id - 1),
        }
    }

    /// Maps `name` to `id` (whose name is `name` too), replacing the id it had.
    pub fn put<'n>(&mut self, name: &[u8], id: u32, name_of: impl Fn(u32) -> &'n [u8]) {
        debug_assert!(id != u32::MAX);
        self.reserve(self.len + 1);
        let hash = hash(name);
        let i = self.slot(name, hash, name_of);
        self.len += usize::from(self.slots[i].1 == EMPTY);
        self.slots[i] = (hash, id + 1);
    }

    /// Room for `n` names in all (at most three quarters of the slots used,
    /// and one always empty).
    #[inline]
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
        self.shift = 32 - size.trailing_zeros();
        for (h, id) in old.into_iter().filter(|&(_, id)| id != EMPTY) {
            let mut i = (h >> self.shift) as usize;
            while self.slots[i].1 != EMPTY {
                i = (i + 1) & mask;
            }
            self.slots[i] = (h, id);
        }
    }

    /// Forgets every name (the table keeps its size).
    pub fn clear(&mut self) {
        self.slots.fill((0, EMPTY));
        self.len = 0;
    }
}

/// An index of at most [`SMALL_MAX`] names, sized once for all of them,
/// whose hashes the caller keeps (`hash_of(id)`): a slot is an id plus one in
/// two bytes (0: empty), a quarter of [`NameIndex`]'s eight: an env file's
/// key table has fewer pages to fault in.
pub struct SmallIndex {
    slots: Vec<u16>,
    /// A hash's home slot is its top bits: `hash >> shift`.
    shift: u32,
    /// The most names it takes (at most three quarters of the slots: probes end).
    room: usize,
    len: usize,
}

/// The most names a [`SmallIndex`] holds.
pub const SMALL_MAX: usize = u16::MAX as usize - 1;

/// An empty index without a table, that takes no names.
impl Default for SmallIndex {
    fn default() -> Self {
        SmallIndex { slots: Vec::new(), shift: 32, room: 0, len: 0 }
    }
}

impl std::fmt::Debug for SmallIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SmallIndex({} names)", self.len)
    }
}

impl SmallIndex {
    /// Room for `n` names, at most [`SMALL_MAX`] (fewer are taken).
    pub fn with_capacity(n: usize) -> Self {
        let room = n.min(SMALL_MAX);
        let size = (room.max(3) * 4 / 3 + 1).next_power_of_two();
        SmallIndex { slots: vec![0; size], shift: 32 - size.trailing_zeros(), room, len: 0 }
    }

    /// The slot holding `name`, or the empty slot where it would go.
    fn slot<'n>(&self, name: &[u8], hash: u32, hash_of: impl Fn(u32) -> u32, name_of: impl Fn(u32) -> &'n [u8]) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = (hash >> self.shift) as usize;
        loop {
            let id = self.slots[i];
            if id == 0 || (hash_of(id as u32 - 1) == hash && same(name_of(id as u32 - 1), name)) {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    /// The id of `name`, if it is in the index.
    pub fn get<'n>(&self, name: &[u8], hash_of: impl Fn(u32) -> u32, name_of: impl Fn(u32) -> &'n [u8]) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        (self.slots[self.slot(name, hash(name), hash_of, name_of)] as u32).checked_sub(1)
    }

    /// The id of `name` (whose [`hash`] is `hash`); when absent, `name` is
    /// added with id `new` and Err(new) returned, or Err(u32::MAX) without
    /// adding it once the index holds the names it was made for.
    pub fn get_or_insert_hashed<'n>(
        &mut self,
        name: &[u8],
        hash: u32,
        new: u32,
        hash_of: impl Fn(u32) -> u32,
        name_of: impl Fn(u32) -> &'n [u8],
    ) -> Result<u32, u32> {
        debug_assert!(hash == self::hash(name));
        if self.room == 0 {
            return Err(u32::MAX);
        }
        let i = self.slot(name, hash, hash_of, name_of);
        match self.slots[i] {
            0 if self.len < self.room && new < SMALL_MAX as u32 => {
                self.slots[i] = new as u16 + 1;
                self.len += 1;
                Err(new)
            }
            0 => Err(u32::MAX),
            id => Ok(id as u32 - 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_is_slice_equality() {
        let names: Vec<&[u8]> = vec![
            b"",
            b"A",
            b"B",
            b"AB",
            b"ABC",
            b"ABD",
            b"ABCD",
            b"XBCD",
            b"ABCX",
            b"ABCDE",
            b"ABXDE",
            b"ABCDEFG",
            b"ABCDEFH",
            b"XBCDEFG",
            b"ABCXEFG",
            b"ABCDEFGH",
            b"ABCDEFGX",
            b"XBCDEFGH",
            b"ABCDEFGHIJKLMNOPQ",
            b"ABCDEFGHIJKLMNOPX",
            b"ABCDEFGHXJKLMNOPQ",
        ];
        for a in &names {
            for b in &names {
                assert_eq!(same(a, b), a == b, "{a:?} {b:?}");
            }
        }
    }

    /// The hash as its documentation defines it: length, then 7-byte chunks.
    fn by_chunks(name: &[u8]) -> u32 {
        KEYS.with(|&(k, m)| {
            let mut h = name.len() as u64;
            for chunk in name.chunks(7) {
                let mut word = [0u8; 8];
                word[..chunk.len()].copy_from_slice(chunk);
                h = ((h as u128 * k as u128 + u64::from_le_bytes(word) as u128) % P as u128) as u64;
            }
            (mix(h).wrapping_mul(m) >> 32) as u32
        })
    }

    #[test]
    fn hash_is_the_polynomial_of_the_chunks() {
        let long: Vec<u8> = (0..300u32).map(|i| (33 + i * 7 % 94) as u8).collect();
        for n in 0..long.len() {
            assert_eq!(hash(&long[..n]), by_chunks(&long[..n]), "length {n}");
        }
        assert_eq!(hash(&[0xff; 64]), by_chunks(&[0xff; 64]));
    }

    #[test]
    fn hashes_spread_over_home_slots() {
        // 4,096 names sharing a long prefix into 4,096 home slots: no slot is
        // home to more than a handful (a weak hash piles them up).
        let mut homes = vec![0u32; 4096];
        for i in 0..4096 {
            homes[(hash(format!("APP_CONFIG_KEY_{i:05}").as_bytes()) >> 20) as usize] += 1;
        }
        assert!(homes.iter().all(|&c| c <= 12), "{:?}", homes.iter().max());
        assert_ne!(hash(b"A"), hash(b"A\0"));
    }

    /// The total distance of the names from their home slots, for 1,000
    /// names that differ in their last characters only (as generated
    /// configuration keys do), with this thread's keys.
    fn total_distance() -> usize {
        let names: Vec<Vec<u8>> = (0..1000).map(|i| format!("APP_CONFIG_KEY_{i:04}").into_bytes()).collect();
        let name_of = |id: u32| names[id as usize].as_slice();
        let mut index = NameIndex::with_capacity(names.len());
        for (i, n) in names.iter().enumerate() {
            assert_eq!(index.get_or_insert(n, i as u32, name_of), Err(i as u32));
        }
        let mask = index.slots.len() - 1;
        (0..index.slots.len()).filter(|&i| index.slots[i].1 != EMPTY).map(|i| i.wrapping_sub((index.slots[i].0 >> index.shift) as usize) & mask).sum()
    }

    #[test]
    fn names_in_a_progression_do_not_cluster() {
        // Each thread draws its keys: 200 draws. Random homes give about 500
        // in all at this load (2,048 slots); without the mix, multiply-shift
        // alone put several thousand in some draws.
        let totals: Vec<usize> = (0..200).map(|_| std::thread::spawn(total_distance).join().unwrap()).collect();
        let worst = totals.iter().max().unwrap();
        assert!(*worst < 2_000, "worst {worst}, all {totals:?}");
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

    #[test]
    fn small_index_finds_what_was_inserted_and_stops_at_its_room() {
        let names: Vec<Vec<u8>> = (0..3000).map(|i| format!("APP_CONFIG_KEY_{i:04}").into_bytes()).collect();
        let hashes: Vec<u32> = names.iter().map(|n| hash(n)).collect();
        let (name_of, hash_of) = (|id: u32| names[id as usize].as_slice(), |id: u32| hashes[id as usize]);
        let mut index = SmallIndex::default();
        assert_eq!(index.get(&names[0], hash_of, name_of), None);
        assert_eq!(index.get_or_insert_hashed(&names[0], hashes[0], 0, hash_of, name_of), Err(u32::MAX));
        let mut index = SmallIndex::with_capacity(2000);
        assert_eq!(index.get(&names[0], hash_of, name_of), None);
        for (i, n) in names[..2000].iter().enumerate() {
            assert_eq!(index.get_or_insert_hashed(n, hashes[i], i as u32, hash_of, name_of), Err(i as u32));
        }
        for (i, n) in names[..2000].iter().enumerate() {
            assert_eq!(index.get(n, hash_of, name_of), Some(i as u32));
            assert_eq!(index.get_or_insert_hashed(n, hashes[i], 9, hash_of, name_of), Ok(i as u32));
        }
        assert_eq!(index.get(&names[2000], hash_of, name_of), None);
        assert_eq!(index.get_or_insert_hashed(&names[2000], hashes[2000], 2000, hash_of, name_of), Err(u32::MAX));
        assert_eq!(index.get(&names[2000], hash_of, name_of), None);
        assert_eq!(index.slots.len(), 4096);
    }
}
