//! Temporary directories standing for volumes, and the manifest entries that
//! mount and read them.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A temporary directory standing for a volume (or holding a manifest).
pub struct Volume {
    dir: tempfile::TempDir,
}

impl Default for Volume {
    fn default() -> Self {
        Self::new()
    }
}

impl Volume {
    pub fn new() -> Volume {
        let dir = tempfile::Builder::new().prefix("envshim-test-").tempdir().expect("tempdir");
        // Readable by the unprivileged user some tests run as.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        Volume { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The directory as a string, for `mountPath` and `--volume`.
    pub fn dir(&self) -> String {
        self.dir.path().to_str().expect("utf-8 temp path").to_string()
    }

    pub fn join(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel.trim_start_matches('/'))
    }

    /// Writes `rel` (creating its directories) and returns its full path.
    pub fn file(&self, rel: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, contents).unwrap();
        p
    }

    /// Full path of `rel` as a string.
    pub fn file_str(&self, rel: &str, contents: impl AsRef<[u8]>) -> String {
        self.file(rel, contents).to_str().unwrap().to_string()
    }

    pub fn subdir(&self, rel: &str) -> PathBuf {
        let p = self.join(rel);
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    pub fn symlink(&self, rel: &str, target: &str) -> PathBuf {
        let p = self.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::os::unix::fs::symlink(target, &p).unwrap();
        p
    }

    /// Writes a manifest (`manifest.json`) and returns its path as a string.
    pub fn manifest(&self, json: &serde_json::Value) -> String {
        self.file_str("manifest.json", serde_json::to_vec_pretty(json).unwrap())
    }

    /// `NAME=DIR` for `--volume`.
    pub fn volume_arg(&self, name: &str) -> String {
        format!("{name}={}", self.dir())
    }

    pub fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.join(rel)).unwrap()
    }
}

/// A JSON manifest `env[]` entry reading `key` of `path` in volume `vol`.
pub fn file_key_ref(name: &str, vol: &str, path: &str, key: &str, optional: bool) -> serde_json::Value {
    serde_json::json!({"name": name, "valueFrom": {"fileKeyRef": {"volumeName": vol, "path": path, "key": key, "optional": optional}}})
}

/// A JSON manifest `envFrom[]` entry importing `path` of volume `vol`.
pub fn file_ref(vol: &str, path: &str, optional: bool, prefix: Option<&str>) -> serde_json::Value {
    let mut v = serde_json::json!({"fileRef": {"volumeName": vol, "path": path, "optional": optional}});
    if let Some(p) = prefix {
        v["prefix"] = serde_json::Value::from(p);
    }
    v
}

/// `volumeMounts[]` entry.
pub fn mount(name: &str, vol: &Volume) -> serde_json::Value {
    serde_json::json!({"name": name, "mountPath": vol.dir()})
}

/// A volume named `v` holding `files`, and a manifest (in a second directory)
/// mounting it with the fields of `rest` merged in: (volume, manifest dir, manifest path).
pub fn setup(files: &[(&str, &str)], rest: serde_json::Value) -> (Volume, Volume, String) {
    let vol = Volume::new();
    for (p, c) in files {
        vol.file(p, c);
    }
    let d = Volume::new();
    let mut m = serde_json::json!({"volumeMounts": [mount("v", &vol)]});
    for (k, val) in rest.as_object().expect("rest is an object") {
        m[k] = val.clone();
    }
    let path = d.manifest(&m);
    (vol, d, path)
}
