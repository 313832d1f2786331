//! The closest known name to a misspelt one (an option, a subcommand, an
//! `ENVSHIM_*` variable), by edit distance: clap's `suggestions` feature
//! would add a dependency and bytes for the same answer (docs/reference.md §1).

/// Names longer than this are compared by their first this many bytes: the
/// distance is computed in a row of this size, whatever the input.
const MAX_COMPARED: usize = 64;

/// The optimal-string-alignment distance (insertions, deletions,
/// substitutions and swaps of two neighbours, each 1) between `a` and `b`.
#[cfg_attr(envshim_size, optimize(size))]
pub fn distance(a: &[u8], b: &[u8]) -> usize {
    let (a, b) = (&a[..a.len().min(MAX_COMPARED)], &b[..b.len().min(MAX_COMPARED)]);
    // Three rows: two back (for a swap), one back, this one. Row 0 (the
    // distances from "") starts last: the first rotation makes it "one back".
    let mut rows = [[0usize; MAX_COMPARED + 1]; 3];
    for (j, cell) in rows[2].iter_mut().enumerate().take(b.len() + 1) {
        *cell = j;
    }
    for i in 1..=a.len() {
        rows.rotate_left(1);
        let [two, one, row] = &mut rows;
        row[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (one[j] + 1).min(row[j - 1] + 1).min(one[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(two[j - 2] + 1);
            }
            row[j] = d;
        }
    }
    rows[2][b.len()]
}

/// The known name closest to `word`, if it is close enough to be a
/// misspelling of it: at most a third of its length away (and at least 1, at most 3).
#[cfg_attr(envshim_size, optimize(size))]
pub fn closest<'k>(word: &[u8], known: &[&'k str]) -> Option<&'k str> {
    let best = known.iter().map(|k| (distance(word, k.as_bytes()), *k)).min_by_key(|&(d, _)| d)?;
    (best.0 <= (best.1.len() / 3).clamp(1, 3)).then_some(best.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(distance(b"", b""), 0);
        assert_eq!(distance(b"", b"abc"), 3);
        assert_eq!(distance(b"abc", b""), 3);
        assert_eq!(distance(b"manfest", b"manifest"), 1);
        assert_eq!(distance(b"ENVSHIM_MANIFST", b"ENVSHIM_MANIFEST"), 1);
        assert_eq!(distance(b"chekc", b"check"), 1);
        assert_eq!(distance(b"kitten", b"sitting"), 3);
        // A short word is not close to a long one that merely ends like it.
        assert_eq!(distance(b"aa", b"optional"), 7);
        assert_eq!(distance(b"aa", b"args"), 3);
        // A short word against a long one: each missing byte counts.
        assert_eq!(distance(b"-x", b"--help"), 5);
        assert_eq!(distance(b"ab", b"abcdef"), 4);
        assert_eq!(distance(b"abcdef", b"ab"), 4);
        let long = vec![b'x'; 100_000];
        assert_eq!(distance(&long, b"x"), MAX_COMPARED - 1);
    }

    #[test]
    fn closest_only_when_close() {
        let known = ["--manifest", "--env", "--env-file", "--verbose"];
        assert_eq!(closest(b"--manfest", &known), Some("--manifest"));
        assert_eq!(closest(b"--env-fil", &known), Some("--env-file"));
        assert_eq!(closest(b"--verbos", &known), Some("--verbose"));
        assert_eq!(closest(b"--bogus", &known), None);
        assert_eq!(closest(b"x", &[]), None);
        assert_eq!(closest(b"-x", &["--help", "--version"]), None);
    }
}
