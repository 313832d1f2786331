//! The platform's variables seen from inside the container: the service
//! links of a Service named `envshim*`, and `KUBERNETES_SERVICE_URL`.

use super::Environment;

/// Is `name` a variable the kubelet gives every container for a Service named
/// `envshim` or `envshim-*` (service links: `<S>_SERVICE_HOST`,
/// `<S>_SERVICE_PORT[_<port name>]`, `<S>_PORT`, `<S>_PORT_<n>_<TCP|UDP|SCTP>`
/// and its `_PROTO`, `_PORT`, `_ADDR`)? Such a variable is the program's, not
/// envshim's configuration (no configuration variable has one of these forms).
pub(super) fn service_link(name: &[u8]) -> bool {
    let word = |s: &[u8]| !s.is_empty() && s.iter().all(|&c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_');
    // A Service's name (a DNS label), upper-cased, `-` as `_`.
    let service = |s: &[u8]| s == b"ENVSHIM" || s.strip_prefix(b"ENVSHIM_").is_some_and(|rest| word(rest) && !rest.ends_with(b"_"));
    let ends = |suffix: &[u8]| name.strip_suffix(suffix).is_some_and(service);
    if ends(b"_SERVICE_HOST") || ends(b"_SERVICE_PORT") || ends(b"_PORT") {
        return true;
    }
    let port_name = (0..name.len()).any(|i| name[i..].starts_with(b"_SERVICE_PORT_") && service(&name[..i]) && word(&name[i + 14..]));
    let port = |s: &[u8]| {
        [&b"_TCP"[..], b"_UDP", b"_SCTP"].iter().filter_map(|p| s.strip_suffix(*p)).any(|rest| {
            let digits = rest.iter().rev().take_while(|c| c.is_ascii_digit()).count();
            digits > 0 && rest[..rest.len() - digits].strip_suffix(b"_PORT_").is_some_and(service)
        })
    };
    port_name || port(name) || [&b"_PROTO"[..], b"_PORT", b"_ADDR"].iter().filter_map(|x| name.strip_suffix(*x)).any(port)
}

/// `https://HOST:PORT`, with an IPv6 HOST in brackets; None unless both are set and non-empty.
pub(super) fn service_url(env: &Environment) -> Option<Vec<u8>> {
    let host = env.get(b"KUBERNETES_SERVICE_HOST").filter(|h| !h.is_empty())?;
    let port = env.get(b"KUBERNETES_SERVICE_PORT").filter(|p| !p.is_empty())?;
    let bracket = host.contains(&b':') && !host.starts_with(b"[");
    let mut url = b"https://".to_vec();
    if bracket {
        url.push(b'[');
    }
    url.extend_from_slice(host);
    if bracket {
        url.push(b']');
    }
    url.push(b':');
    url.extend_from_slice(port);
    Some(url)
}
