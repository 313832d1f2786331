//! Test inputs as YAML that kubectl reads as the JSON they were made from.

/// `v` as block YAML with every string double-quoted (a JSON string is a
/// YAML double-quoted one): kubectl's YAML 1.1 reads it as `v`, where a YAML
/// 1.2 emitter writes `Y` or `on` plain, which kubectl reads as booleans.
pub fn block_yaml(v: &serde_json::Value) -> String {
    fn node(v: &serde_json::Value, at: usize, out: &mut String) {
        let pad = " ".repeat(at);
        match v {
            serde_json::Value::Object(m) if !m.is_empty() => {
                for (k, x) in m {
                    out.push_str(&format!("\n{pad}{}:", serde_json::Value::from(k.as_str())));
                    node(x, at + 2, out);
                }
            }
            serde_json::Value::Array(a) if !a.is_empty() => {
                for x in a {
                    out.push_str(&format!("\n{pad}-"));
                    node(x, at + 2, out);
                }
            }
            x => out.push_str(&format!(" {x}")),
        }
    }
    let mut out = String::new();
    node(v, 0, &mut out);
    out.trim_start().to_string() + "\n"
}
