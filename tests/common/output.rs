//! What the user saw of one run of the binary, shared by the fast suite (tests/it) and
//! the real-server suite (tests/real).

#![allow(dead_code)]

/// What the user saw.
#[derive(Debug)]
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    #[track_caller]
    pub fn success(&self) -> &Self {
        assert_eq!(self.code, 0, "expected success, got {self:#?}");
        self
    }

    /// The exit code, and stderr one clear line (no panic, no backtrace).
    #[track_caller]
    pub fn failure(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "expected exit {code}, got {self:#?}");
        assert!(self.stderr.starts_with("error: "), "{self:#?}");
        assert_eq!(
            self.stderr.trim_end().lines().count(),
            1,
            "one line: {self:#?}"
        );
        assert!(!self.stderr.contains("panicked"), "{self:#?}");
        self
    }

    #[track_caller]
    pub fn stderr_has(&self, needle: &str) -> &Self {
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}: {self:#?}"
        );
        self
    }

    #[track_caller]
    pub fn stdout_has(&self, needle: &str) -> &Self {
        assert!(
            self.stdout.contains(needle),
            "stdout lacks {needle:?}: {self:#?}"
        );
        self
    }

    #[track_caller]
    pub fn stderr_lacks(&self, needle: &str) -> &Self {
        assert!(
            !self.stderr.contains(needle),
            "stderr has {needle:?}: {self:#?}"
        );
        self
    }

    #[track_caller]
    pub fn stdout_lacks(&self, needle: &str) -> &Self {
        assert!(
            !self.stdout.contains(needle),
            "stdout has {needle:?}: {self:#?}"
        );
        self
    }
}
