//! Helpers of the converter's tests: the generated workloads, the harness
//! that converts and runs them, a model of the kubelet, and the quoted YAML
//! reader.

pub mod generate;
pub mod harness;
pub mod kubelet;
pub mod quoted_yaml;
