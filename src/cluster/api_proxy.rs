//! Which proxy, if any, the API server is reached through, decided as kubectl (client-go)
//! decides it: the kubeconfig cluster's `proxy-url` if it has one; else `HTTPS_PROXY`
//! (or `https_proxy`) unless `NO_PROXY` (or `no_proxy`) exempts the server, as Go's
//! `golang.org/x/net/http/httpproxy` reads them; never for `localhost` or a loopback
//! address. The kube client reads the same variables but matches `NO_PROXY` against the
//! proxy's host instead of the server's; [`proxy_for`]'s answer replaces its own.

use std::net::IpAddr;

/// The proxy for `server` (`explicit`: the kubeconfig cluster's `proxy-url`; `var`:
/// the environment), or what is wrong with the one given.
pub(crate) fn proxy_for(
    server: &http::Uri,
    explicit: Option<&str>,
    var: impl Fn(&str) -> Option<String>,
) -> Result<Option<http::Uri>, String> {
    if let Some(url) = explicit.filter(|u| !u.is_empty()) {
        return parse(url, "the kubeconfig's proxy-url").map(Some);
    }
    // As Go's client reads them: an empty value is unset (`NO_PROXY=` does not hide
    // `no_proxy`).
    let set = |name: &str| var(name).filter(|v| !v.is_empty());
    let either = |upper: &str, lower: &str| set(upper).or_else(|| set(lower));
    let Some(url) = either("HTTPS_PROXY", "https_proxy") else {
        return Ok(None);
    };
    let host = server.host().unwrap_or_default();
    let port = server.port_u16().unwrap_or(443);
    let exempt = either("NO_PROXY", "no_proxy").is_some_and(|list| exempts(&list, host, port));
    if exempt || is_loopback(host) {
        return Ok(None);
    }
    // Go's reading: a proxy without a scheme is an HTTP proxy.
    let url = if url.contains("://") {
        url
    } else {
        format!("http://{url}")
    };
    parse(&url, "HTTPS_PROXY").map(Some)
}

/// A proxy URL of a kind the client can use.
fn parse(url: &str, from: &str) -> Result<http::Uri, String> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| format!("the proxy {:?} ({from}) is not a URL: {e}", shown(url)))?;
    match uri.scheme_str() {
        Some("http" | "https" | "socks5") if uri.host().is_some() => Ok(uri),
        _ => Err(format!(
            "the proxy {} ({from}) is not an http://, https:// or socks5:// URL, the kinds of proxy tf-spawner (as kubectl) can use",
            shown(url)
        )),
    }
}

/// A URL as messages show it: without its `user:password@`, which a proxy URL often
/// carries.
pub(crate) fn shown(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let host = match rest[..end].rfind('@') {
        Some(at) => &rest[at + 1..],
        None => rest,
    };
    if scheme.is_empty() && !url.contains("://") {
        host.to_string()
    } else {
        format!("{scheme}://{host}")
    }
}

/// Whether a bearer token would cross the network in clear: the API server is
/// `http://` and not on this machine.
pub(crate) fn token_in_clear(server: &http::Uri) -> bool {
    server.scheme_str() == Some("http") && !is_loopback(server.host().unwrap_or_default())
}

pub(crate) fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether `NO_PROXY`'s `list` exempts `host:port`: `*`; an IP address or a CIDR
/// range; a domain name, which matches itself and its subdomains (`.name`: subdomains
/// only, `*.name` the same); each with an optional `:port`. Empty entries are skipped.
fn exempts(list: &str, host: &str, port: u16) -> bool {
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let ip = host.parse::<IpAddr>().ok();
    list.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .any(|entry| {
            if entry == "*" {
                return true;
            }
            if let (Some(ip), Ok(net)) = (ip, entry.parse::<ipnet::IpNet>()) {
                return net.contains(&ip);
            }
            let (name, want_port) = split_port(entry);
            if want_port.is_some_and(|p| p != port) {
                return false;
            }
            if let (Some(ip), Ok(entry_ip)) = (ip, name.parse::<IpAddr>()) {
                return ip == entry_ip;
            }
            let name = name.trim_start_matches('*').to_ascii_lowercase();
            match name.strip_prefix('.') {
                Some(domain) => host.ends_with(&format!(".{domain}")),
                None => host == name || host.ends_with(&format!(".{name}")),
            }
        })
}

/// `name:port` → (`name`, its port); an IPv6 address without brackets has no port.
fn split_port(entry: &str) -> (&str, Option<u16>) {
    if let Some(rest) = entry.strip_prefix('[') {
        let (addr, after) = rest.split_once(']').unwrap_or((rest, ""));
        return (addr, after.strip_prefix(':').and_then(|p| p.parse().ok()));
    }
    match entry.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') => (name, port.parse().ok()),
        _ => (entry, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decide(server: &str, explicit: Option<&str>, env: &[(&str, &str)]) -> Option<String> {
        let server: http::Uri = server.parse().unwrap();
        let var = |k: &str| {
            env.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| v.to_string())
        };
        proxy_for(&server, explicit, var)
            .unwrap()
            .map(|u| u.to_string())
    }

    const PROXY: (&str, &str) = ("HTTPS_PROXY", "http://proxy.corp:3128");

    #[test]
    fn the_environments_proxy_unless_no_proxy_exempts_the_server() {
        let api = "https://api.k8s.example.org:6443";
        assert_eq!(decide(api, None, &[]), None);
        assert_eq!(
            decide(api, None, &[PROXY]).as_deref(),
            Some("http://proxy.corp:3128/")
        );
        assert_eq!(
            decide(api, None, &[("https_proxy", "proxy.corp:3128")]).as_deref(),
            Some("http://proxy.corp:3128/"),
            "no scheme: HTTP, as Go reads it"
        );
        for exempting in [
            "*",
            "example.org",
            ".example.org",
            "*.example.org",
            "k8s.example.org:6443",
            "other.net, api.k8s.example.org",
            "foo,,example.org",
        ] {
            assert_eq!(
                decide(api, None, &[PROXY, ("NO_PROXY", exempting)]),
                None,
                "{exempting}"
            );
        }
        for not in [
            "xample.org",
            "k8s.example.org:443",
            "api.k8s.example.org.net",
            ".api.k8s.example.org",
        ] {
            assert!(
                decide(api, None, &[PROXY, ("no_proxy", not)]).is_some(),
                "{not}"
            );
        }
        let ip = "https://10.1.2.3:6443";
        assert_eq!(decide(ip, None, &[PROXY, ("NO_PROXY", "10.0.0.0/8")]), None);
        assert_eq!(decide(ip, None, &[PROXY, ("NO_PROXY", "10.1.2.3")]), None);
        assert!(decide(ip, None, &[PROXY, ("NO_PROXY", "10.1.2.4,192.168.0.0/16")]).is_some());
        // The proxy's own host in NO_PROXY says nothing about the server.
        assert!(decide(ip, None, &[PROXY, ("NO_PROXY", "proxy.corp")]).is_some());
    }

    #[test]
    fn an_empty_variable_is_unset_and_urls_are_shown_without_userinfo() {
        let api = "https://api.k8s.example.org:6443";
        let lower = ("https_proxy", "http://proxy.corp:3128");
        assert_eq!(
            decide(api, None, &[("HTTPS_PROXY", ""), lower]).as_deref(),
            Some("http://proxy.corp:3128/")
        );
        let exempt = ("no_proxy", "example.org");
        assert_eq!(decide(api, None, &[PROXY, ("NO_PROXY", ""), exempt]), None);
        assert_eq!(shown("http://user:pw@proxy:3128/x"), "http://proxy:3128/x");
        assert_eq!(shown("socks5://a@b:pw@h:1"), "socks5://h:1");
        assert_eq!(shown("user:pw@proxy:3128"), "proxy:3128");
        assert_eq!(shown("http://proxy:3128"), "http://proxy:3128");
        let server: http::Uri = "https://a:1".parse().unwrap();
        let bad = proxy_for(&server, Some("ftp://u:SECRET@p:21"), |_| None).unwrap_err();
        assert!(!bad.contains("SECRET"), "{bad}");
        assert!(token_in_clear(&"http://10.0.0.1:8080".parse().unwrap()));
        assert!(!token_in_clear(&"http://127.0.0.1:8001".parse().unwrap()));
        assert!(!token_in_clear(&"https://10.0.0.1".parse().unwrap()));
    }

    #[test]
    fn loopback_is_never_proxied_and_the_kubeconfigs_proxy_url_always_is() {
        for local in [
            "https://127.0.0.1:6443",
            "https://localhost:6443",
            "https://[::1]:6443",
        ] {
            assert_eq!(decide(local, None, &[PROXY]), None, "{local}");
        }
        let explicit = Some("socks5://127.0.0.1:1080");
        assert_eq!(
            decide("https://127.0.0.1:6443", explicit, &[("NO_PROXY", "*")]).as_deref(),
            Some("socks5://127.0.0.1:1080/")
        );
        let server: http::Uri = "https://a:1".parse().unwrap();
        let none = |_: &str| None;
        let bad = proxy_for(&server, Some("ftp://p:21"), none).unwrap_err();
        assert!(
            bad.contains("ftp://p:21 (the kubeconfig's proxy-url) is not an http://"),
            "{bad}"
        );
    }
}
