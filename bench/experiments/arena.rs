//! EXPERIMENT (bench/size.sh variant `arena`), not part of the build: a bump
//! allocator for a process that lives a few hundred microseconds.
//!
//! musl's allocator (mallocng) maps and unmaps small regions all the time: at
//! start-up on the benchmark's manifest it made ~160 of envshim's ~175 system
//! calls, and each region it gives back and maps again costs fresh page
//! faults. This allocator hands out memory from a 4 MiB static region (.bss:
//! no system call, pages faulted in only as they are used), gives back only
//! the most recent allocation, grows the most recent one in place, and falls
//! back to the system allocator when the region is used up — so a
//! long-running `--init` supervisor that kept allocating would move to
//! malloc after 4 MiB, never fail.
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering};

const SIZE: usize = 4 << 20;

#[repr(C, align(4096))]
struct Region(UnsafeCell<[u8; SIZE]>);
// SAFETY: bytes are handed out once each, through the atomic cursor.
unsafe impl Sync for Region {}
static REGION: Region = Region(UnsafeCell::new([0; SIZE]));
/// Offset of the first free byte.
static NEXT: AtomicUsize = AtomicUsize::new(0);

pub struct Arena;

fn base() -> usize {
    REGION.0.get() as usize
}

fn ours(p: *mut u8) -> bool {
    (base()..base() + SIZE).contains(&(p as usize))
}

unsafe impl GlobalAlloc for Arena {
    #[inline(never)]
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let mut cur = NEXT.load(Ordering::Relaxed);
        loop {
            let start = (base() + cur + l.align() - 1) & !(l.align() - 1);
            let end = start - base() + l.size();
            if end > SIZE {
                return System.alloc(l);
            }
            match NEXT.compare_exchange_weak(cur, end, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return start as *mut u8,
                Err(c) => cur = c,
            }
        }
    }

    #[inline(never)]
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        if !ours(p) {
            return System.dealloc(p, l);
        }
        // Only the most recent allocation gives its bytes back.
        let off = p as usize - base();
        let _ = NEXT.compare_exchange(off + l.size(), off, Ordering::Relaxed, Ordering::Relaxed);
    }

    #[inline(never)]
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if !ours(p) {
            return System.realloc(p, l, new);
        }
        let off = p as usize - base();
        if new <= l.size() {
            return p;
        }
        // The most recent allocation grows in place.
        if off + new <= SIZE
            && NEXT.compare_exchange(off + l.size(), off + new, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        {
            return p;
        }
        let q = self.alloc(Layout::from_size_align_unchecked(new, l.align()));
        if !q.is_null() {
            std::ptr::copy_nonoverlapping(p, q, l.size());
            self.dealloc(p, l);
        }
        q
    }
}
