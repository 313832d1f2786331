//! Converting again: a pod converted before is converted from the
//! originals its containers carry, with the settings given now.

use serde_json::Value;

use super::Mapping;
use envshim::converter::Error;

/// A pod spec with a container converted before, undone in place
/// (`unconvert.rs`), to be converted again from the original it carries
/// with these settings (as `unconvert` then `convert` would). Ok: the spec
/// as it came (None: nothing converted before). Err: a hand edit since,
/// refused as `unconvert` refuses it, at its path relative to the spec.
pub(super) fn undone(spec: &mut Mapping) -> Result<Option<Mapping>, Vec<Error>> {
    let ours = |c: &Value| crate::unconvert::is_converted(c) && !crate::unconvert::wired_by_hand(c);
    let lists = ["initContainers", "containers"].into_iter().filter_map(|l| spec.get(l).and_then(Value::as_array));
    if !lists.flatten().any(ours) {
        return Ok(None);
    }
    let before = spec.clone();
    crate::unconvert::undo_pod(spec, true)?;
    Ok(Some(before))
}

/// The image of a pod spec's `envshim-install` initContainer.
pub(super) fn installer_image(spec: &Mapping) -> Option<String> {
    let installers = spec.get("initContainers").and_then(Value::as_array)?;
    let installer = installers.iter().find(|c| c.get("name").and_then(Value::as_str) == Some(crate::installer::INSTALLER))?;
    installer.get("image").and_then(Value::as_str).map(str::to_string)
}
