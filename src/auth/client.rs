//! Who sent a request: the peer, or the client a trusted proxy names.

use std::net::IpAddr;

use axum::http::HeaderMap;
use perfjournal_store::auth::throttle::ProxyNet;

/// The client's address: the peer's, unless the peer is a trusted proxy; then the
/// right-most address in `X-Forwarded-For` that is not itself a trusted proxy (what a
/// client writes to the left of it cannot be trusted). An unreadable entry stops the walk
/// at the last trusted hop.
pub fn client_ip(
    peer: Option<IpAddr>,
    headers: &HeaderMap,
    trusted: &[ProxyNet],
) -> Option<IpAddr> {
    let peer = peer?;
    let is_trusted = |ip: IpAddr| trusted.iter().any(|n| n.contains(ip));
    if !is_trusted(peer) {
        return Some(peer);
    }
    let hops: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    let mut client = peer;
    for hop in hops.iter().rev() {
        let Ok(ip) = hop.parse::<IpAddr>() else {
            break;
        };
        client = ip;
        if !is_trusted(ip) {
            break;
        }
    }
    Some(client)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_is_the_right_most_untrusted_hop_behind_a_trusted_proxy() {
        let trusted: Vec<ProxyNet> = ["10.0.0.0/8", "127.0.0.1"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let mut h = HeaderMap::new();
        h.insert(
            "x-forwarded-for",
            "1.1.1.1, 203.0.113.9, 10.0.0.2".parse().unwrap(),
        );
        let ip = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        assert_eq!(client_ip(ip("127.0.0.1"), &h, &trusted), ip("203.0.113.9"));
        // An untrusted peer's header is ignored.
        assert_eq!(client_ip(ip("192.0.2.1"), &h, &trusted), ip("192.0.2.1"));
        // No header: the proxy itself.
        let empty = HeaderMap::new();
        assert_eq!(
            client_ip(ip("127.0.0.1"), &empty, &trusted),
            ip("127.0.0.1")
        );
    }
}
