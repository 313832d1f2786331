//! The one sort of the crate: a heapsort. std's `sort_unstable` is a large
//! body of code for each element type it sorts (three here); this one is a
//! small fraction of it for each, and O(n log n) in the
//! worst case too. No sort runs on a container start's usual path (the
//! lists sorted are warnings, `--env-dir` names and a compaction of the
//! environment's strings): docs/performance.md, binary size.

/// Sorts `v` so that no element is `less` than one before it (not stable).
pub fn sort_by<T>(v: &mut [T], mut less: impl FnMut(&T, &T) -> bool) {
    // Build a max-heap, then move its top to the end, one element at a time.
    for start in (0..v.len() / 2).rev() {
        sift_down(v, start, &mut less);
    }
    for end in (1..v.len()).rev() {
        v.swap(0, end);
        sift_down(&mut v[..end], 0, &mut less);
    }
}

/// Sorts `v` in ascending order (not stable).
pub fn sort<T: Ord>(v: &mut [T]) {
    sort_by(v, |a, b| a < b);
}

/// Moves `v[node]` down the max-heap `v` to its place.
fn sift_down<T>(v: &mut [T], mut node: usize, less: &mut impl FnMut(&T, &T) -> bool) {
    loop {
        let mut child = 2 * node + 1;
        if child >= v.len() {
            return;
        }
        if child + 1 < v.len() && less(&v[child], &v[child + 1]) {
            child += 1;
        }
        if !less(&v[node], &v[child]) {
            return;
        }
        v.swap(node, child);
        node = child;
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // std's sorts are what these tests compare with
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn sorts_as_std_sorts(mut v in proptest::collection::vec(0u16..50, 0..200)) {
            let mut want = v.clone();
            want.sort_unstable();
            sort(&mut v);
            prop_assert_eq!(v, want);
        }

        #[test]
        fn sorts_by_a_key(mut v in proptest::collection::vec(any::<(u8, u32)>(), 0..100)) {
            let mut want = v.clone();
            want.sort_by_key(|p| p.0);
            sort_by(&mut v, |a, b| a.0 < b.0);
            let keys = |v: &[(u8, u32)]| v.iter().map(|p| p.0).collect::<Vec<_>>();
            prop_assert_eq!(keys(&v), keys(&want));
        }
    }

    #[test]
    fn byte_strings_in_byte_order() {
        let mut v: Vec<&[u8]> = vec![b"b", b"", b"ab", b"a", b"\xff", b"B"];
        sort(&mut v);
        assert_eq!(v, [&b""[..], b"B", b"a", b"ab", b"b", b"\xff"]);
    }
}
