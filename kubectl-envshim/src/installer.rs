//! The `envshim-install` initContainer, which copies envshim into the
//! `envshim` volume, and that volume: what a converted pod gains besides its
//! converted containers (none when envshim is in the image, `--shim-path`).

use serde_json::Value;

use crate::cli::DEFAULT_SHIM_PATH;
use crate::convert::{mapping, string, strings, Mapping, Sequence};
use crate::settings::Settings;

/// Where the `envshim` volume is mounted, in the installer and in converted containers.
pub const SHIM_DIR: &str = "/.envshim/bin";
pub const SHIM_VOLUME: &str = "envshim";
const INSTALLER: &str = "envshim-install";
/// The user the installer runs as: a `scratch` image has no USER, and
/// `runAsNonRoot` alone would make the kubelet refuse to start it. 65532 is
/// the `nonroot` user of distroless images.
const INSTALLER_UID: u64 = 65532;

/// The `envshim` volume and the `envshim-install` initContainer, each first
/// in its list, unless the pod has them already.
pub fn add(spec: &mut Mapping, image: &str, s: &Settings) {
    let named = |list: &Sequence, name: &str| list.iter().any(|v| v.get("name").and_then(Value::as_str) == Some(name));
    let volume = mapping([("name", string(SHIM_VOLUME)), ("emptyDir", mapping([("sizeLimit", string("4Mi"))]))]);
    let installer = mapping([
        ("name", string(INSTALLER)),
        ("image", string(image)),
        ("command", strings(&["/envshim", "install", DEFAULT_SHIM_PATH])),
        ("volumeMounts", Value::Array(vec![mapping([("name", string(SHIM_VOLUME)), ("mountPath", string(SHIM_DIR))])])),
        // Requests and limits, small (it copies one file): a LimitRange, a
        // ResourceQuota or a policy engine requiring them admits the pod.
        ("resources", {
            let both = || mapping([("cpu", string(&s.installer_cpu)), ("memory", string(&s.installer_memory))]);
            mapping([("requests", both()), ("limits", both())])
        }),
        (
            "securityContext",
            mapping([
                ("allowPrivilegeEscalation", Value::Bool(false)),
                ("readOnlyRootFilesystem", Value::Bool(true)),
                ("runAsNonRoot", Value::Bool(true)),
                ("runAsUser", Value::Number(INSTALLER_UID.into())),
                ("runAsGroup", Value::Number(INSTALLER_UID.into())),
                ("capabilities", mapping([("drop", strings(&["ALL"]))])),
                ("seccompProfile", mapping([("type", string("RuntimeDefault"))])),
            ]),
        ),
    ]);
    for (list, item, name) in [("volumes", volume, SHIM_VOLUME), ("initContainers", installer, INSTALLER)] {
        match spec.get_mut(list).and_then(Value::as_array_mut) {
            Some(items) if named(items, name) => {}
            Some(items) => items.insert(0, item),
            None => {
                spec.insert(list.to_string(), Value::Array(vec![item]));
            }
        }
    }
}
