//! Serves the API test server until stdin closes, for trying the binary (or a
//! profiler) by hand: `cargo run --release -p kube-testserver --example serve -- DIR [LATENCY_MS]`
//! writes `DIR/kubeconfig` (admin) and prints its path.

use std::io::Read;
use std::time::Duration;

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("usage: serve DIR [LATENCY_MS]");
    let latency: u64 = args.next().map_or(0, |l| l.parse().expect("latency in ms"));
    let server = kube_testserver::TestServer::start();
    server.set_latency(Duration::from_millis(latency));
    std::fs::create_dir_all(&dir).expect("create DIR");
    let kubeconfig = server.write_kubeconfig(std::path::Path::new(&dir), "admin", None);
    println!("{}", kubeconfig.display());
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}
