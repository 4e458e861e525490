//! Proxies between the user and the API server, as corporate and campus networks have:
//! a kubeconfig cluster's `proxy-url`, an HTTP proxy (CONNECT) or a SOCKS5 one, as
//! kubectl takes them. The proxy here is a small one of the test's, which records where
//! each tunnel went. (`HTTPS_PROXY` and `NO_PROXY`, which kubectl never applies to a
//! server on loopback like the test server, are decided by `src/cluster/api_proxy.rs`, and
//! tested there.)

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use crate::support::Env;

/// A forward proxy on loopback that speaks HTTP CONNECT and SOCKS5 (no auth), and
/// records the target of each tunnel it opened.
struct Proxy {
    port: u16,
    tunnels: Arc<Mutex<Vec<String>>>,
}

impl Proxy {
    fn start() -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().unwrap().port();
        let tunnels = Arc::new(Mutex::new(Vec::new()));
        let seen = tunnels.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let seen = seen.clone();
                std::thread::spawn(move || tunnel(conn, &seen));
            }
        });
        Proxy { port, tunnels }
    }

    fn tunnels(&self) -> Vec<String> {
        self.tunnels.lock().unwrap().clone()
    }
}

/// One client: the handshake (SOCKS5 if its first byte is 5, else an HTTP CONNECT),
/// then bytes both ways until either side closes.
fn tunnel(mut client: TcpStream, seen: &Mutex<Vec<String>>) -> io::Result<()> {
    let mut first = [0u8; 1];
    client.read_exact(&mut first)?;
    let target = if first[0] == 5 {
        socks5_target(&mut client)?
    } else {
        let mut head = first.to_vec();
        while !head.ends_with(b"\r\n\r\n") {
            client.read_exact(&mut first)?;
            head.push(first[0]);
        }
        let head = String::from_utf8_lossy(&head).into_owned();
        let target = head
            .strip_prefix("CONNECT ")
            .and_then(|rest| rest.split(' ').next())
            .ok_or_else(|| io::Error::other(format!("not a CONNECT: {head}")))?
            .to_string();
        client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
        target
    };
    let mut server = TcpStream::connect(&target)?;
    seen.lock().unwrap().push(target);
    let (mut from_client, mut to_server) = (client.try_clone()?, server.try_clone()?);
    std::thread::spawn(move || {
        let _ = io::copy(&mut from_client, &mut to_server);
        let _ = to_server.shutdown(Shutdown::Write);
    });
    io::copy(&mut server, &mut client)?;
    client.shutdown(Shutdown::Write)
}

/// A SOCKS5 greeting and CONNECT request (RFC 1928) after its version byte; answers
/// "succeeded" and returns the target as `host:port`.
fn socks5_target(client: &mut TcpStream) -> io::Result<String> {
    let mut n = [0u8; 1];
    client.read_exact(&mut n)?;
    let mut methods = vec![0u8; usize::from(n[0])];
    client.read_exact(&mut methods)?;
    client.write_all(&[5, 0])?;
    let mut request = [0u8; 4];
    client.read_exact(&mut request)?;
    let host = match request[3] {
        1 => {
            let mut ip = [0u8; 4];
            client.read_exact(&mut ip)?;
            std::net::Ipv4Addr::from(ip).to_string()
        }
        3 => {
            client.read_exact(&mut n)?;
            let mut name = vec![0u8; usize::from(n[0])];
            client.read_exact(&mut name)?;
            String::from_utf8_lossy(&name).into_owned()
        }
        other => return Err(io::Error::other(format!("address type {other}"))),
    };
    let mut port = [0u8; 2];
    client.read_exact(&mut port)?;
    client.write_all(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0])?;
    Ok(format!("{host}:{}", u16::from_be_bytes(port)))
}

/// The kubeconfig of `env` with `proxy-url: url` on its cluster.
fn with_proxy_url(env: &Env, url: &str) -> std::path::PathBuf {
    let text = std::fs::read_to_string(&env.kubeconfig).unwrap();
    let server = format!("    server: {}", env.server.url());
    assert!(text.contains(&server), "{text}");
    let text = text.replace(&server, &format!("{server}\n    proxy-url: {url}"));
    env.write("kubeconfig-proxy", text)
}

#[test]
fn a_kubeconfigs_proxy_url_carries_every_request_http_or_socks5() {
    let env = Env::new();
    let proxy = Proxy::start();
    let server = env.server.url().trim_start_matches("https://").to_string();
    let script = env.script();
    let script = script.to_str().unwrap();

    // An HTTP proxy (CONNECT), as a campus network has.
    let http = with_proxy_url(&env, &format!("http://127.0.0.1:{}", proxy.port));
    env.run_as(&http, &["-t", "px", script]).success();
    assert!(env.server.get("pods", "default", "px-worker-0").is_some());
    let tunnels = proxy.tunnels();
    assert!(
        !tunnels.is_empty() && tunnels.iter().all(|t| *t == server),
        "{tunnels:?}"
    );

    // A SOCKS5 proxy, as `ssh -D` makes one.
    let socks = with_proxy_url(&env, &format!("socks5://127.0.0.1:{}", proxy.port));
    let before = proxy.tunnels().len();
    env.run_as(&socks, &["-d", "-t", "px", "-y"]).success();
    assert!(
        env.names("default").is_empty(),
        "{:?}",
        env.names("default")
    );
    assert!(proxy.tunnels().len() > before, "{:?}", proxy.tunnels());

    // HTTPS_PROXY is not used for a server on loopback, as kubectl does not use it.
    let out = crate::support::run(
        env.cmd()
            .env("HTTPS_PROXY", "http://127.0.0.1:9")
            .args(["-t", "px", script]),
    );
    out.success();
}

#[test]
fn a_proxy_that_cannot_be_used_is_one_line_naming_it() {
    let env = Env::new();
    // Nothing listens on port 9 of loopback.
    let dead = with_proxy_url(&env, "http://127.0.0.1:9");
    let out = env.run_as(&dead, &["--give-up-after", "1s", "status", "px"]);
    out.failure(1)
        .stderr_has("through the proxy http://127.0.0.1:9/");
    assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
    let ftp = with_proxy_url(&env, "ftp://proxy.example:21");
    let out = env.run_as(&ftp, &["status", "px"]);
    out.failure(1).stderr_has(
        "the proxy ftp://proxy.example:21 (the kubeconfig's proxy-url) is not an http://, https:// or socks5:// URL",
    );
    assert_eq!(out.stderr.lines().count(), 1, "{out:#?}");
}

/// A proxy's `user:password@` never reaches a message: neither a connection error's
/// "through the proxy …" nor a refusal of the proxy's kind.
#[test]
fn a_proxys_password_is_never_shown() {
    let env = Env::new();
    let dead = with_proxy_url(&env, "http://alice:S3cretPw@127.0.0.1:9");
    let out = env.run_as(&dead, &["--give-up-after", "1s", "status", "px"]);
    out.failure(1)
        .stderr_has("through the proxy http://127.0.0.1:9/");
    assert!(
        !out.stderr.contains("S3cretPw") && !out.stderr.contains("alice"),
        "{out:#?}"
    );
    let ftp = with_proxy_url(&env, "ftp://alice:S3cretPw@proxy.example:21");
    let out = env.run_as(&ftp, &["status", "px"]);
    out.failure(1)
        .stderr_has("the proxy ftp://proxy.example:21 (the kubeconfig's proxy-url)");
    assert!(!out.stderr.contains("S3cretPw"), "{out:#?}");
}

/// A `NO_PROXY` the Kubernetes client cannot parse (`foo, *`: it takes `*` only alone;
/// `a,,b`) once failed every command: now it is one warning line, and the command
/// goes on with the kubeconfig read by hand (its CA and token: the test server's TLS).
#[test]
fn a_no_proxy_the_client_cannot_parse_is_one_warning() {
    let env = Env::new();
    let script = env.script();
    for (i, no_proxy) in ["foo, *", "a,,b"].into_iter().enumerate() {
        let tag = format!("np{i}");
        let out = crate::support::run(
            env.cmd()
                .env("HTTPS_PROXY", "http://127.0.0.1:9")
                .env("NO_PROXY", no_proxy)
                .args(["-t", &tag, script.to_str().unwrap()]),
        );
        out.success().stderr_has(&format!(
            "warning: NO_PROXY={no_proxy:?}: an entry the Kubernetes client cannot parse"
        ));
        assert_eq!(out.stderr.matches("warning:").count(), 1, "{out:#?}");
        assert!(
            env.server
                .get("pods", "default", &format!("{tag}-worker-0"))
                .is_some()
        );
    }
}
