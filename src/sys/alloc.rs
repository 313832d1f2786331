//! The binary's allocator ([`Arena`]) and its test.

/// The binary's allocator: a bump arena for a process that usually lives a
/// few hundred microseconds before `execve`.
///
/// musl's allocator (mallocng) maps and unmaps small regions all the time:
/// most of envshim's system calls at start-up (docs/performance.md).
/// This one hands out memory from a 4 MiB static region (`.bss`: no system
/// call, pages faulted in only as used), gives the most recent allocation
/// back to the cursor, grows the most recent one in place, keeps other freed
/// blocks of 16 bytes or more on free lists by size (power-of-two classes) for
/// the next allocations that fit, so that memory already faulted in is used
/// again (clap's command, grown `Vec`s, the manifest's tree; docs/performance.md),
/// and falls back to the system allocator once the region is used up, so an
/// `--init` supervisor that kept allocating would move to malloc, never fail.
pub struct Arena;

/// Free lists: class `k` holds freed blocks of at least `2^k` bytes; a block
/// holds the next block's address and its own size in its first 16 bytes.
/// Slot 0 ([`NONEMPTY`]) holds the set of non-empty classes instead.
struct FreeLists(std::cell::UnsafeCell<[usize; usize::BITS as usize]>);
// SAFETY: only touched with `FREE_LOCK` held.
unsafe impl Sync for FreeLists {}
static FREE: FreeLists = FreeLists(std::cell::UnsafeCell::new([0; usize::BITS as usize]));
static FREE_LOCK: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Runs `f` on the free lists, with the lock held.
fn with_free_lists<T>(f: impl FnOnce(&mut [usize; usize::BITS as usize]) -> T) -> T {
    use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
    while FREE_LOCK.compare_exchange_weak(false, true, Acquire, Relaxed).is_err() {
        std::hint::spin_loop();
    }
    // SAFETY: the lock makes this the only reference to the lists.
    let r = f(unsafe { &mut *FREE.0.get() });
    FREE_LOCK.store(false, Release);
    r
}

/// A freed block of the region that fits `l`, taken off its free list: the
/// first one at the head of the smallest class that fits, or of any larger
/// class, that holds the request at its alignment. What the request leaves of the block (16 bytes or more) is
/// listed again, so pages already faulted in serve small requests too.
fn take_free(l: std::alloc::Layout) -> Option<*mut u8> {
    if l.size() < 16 {
        return None;
    }
    // Every block of class ceil(log2(size)) or above is large enough.
    let class = (usize::BITS - (l.size() - 1).leading_zeros()) as usize;
    let used = (l.size() + 15) & !15;
    with_free_lists(|lists| {
        // The non-empty classes at or above `class` (bit k of `lists[NONEMPTY]`: class k).
        let mut classes = lists[NONEMPTY] >> class << class;
        loop {
            let c = classes.trailing_zeros() as usize;
            if c == usize::BITS as usize {
                return None;
            }
            let head = lists[c];
            // The bytes that bring the request to its alignment (a `Vec<u8>`'s
            // block may start anywhere): they stay free, listed when 16 or more.
            let pad = head.wrapping_neg() & (l.align() - 1);
            // SAFETY: `head` is a freed block of the region, at least 16 bytes,
            // whose first two words the dealloc that listed it wrote.
            let (next, size) = unsafe { ((head as *const usize).read_unaligned(), (head as *const usize).add(1).read_unaligned()) };
            if size >= pad + l.size() {
                lists[c] = next;
                if next == 0 {
                    lists[NONEMPTY] &= !(1 << c);
                }
                if pad >= 16 {
                    push_free(lists, head as *mut u8, pad);
                }
                if size >= pad + used + 16 {
                    push_free(lists, (head + pad + used) as *mut u8, size - pad - used);
                }
                return Some((head + pad) as *mut u8);
            }
            classes &= classes - 1;
        }
    })
}

/// Lists the freed block `p` of `size` bytes (at least 16) under class floor(log2(size)).
fn put_free(p: *mut u8, size: usize) {
    with_free_lists(|lists| push_free(lists, p, size))
}

#[inline]
fn push_free(lists: &mut [usize; usize::BITS as usize], p: *mut u8, size: usize) {
    let class = (usize::BITS - 1 - size.leading_zeros()) as usize;
    // SAFETY: `p` is a block of the region, no longer used, of `size` >= 16 bytes.
    unsafe {
        (p as *mut usize).write_unaligned(lists[class]);
        (p as *mut usize).add(1).write_unaligned(size);
    }
    lists[class] = p as usize;
    lists[NONEMPTY] |= 1 << class;
}

/// The slot of the free lists that holds the set of non-empty classes, not a
/// list (class 0 would hold blocks of 1 byte; blocks are 16 bytes or more).
const NONEMPTY: usize = 0;

const ARENA_BYTES: usize = 4 << 20;

#[repr(C, align(4096))]
struct Region(std::cell::UnsafeCell<[u8; ARENA_BYTES]>);
// SAFETY: each byte is handed out to one owner at a time, through the atomic cursor.
unsafe impl Sync for Region {}
static REGION: Region = Region(std::cell::UnsafeCell::new([0; ARENA_BYTES]));
/// Offset of the first free byte of the region.
static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn region_base() -> usize {
    REGION.0.get() as usize
}

fn in_region(p: *mut u8) -> bool {
    (region_base()..region_base() + ARENA_BYTES).contains(&(p as usize))
}

// SAFETY: `alloc` returns either a fresh, suitably aligned range of the region
// that no other allocation overlaps (the cursor moves past it atomically) or
// the system allocator's block; `dealloc`/`realloc` route each pointer back to
// whichever gave it out.
unsafe impl std::alloc::GlobalAlloc for Arena {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        use std::sync::atomic::Ordering::Relaxed;
        if let Some(p) = take_free(l) {
            return p;
        }
        let mut cur = NEXT.load(Relaxed);
        loop {
            let start = (region_base() + cur + l.align() - 1) & !(l.align() - 1);
            let end = start - region_base() + l.size();
            if end > ARENA_BYTES {
                // SAFETY: forwarding the caller's valid layout.
                return unsafe { std::alloc::System.alloc(l) };
            }
            match NEXT.compare_exchange_weak(cur, end, Relaxed, Relaxed) {
                Ok(_) => return start as *mut u8,
                Err(now) => cur = now,
            }
        }
    }

    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        if !in_region(p) {
            // SAFETY: `p` came from the system allocator with layout `l`.
            return unsafe { std::alloc::System.dealloc(p, l) };
        }
        // The most recent allocation gives its bytes back to the cursor; any
        // other of 16 bytes or more goes on a free list.
        let off = p as usize - region_base();
        let top = NEXT.compare_exchange(off + l.size(), off, std::sync::atomic::Ordering::Relaxed, std::sync::atomic::Ordering::Relaxed);
        if top.is_err() && l.size() >= 16 {
            put_free(p, l.size());
        }
    }

    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, new: usize) -> *mut u8 {
        use std::sync::atomic::Ordering::Relaxed;
        if !in_region(p) {
            // SAFETY: `p` came from the system allocator with layout `l`.
            return unsafe { std::alloc::System.realloc(p, l, new) };
        }
        let off = p as usize - region_base();
        if new <= l.size() {
            return p;
        }
        // The most recent allocation grows in place.
        if off + new <= ARENA_BYTES && NEXT.compare_exchange(off + l.size(), off + new, Relaxed, Relaxed).is_ok() {
            return p;
        }
        // SAFETY: `new` is non-zero (it exceeds `l.size()`) and `l.align()` is a valid alignment.
        let q = unsafe { self.alloc(std::alloc::Layout::from_size_align_unchecked(new, l.align())) };
        if !q.is_null() {
            // SAFETY: both blocks are valid for `l.size()` bytes and distinct.
            unsafe {
                std::ptr::copy_nonoverlapping(p, q, l.size());
                self.dealloc(p, l);
            }
        }
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::{GlobalAlloc, Layout};

    /// The only test that uses the region (the test binary's allocator is the system one).
    #[test]
    fn arena_bump_lifo_grow_in_place_and_fallback() {
        let a = Arena;
        let l = |n| Layout::from_size_align(n, 8).unwrap();
        // SAFETY: every pointer used is one the arena returned and not yet freed.
        unsafe {
            let p = a.alloc(l(100));
            assert!(in_region(p) && p as usize % 8 == 0);
            p.write_bytes(7, 100);
            // The most recent allocation grows in place and keeps its bytes.
            let g = a.realloc(p, l(100), 5000);
            assert_eq!(g, p);
            assert_eq!(*g.add(99), 7);
            // A newer allocation stops it growing in place: it moves, bytes copied.
            let q = a.alloc(l(16));
            let m = a.realloc(g, l(5000), 6000);
            assert_ne!(m, g);
            assert_eq!(*m.add(99), 7);
            // LIFO: freeing the most recent allocation gives its bytes back.
            a.dealloc(m, l(6000));
            let r = a.alloc(l(6000));
            assert_eq!(r, m);
            a.dealloc(r, l(6000));
            a.dealloc(q, l(16));
            // A freed block below the cursor is listed and given to the next
            // allocation it fits; a block too small for a request is not.
            let x = a.alloc(l(40));
            let y = a.alloc(l(16));
            y.write_bytes(9, 16);
            a.dealloc(x, l(40));
            assert_ne!(a.alloc(l(48)), x, "40 bytes cannot hold 48");
            let z = a.alloc(l(32));
            assert_eq!(z, x, "class 5 (32..63 bytes) serves a 32-byte request");
            z.write_bytes(3, 32);
            assert!((0..16).all(|i| *y.add(i) == 9), "the neighbour is untouched");
            a.dealloc(z, l(32));
            a.dealloc(y, l(16));
            // A request takes a block of a larger class when its own is empty,
            // and what it leaves (16-byte steps) is listed for the next ones.
            let b = a.alloc(l(1000));
            let g = a.alloc(l(16));
            a.dealloc(b, l(1000));
            let s1 = a.alloc(l(100));
            assert_eq!(s1, b, "class 9 (1000 bytes) serves 100 when classes 7 and 8 are empty");
            let s2 = a.alloc(l(200));
            assert_eq!(s2, b.add(112), "the rest of the block serves the next request");
            s1.write_bytes(1, 100);
            s2.write_bytes(2, 200);
            assert!((0..100).all(|i| *s1.add(i) == 1), "the pieces do not overlap");
            let s3 = a.alloc(l(700));
            assert!(s3 as usize >= g as usize + 16, "680 bytes left cannot hold 700: fresh memory");
            // A block that starts off the request's alignment (a `Vec<u8>`'s)
            // serves it from its first aligned byte.
            let one = Layout::from_size_align(1, 1).unwrap();
            while a.alloc(one) as usize % 8 != 0 {}
            let bytes = Layout::from_size_align(5000, 1).unwrap();
            let odd = a.alloc(bytes);
            assert_eq!(odd as usize % 8, 1);
            a.alloc(one);
            a.dealloc(odd, bytes);
            assert_eq!(a.alloc(l(4000)), odd.add(7), "5000 bytes hold 7 of padding and 4000");
            // Alignment is honoured.
            let big = Layout::from_size_align(10, 4096).unwrap();
            let s = a.alloc(big);
            assert_eq!(s as usize % 4096, 0);
            // Beyond the region: the system allocator, and back to it on free.
            let huge = a.alloc(l(ARENA_BYTES + 1));
            assert!(!huge.is_null() && !in_region(huge));
            huge.write_bytes(1, ARENA_BYTES + 1);
            let huge2 = a.realloc(huge, l(ARENA_BYTES + 1), ARENA_BYTES + 4096);
            a.dealloc(huge2, l(ARENA_BYTES + 4096));
        }
    }
}
