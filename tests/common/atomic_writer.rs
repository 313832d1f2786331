//! A Secret or ConfigMap volume as the kubelet's atomic writer lays it out
//! and updates it: the files in a timestamped directory, `..data` a link to
//! it swapped by a rename, a link for each top-level key.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// Publishes `files` into `dir` the way the kubelet's atomic writer does: a
/// new timestamped directory `..2026_…_VERSION` holding the files, a
/// `..data_tmp` link to it renamed over `..data`, a link `KEY -> ..data/KEY`
/// for each new top-level key, the links of keys no longer there removed,
/// then the previous timestamped directory removed.
pub fn publish(dir: &Path, version: u32, files: &[(String, Vec<u8>)]) {
    let ts = format!("..2026_01_02_03_04_05.{version:09}");
    let old = fs::read_link(dir.join("..data")).ok();
    for (key, value) in files {
        let p = dir.join(&ts).join(key);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, value).unwrap();
    }
    fs::create_dir_all(dir.join(&ts)).unwrap();
    let _ = fs::remove_file(dir.join("..data_tmp"));
    symlink(&ts, dir.join("..data_tmp")).unwrap();
    fs::rename(dir.join("..data_tmp"), dir.join("..data")).unwrap();
    let top: std::collections::BTreeSet<&str> = files.iter().map(|(k, _)| k.split('/').next().unwrap()).collect();
    for key in &top {
        let link = dir.join(key);
        if fs::symlink_metadata(&link).is_err() {
            symlink(format!("..data/{key}"), link).unwrap();
        }
    }
    for entry in fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if !name.starts_with('.') && !top.contains(name.as_str()) {
            fs::remove_file(dir.join(&name)).unwrap();
        }
    }
    if let Some(old) = old {
        fs::remove_dir_all(dir.join(old)).unwrap();
    }
}

/// A volume at `dir`, published anew at each [`KubeletVolume::swap`].
pub struct KubeletVolume {
    dir: PathBuf,
    version: u32,
}

impl KubeletVolume {
    pub fn new(dir: &Path, files: &[(&str, &str)]) -> KubeletVolume {
        fs::create_dir_all(dir).unwrap();
        let mut v = KubeletVolume { dir: dir.to_path_buf(), version: 0 };
        v.swap(files);
        v
    }

    /// Writes `files` into a new timestamped directory and swaps `..data` to it.
    pub fn swap(&mut self, files: &[(&str, &str)]) {
        self.version += 1;
        let files: Vec<(String, Vec<u8>)> = files.iter().map(|(k, v)| (k.to_string(), v.as_bytes().to_vec())).collect();
        publish(&self.dir, self.version, &files);
    }
}
