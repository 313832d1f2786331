//! The rules, one a row: what the API server (`pkg/apis/core/validation`,
//! Kubernetes 1.34+: `ValidateEnv`, `validateEnvVarValueFrom`, the key
//! selectors, `validateFileKeySelector`, the check that a `fileKeyRef`'s
//! volume is one of the pod's) and the JSON decoder before it refuse in what
//! the converter moves out of its sight: a converted container's `env`,
//! `command` and `args`. Plus the kubelet's limit on a `fileKeyRef` key and
//! `envFrom[].fileRef`, which is envshim's and no Kubernetes field.
//!
//! A field is `LIST[].a.b` (each item of the container's list `LIST`, the
//! field `a.b` below it) or a field of the container. A rule applies where
//! the field's parent is there: an entry without `valueFrom` has no
//! `valueFrom.fileKeyRef.path` to check. Null is absent (kubectl drops it).
//! A field is refused once, by its first rule that fails, and nothing below
//! a field refused is checked. The cases that specify each row:
//! `cases.jsonl` beside this file.

use super::Check::*;
use super::Rule;

const fn rule(field: &'static str, check: super::Check, what: &'static str) -> Rule {
    Rule { field, check, what }
}

/// A converted container's.
pub(super) const CONVERTED: &[Rule] = &[
    // The program line: what Kubernetes runs, in envshim's manifest now.
    rule("command", List, "expected a list of strings"),
    rule("command[]", Text, "expected a string"),
    rule("args", List, "expected a list of strings"),
    rule("args[]", Text, "expected a string"),
    // Each env entry (ValidateEnv).
    rule("env[]", Mapping, "expected a mapping (name, value or valueFrom)"),
    rule("env[].name", Required, "required: every env entry has a name"),
    rule("env[].name", EnvName, "is not a valid variable name: printable ASCII characters except '=' (the API server's rule since Kubernetes 1.30)"),
    rule("env[].value", Text, "expected a string"),
    rule("env[].valueFrom", Mapping, "expected a mapping"),
    rule("env[].valueFrom", OneSource, "needs exactly one source: fileKeyRef, configMapKeyRef, secretKeyRef, fieldRef or resourceFieldRef"),
    rule("env[].valueFrom", NotBesideValue, "may not be set when value is not empty"),
    // validateConfigMapKeySelector, validateSecretKeySelector.
    rule("env[].valueFrom.configMapKeyRef", Mapping, "expected a mapping (name, key, optional)"),
    rule(
        "env[].valueFrom.configMapKeyRef.name",
        DnsSubdomain,
        "the ConfigMap's name: required, a lowercase RFC 1123 subdomain (a-z, 0-9, '-' and '.', at most 253 characters)",
    ),
    rule("env[].valueFrom.configMapKeyRef.key", Required, "required: the ConfigMap's key"),
    rule(
        "env[].valueFrom.configMapKeyRef.key",
        ConfigMapKey,
        "is not a valid key: a-z, A-Z, 0-9, '-', '_' and '.', at most 253 characters, not '.' and not starting with '..'",
    ),
    rule("env[].valueFrom.configMapKeyRef.optional", Bool, "expected true or false"),
    rule("env[].valueFrom.secretKeyRef", Mapping, "expected a mapping (name, key, optional)"),
    rule(
        "env[].valueFrom.secretKeyRef.name",
        DnsSubdomain,
        "the Secret's name: required, a lowercase RFC 1123 subdomain (a-z, 0-9, '-' and '.', at most 253 characters)",
    ),
    rule("env[].valueFrom.secretKeyRef.key", Required, "required: the Secret's key"),
    rule(
        "env[].valueFrom.secretKeyRef.key",
        ConfigMapKey,
        "is not a valid key: a-z, A-Z, 0-9, '-', '_' and '.', at most 253 characters, not '.' and not starting with '..'",
    ),
    rule("env[].valueFrom.secretKeyRef.optional", Bool, "expected true or false"),
    // validateObjectFieldSelector, validateContainerResourceFieldSelector.
    rule("env[].valueFrom.fieldRef", Mapping, "expected a mapping (fieldPath)"),
    rule("env[].valueFrom.fieldRef.fieldPath", Required, "required: the pod's field (metadata.name, status.podIP, ...)"),
    rule("env[].valueFrom.resourceFieldRef", Mapping, "expected a mapping (resource)"),
    rule("env[].valueFrom.resourceFieldRef.resource", Required, "required: the container's resource (limits.cpu, requests.memory, ...)"),
    // validateFileKeySelector, and the volume check of the pod's spec.
    rule("env[].valueFrom.fileKeyRef", Mapping, "expected a mapping (volumeName, path, key, optional)"),
    rule("env[].valueFrom.fileKeyRef.volumeName", Required, "required: the volume the env file is in"),
    rule("env[].valueFrom.fileKeyRef.volumeName", DnsLabel, "is not a volume's name: a lowercase RFC 1123 label (a-z, 0-9 and '-', at most 63 characters)"),
    rule("env[].valueFrom.fileKeyRef.volumeName", PodVolume, "is not among the pod's volumes"),
    rule("env[].valueFrom.fileKeyRef.path", Required, "required: the env file's path in the volume"),
    rule("env[].valueFrom.fileKeyRef.path", Relative, "is absolute: it must be relative to the volume"),
    rule("env[].valueFrom.fileKeyRef.path", NoBacksteps, "has a '..' element: the path must stay inside the volume"),
    rule("env[].valueFrom.fileKeyRef.key", Required, "required: the key in the env file"),
    rule("env[].valueFrom.fileKeyRef.key", EnvName, "is not a valid variable name: printable ASCII characters except '='"),
    // The kubelet's (and envshim's) at the start, not the API server's.
    rule("env[].valueFrom.fileKeyRef.key", KeyLength, "is over 128 bytes, the kubelet's limit for a fileKeyRef key"),
    rule("env[].valueFrom.fileKeyRef.optional", Bool, "expected true or false"),
];

/// Every container's (of a pod's `containers`, `initContainers` and
/// `ephemeralContainers`): not Kubernetes, an envshim manifest's.
pub(super) const EVERY: &[Rule] = &[rule(
    "envFrom[].fileRef",
    Absent,
    "is envshim's own field, not one of the Kubernetes API (the API server drops or refuses it): it belongs in an envshim manifest \
         (--manifest, docs/reference.md §3); in a pod, name each key with env[].valueFrom.fileKeyRef, which the converter converts",
)];
