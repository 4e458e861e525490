//! Where the waits of a sweep's runs tell the sweep what they see (`Seen`: a run's
//! state, its training): a mailbox that keeps, of each run's state and of its training,
//! only the newest word not yet read, in the order the first of them came. Each word
//! is a snapshot (the training with its whole history), so a newer one replaces an
//! unread one and nothing the reader uses is lost; a reader slow to read (a sweep
//! writing its record) holds at most two words a run, never a queue that grows with
//! the runs' progress (issue 61: no unbounded channel between a follow and its reader).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

/// A word that makes an older one not read yet needless.
pub trait Newer {
    /// Whether `self` says all that `older` did.
    fn replaces(&self, older: &Self) -> bool;
}

struct Shared<T> {
    words: Mutex<VecDeque<T>>,
    notify: Notify,
    senders: AtomicUsize,
    reader: AtomicBool,
}

impl<T> Shared<T> {
    fn words(&self) -> MutexGuard<'_, VecDeque<T>> {
        self.words.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A mailbox's two ends.
pub fn channel<T: Newer>() -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Shared {
        words: Mutex::new(VecDeque::new()),
        notify: Notify::new(),
        senders: AtomicUsize::new(1),
        reader: AtomicBool::new(true),
    });
    (
        Sender {
            shared: shared.clone(),
        },
        Receiver { shared },
    )
}

/// What tells (cloned for each run).
pub struct Sender<T> {
    shared: Arc<Shared<T>>,
}

impl<T: Newer> Sender<T> {
    /// Leaves `word`, in the place of an unread one it replaces; back if nobody reads.
    pub fn send(&self, word: T) -> Result<(), T> {
        if !self.shared.reader.load(Ordering::Acquire) {
            return Err(word);
        }
        let mut words = self.shared.words();
        match words.iter_mut().find(|old| word.replaces(old)) {
            Some(old) => *old = word,
            None => words.push_back(word),
        }
        drop(words);
        self.shared.notify.notify_one();
        Ok(())
    }
}

impl<T> std::fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender").finish_non_exhaustive()
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.shared.senders.fetch_add(1, Ordering::AcqRel);
        Sender {
            shared: self.shared.clone(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        if self.shared.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.shared.notify.notify_one();
        }
    }
}

/// What reads.
pub struct Receiver<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Receiver<T> {
    /// The oldest word not read, if any.
    pub fn try_recv(&mut self) -> Option<T> {
        self.shared.words().pop_front()
    }

    /// The oldest word not read, once there is one; `None` when none can come (every
    /// sender gone). Cancel-safe (for `select!`): a word is taken only when returned.
    pub async fn recv(&mut self) -> Option<T> {
        loop {
            let told = self.shared.notify.notified();
            if let Some(word) = self.shared.words().pop_front() {
                return Some(word);
            }
            if self.shared.senders.load(Ordering::Acquire) == 0 {
                return None;
            }
            told.await;
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        self.shared.reader.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::{Newer, channel};

    /// (run, kind, value): a newer word of the same run and kind replaces an older one.
    #[derive(Debug, PartialEq)]
    struct Word(&'static str, u8, u32);

    impl Newer for Word {
        fn replaces(&self, older: &Word) -> bool {
            (self.0, self.1) == (older.0, older.1)
        }
    }

    #[test]
    fn an_unread_word_is_replaced_in_its_place_and_the_mailbox_holds_two_a_run() {
        let (tx, mut rx) = channel();
        for epoch in 0..1000 {
            tx.send(Word("a", 0, epoch)).unwrap();
            tx.send(Word("b", 1, epoch)).unwrap();
            tx.send(Word("a", 1, epoch)).unwrap();
        }
        assert_eq!(rx.shared.words().len(), 3);
        assert_eq!(rx.try_recv(), Some(Word("a", 0, 999)));
        assert_eq!(rx.try_recv(), Some(Word("b", 1, 999)));
        tx.send(Word("a", 0, 1000)).unwrap();
        assert_eq!(rx.try_recv(), Some(Word("a", 1, 999)));
        assert_eq!(rx.try_recv(), Some(Word("a", 0, 1000)));
        assert_eq!(rx.try_recv(), None);
    }

    #[test]
    fn a_reader_waits_for_a_word_and_hears_when_none_can_come() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (tx, mut rx) = channel();
            let other = tx.clone();
            let told = tokio::spawn(async move {
                other.send(Word("a", 0, 1)).unwrap();
            });
            assert_eq!(rx.recv().await, Some(Word("a", 0, 1)));
            told.await.unwrap();
            drop(tx);
            assert_eq!(rx.recv().await, None);
            let (tx, rx) = channel::<Word>();
            drop(rx);
            assert_eq!(tx.send(Word("a", 0, 2)), Err(Word("a", 0, 2)));
        });
    }
}
