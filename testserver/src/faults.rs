//! Injected faults: which request gets which failure.

use std::time::Duration;

/// A fault for the `nth`..`nth+times` requests matching `method` and `path_contains`
/// (matched against the path and the raw query, `path?query`).
#[derive(Debug, Clone)]
pub struct Fault {
    pub method: Option<String>,
    pub path_contains: Option<String>,
    /// 1-based index among the matching requests.
    pub nth: usize,
    pub times: usize,
    pub action: FaultAction,
}

#[derive(Debug, Clone)]
pub enum FaultAction {
    Status {
        code: u16,
        retry_after: Option<u64>,
    },
    /// Close the connection without an answer; the request is not carried out.
    DropConnection,
    /// Carry the request out, then close the connection without an answer (a lost
    /// response: the client cannot tell whether it happened).
    DropResponse,
    Hang(Duration),
    /// Answer 200 and begin the body, then never send a byte, the connection held open
    /// for as long as the client keeps it: a connection that froze without breaking (a
    /// watch or a followed log behind a stuck proxy, a node gone mute). The request is
    /// not carried out.
    Silent,
    /// Put an object in the store (as [`crate::TestServer::insert`] does), then carry
    /// the request out: another client's write that landed just before this one (two
    /// spawns of one tag at once).
    Plant {
        resource: String,
        namespace: String,
        object: serde_json::Value,
    },
}

impl Fault {
    /// Matches requests of `method` ("" or "*" = any) whose `path?query` contains `path`.
    pub fn on(method: &str, path: &str) -> Fault {
        Fault {
            method: (!method.is_empty() && method != "*").then(|| method.to_uppercase()),
            path_contains: (!path.is_empty()).then(|| path.to_string()),
            nth: 1,
            times: 1,
            action: FaultAction::Status {
                code: 500,
                retry_after: None,
            },
        }
    }
    pub fn any() -> Fault {
        Fault::on("", "")
    }
    pub fn nth(mut self, n: usize) -> Fault {
        self.nth = n.max(1);
        self
    }
    pub fn times(mut self, n: usize) -> Fault {
        self.times = n;
        self
    }
    /// Every matching request from `nth` on.
    pub fn always(self) -> Fault {
        self.times(usize::MAX)
    }
    pub fn status(mut self, code: u16) -> Fault {
        self.action = FaultAction::Status {
            code,
            retry_after: None,
        };
        self
    }
    /// 429 with a Retry-After header.
    pub fn too_many_requests(mut self, retry_after: u64) -> Fault {
        self.action = FaultAction::Status {
            code: 429,
            retry_after: Some(retry_after),
        };
        self
    }
    pub fn drop_connection(mut self) -> Fault {
        self.action = FaultAction::DropConnection;
        self
    }
    pub fn drop_response(mut self) -> Fault {
        self.action = FaultAction::DropResponse;
        self
    }
    pub fn hang(mut self, d: Duration) -> Fault {
        self.action = FaultAction::Hang(d);
        self
    }
    /// Plants `object` (a `resource` in `namespace`) just before the request is
    /// carried out.
    pub fn plant(mut self, resource: &str, namespace: &str, object: serde_json::Value) -> Fault {
        self.action = FaultAction::Plant {
            resource: resource.to_string(),
            namespace: namespace.to_string(),
            object,
        };
        self
    }
    pub fn silent(mut self) -> Fault {
        self.action = FaultAction::Silent;
        self
    }
}

pub(crate) struct FaultState {
    pub fault: Fault,
    pub seen: usize,
}

/// Counts the request against every fault it matches; returns the action of the
/// first fault whose window it falls in.
pub(crate) fn check(faults: &mut [FaultState], method: &str, target: &str) -> Option<FaultAction> {
    let mut hit = None;
    for st in faults.iter_mut() {
        let f = &st.fault;
        let method_ok = f
            .method
            .as_deref()
            .is_none_or(|m| m.eq_ignore_ascii_case(method));
        let path_ok = f
            .path_contains
            .as_deref()
            .is_none_or(|p| target.contains(p));
        if !(method_ok && path_ok) {
            continue;
        }
        st.seen += 1;
        let end = f.nth.saturating_add(f.times);
        if hit.is_none() && st.seen >= f.nth && st.seen < end {
            hit = Some(f.action.clone());
        }
    }
    hit
}
