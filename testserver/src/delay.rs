//! The added latency (`TestServer::set_latency`), kept to within a tenth of a millisecond.
//!
//! `tokio::time::sleep` rounds every deadline up to the timer's next 1 ms tick and
//! fires only when a worker gets round to the timer wheel, so a "2 ms" latency was 2 to
//! 3 ms in practice: the benchmark's ideal (rounds × latency) then measured the timer, not
//! the client. Here one thread keeps the deadlines in a heap and sleeps on a channel
//! until the earliest (a futex wait with a timeout: the kernel's high-resolution timers),
//! then wakes the waiting request through a oneshot channel. std and tokio's channels are
//! all it takes; a timerfd crate would cost a file descriptor per request.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

struct Waiter {
    deadline: Instant,
    /// Arrival order, so that equal deadlines never compare the senders.
    seq: u64,
    wake: oneshot::Sender<()>,
}

impl PartialEq for Waiter {
    fn eq(&self, other: &Self) -> bool {
        (self.deadline, self.seq) == (other.deadline, other.seq)
    }
}
impl Eq for Waiter {}
impl PartialOrd for Waiter {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Waiter {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.deadline, self.seq).cmp(&(other.deadline, other.seq))
    }
}

/// A timer thread; it ends when this is dropped.
pub struct Delays {
    to_timer: Mutex<mpsc::Sender<(Instant, oneshot::Sender<()>)>>,
}

impl Delays {
    pub fn start() -> Delays {
        let (to_timer, requests) = mpsc::channel();
        std::thread::Builder::new()
            .name("kube-testserver-delays".into())
            .spawn(move || timer(requests))
            .expect("start the delay thread");
        Delays {
            to_timer: Mutex::new(to_timer),
        }
    }

    /// Waits `d` from now.
    pub async fn sleep(&self, d: Duration) {
        let (wake, woken) = oneshot::channel();
        let sent = self
            .to_timer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send((Instant::now() + d, wake));
        if sent.is_ok() {
            let _ = woken.await;
        }
    }
}

fn timer(requests: mpsc::Receiver<(Instant, oneshot::Sender<()>)>) {
    let mut heap: BinaryHeap<Reverse<Waiter>> = BinaryHeap::new();
    let mut seq = 0;
    loop {
        let now = Instant::now();
        while heap.peek().is_some_and(|Reverse(w)| w.deadline <= now) {
            if let Some(Reverse(w)) = heap.pop() {
                let _ = w.wake.send(());
            }
        }
        let next = match heap.peek() {
            Some(Reverse(w)) => requests.recv_timeout(w.deadline - now),
            None => requests.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match next {
            Ok((deadline, wake)) => {
                seq += 1;
                heap.push(Reverse(Waiter {
                    deadline,
                    seq,
                    wake,
                }));
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn no_delay_ends_early() {
        let delays = std::sync::Arc::new(Delays::start());
        let start = Instant::now();
        let waits = (0..20u64).rev().map(|i| {
            let delays = delays.clone();
            async move {
                delays.sleep(Duration::from_millis(i)).await;
                (start.elapsed(), i)
            }
        });
        let done = futures_util::future::join_all(waits).await;
        for (elapsed, i) in done {
            assert!(
                elapsed >= Duration::from_millis(i),
                "{i} ms ended after {elapsed:?}"
            );
        }
    }
}
