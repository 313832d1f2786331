//! `--watch`'s inotify set: the directories of the sources, each with the
//! entries that matter in it. An event is only a reason to read again; a
//! directory inotify refuses (its limits, a file system without it) is left
//! to the poll, and said once.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use super::Watched;
use crate::error::escape;
use crate::limits::MAX_WATCHES;
use crate::report;
use crate::sys::{Notify, WatchDescriptor};

/// The inotify watches of one read: each directory, and the names of its
/// entries that matter (none listed: every entry).
pub(super) struct Notifier {
    notify: Option<Notify>,
    names: Vec<(WatchDescriptor, Option<Vec<Vec<u8>>>)>,
    /// The sources these watches are for.
    armed: Vec<Watched>,
    /// inotify is unavailable: said once, then the poll alone.
    off: bool,
    /// A directory inotify refused: said once for the whole run.
    refusal_said: bool,
}

impl Notifier {
    /// Watches the directories of `files`.
    #[cfg_attr(envshim_size, optimize(size))]
    pub(super) fn new(files: &[Watched]) -> Notifier {
        let mut n = Notifier { notify: None, names: Vec::new(), armed: Vec::new(), off: false, refusal_said: false };
        n.rearm(files);
        n
    }

    /// Watches the directories of `files` with a fresh instance (a directory
    /// replaced since the last read is watched anew), the old one closed
    /// first so that its watches count against no limit.
    #[cfg_attr(envshim_size, optimize(size))]
    pub(super) fn rearm(&mut self, files: &[Watched]) {
        self.notify = None;
        self.names.clear();
        self.armed = files.to_vec();
        if self.off {
            return;
        }
        match Notify::new() {
            Ok(notify) => self.notify = Some(notify),
            Err(e) => {
                report::warn(&format!("--watch: inotify is unavailable ({}); the sources are read again every --watch-poll only", crate::error::os_reason(&e)));
                self.off = true;
                return;
            }
        }
        let mut refused = None;
        for (dir, name) in directories(files) {
            if self.names.len() >= MAX_WATCHES {
                refused.get_or_insert((dir, format!("more than {MAX_WATCHES} directories")));
                break;
            }
            if let Err(refusal) = self.add(dir, name) {
                refused.get_or_insert(refusal);
            }
        }
        if let Some((dir, why)) = refused.filter(|_| !self.refusal_said) {
            self.refusal_said = true;
            let shown = if dir.is_empty() { ".".to_string() } else { escape(&dir) };
            report::warn(&format!(
                "--watch: inotify refused to watch {shown} ({why}); a change there is seen at the next --watch-poll only (the other sources are still watched)"
            ));
        }
    }

    /// Whether these watches are for `files`.
    pub(super) fn follows(&self, files: &[Watched]) -> bool {
        self.armed == files
    }

    pub(super) fn notify(&self) -> Option<&Notify> {
        self.notify.as_ref()
    }

    /// Watches `dir` for `name` (None: any entry); a directory that does not
    /// exist yet is watched through its nearest existing parent. Err: the
    /// directory inotify refused, and why.
    #[cfg_attr(envshim_size, optimize(size))]
    fn add(&mut self, mut dir: Vec<u8>, mut name: Option<Vec<u8>>) -> Result<(), (Vec<u8>, String)> {
        let Some(notify) = &self.notify else { return Ok(()) };
        for _ in 0..64 {
            let shown = if dir.is_empty() { OsStr::new(".") } else { OsStr::from_bytes(&dir) };
            match notify.watch(shown) {
                Ok(wd) => {
                    match self.names.iter_mut().find(|(w, _)| *w == wd) {
                        None => self.names.push((wd, name.map(|n| vec![n, b"..data".to_vec()]))),
                        Some((_, list)) => match (list.as_mut(), name) {
                            (Some(names), Some(n)) if !names.contains(&n) => names.push(n),
                            (Some(_), None) => *list = None,
                            _ => {}
                        },
                    }
                    return Ok(());
                }
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) && !dir.is_empty() && dir != b"/" => {
                    let (parent, last) = split(&dir);
                    name = Some(last.to_vec());
                    dir = parent.to_vec();
                }
                Err(e) => {
                    let limit = if e.raw_os_error() == Some(libc::ENOSPC) { ": the limit is fs.inotify.max_user_watches" } else { "" };
                    return Err((dir, format!("{}{limit}", crate::error::os_reason(&e))));
                }
            }
        }
        Ok(())
    }

    /// Whether an event since the last call concerns a source.
    #[cfg_attr(envshim_size, optimize(size))]
    pub(super) fn changed(&mut self) -> bool {
        let Some(notify) = &self.notify else { return false };
        let Ok(events) = notify.events() else { return true };
        events.iter().any(|e| {
            e.whole
                || match self.names.iter().find(|(w, _)| *w == e.watch) {
                    Some((_, Some(names))) => e.name.as_ref().is_some_and(|n| names.iter().any(|m| m.as_slice() == n.as_bytes())),
                    Some((_, None)) => true,
                    None => false,
                }
        })
    }
}

/// The directories to watch for `files`, each with the entry that matters
/// in it (None: every entry): a file's directory for its name, a volume's
/// root for the path's first component (and its `..data`, in every list).
#[cfg_attr(envshim_size, optimize(size))]
fn directories(files: &[Watched]) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let mut dirs = Vec::new();
    for f in files {
        let path = f.path.trim_ascii_end().strip_suffix(b"/").unwrap_or(&f.path);
        match &f.root {
            Some(root) => {
                let root = root.as_bytes();
                let first = path.split(|&b| b == b'/').find(|c| !c.is_empty()).unwrap_or(path);
                dirs.push((root.to_vec(), Some(first.to_vec())));
                let (parent, name) = split(path);
                if !parent.is_empty() {
                    dirs.push((join(root, parent), Some(name.to_vec())));
                }
            }
            None => {
                let (parent, name) = split(path);
                dirs.push((parent.to_vec(), Some(name.to_vec())));
                if f.dir {
                    dirs.push((path.to_vec(), None));
                }
            }
        }
    }
    dirs.dedup();
    dirs
}

/// `a/b/c` → (`a/b`, `c`); `c` → (``, `c`); `/c` → (`/`, `c`).
pub(super) fn split(path: &[u8]) -> (&[u8], &[u8]) {
    match path.iter().rposition(|&b| b == b'/') {
        Some(0) => (&path[..1], &path[1..]),
        Some(i) => (&path[..i], &path[i + 1..]),
        None => (&path[..0], path),
    }
}

#[cfg_attr(envshim_size, optimize(size))]
pub(super) fn join(root: &[u8], path: &[u8]) -> Vec<u8> {
    let mut p = root.to_vec();
    if !p.ends_with(b"/") {
        p.push(b'/');
    }
    p.extend_from_slice(path.strip_prefix(b"/").unwrap_or(path));
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_of_volume_files_and_paths() {
        let files = [
            Watched { root: Some("/v".into()), path: b"a/b.env".to_vec(), dir: false },
            Watched { root: None, path: b"app.env".to_vec(), dir: false },
            Watched { root: None, path: b"/run/secrets".to_vec(), dir: true },
        ];
        let dirs = directories(&files);
        let want: Vec<(Vec<u8>, Option<Vec<u8>>)> = vec![
            (b"/v".to_vec(), Some(b"a".to_vec())),
            (b"/v/a".to_vec(), Some(b"b.env".to_vec())),
            (b"".to_vec(), Some(b"app.env".to_vec())),
            (b"/run".to_vec(), Some(b"secrets".to_vec())),
            (b"/run/secrets".to_vec(), None),
        ];
        assert_eq!(dirs, want);
        assert_eq!(split(b"/x"), (&b"/"[..], &b"x"[..]));
    }
}
