//! The binary on a pseudo-terminal, and what a person sees there: a small screen that
//! plays the escape codes a terminal acts on (colours, a line erased, the cursor moved
//! up, a line wrapped at the terminal's width), so a test asserts on the screen, not on
//! the bytes. The one harness of the suite: the colour tests' 120-column terminal and
//! the sweep's live view on a terminal of any size ([`start_sized`]).

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::support::Env;

/// The terminal's size, unless [`start_sized`] says another.
pub const COLS: u16 = 120;
pub const ROWS: u16 = 40;

/// The binary running on a terminal, its output read as it comes.
pub struct OnTerminal {
    child: Child,
    bytes: Arc<Mutex<Vec<u8>>>,
    reader: Option<JoinHandle<()>>,
    cols: u16,
}

/// `tf-spawner ARGS` on a terminal of [`COLS`]×[`ROWS`] (stdout and stderr), with
/// colour allowed (`TERM=xterm`, no `NO_COLOR`).
pub fn start(env: &Env, args: &[&str]) -> OnTerminal {
    let mut cmd = env.cmd();
    cmd.env_remove("NO_COLOR")
        .env("TERM", "xterm-256color")
        .args(args);
    start_cmd(cmd)
}

/// `cmd` on a terminal of [`COLS`]×[`ROWS`].
pub fn start_cmd(cmd: Command) -> OnTerminal {
    start_sized(cmd, COLS, ROWS)
}

/// `cmd` on a terminal of `cols`×`rows` (stdout and stderr); the command is dropped
/// once started, so the terminal closes when the child (and whatever it started) ends.
pub fn start_sized(mut cmd: Command, cols: u16, rows: u16) -> OnTerminal {
    let (master, slave) = open(cols, rows);
    let out = slave.try_clone().expect("dup the terminal");
    cmd.stdout(Stdio::from(out)).stderr(Stdio::from(slave));
    let child = cmd.spawn().expect("start tf-spawner");
    drop(cmd);
    let bytes = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&bytes);
    let reader = std::thread::spawn(move || {
        let mut master = std::fs::File::from(master);
        let mut buf = [0u8; 8192];
        // EIO once every end of the terminal is closed: the child is gone.
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    OnTerminal {
        child,
        bytes,
        reader: Some(reader),
        cols,
    }
}

/// A new terminal of `cols`×`rows`: (master, slave).
fn open(cols: u16, rows: u16) -> (OwnedFd, OwnedFd) {
    let (mut master, mut slave) = (-1, -1);
    let size = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two descriptors it opened, which we then own.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both were just opened by openpty and are owned by nothing else;
    // close-on-exec, lest a child another test starts meanwhile keep the terminal open.
    unsafe {
        libc::fcntl(master, libc::F_SETFD, libc::FD_CLOEXEC);
        libc::fcntl(slave, libc::F_SETFD, libc::FD_CLOEXEC);
        (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave))
    }
}

impl OnTerminal {
    /// The screen as it is now.
    pub fn screen(&self) -> Screen {
        Screen::of(&self.bytes.lock().unwrap(), self.cols)
    }

    /// Waits (60 s at most) until the screen shows `text`.
    #[track_caller]
    pub fn await_text(&self, text: &str) -> Screen {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let screen = self.screen();
            if screen.text().contains(text) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the terminal never showed {text:?}:\n{}",
                screen.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Waits for the child (60 s at most) and everything it wrote: its exit code and
    /// the screen.
    #[track_caller]
    pub fn finish(mut self) -> (i32, Screen) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait for tf-spawner") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("tf-spawner still running:\n{}", self.screen().text());
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        if let Some(reader) = self.reader.take() {
            reader.join().expect("the terminal's reader");
        }
        (status.code().unwrap_or(-1), self.screen())
    }
}

/// `tf-spawner ARGS` on a terminal, to its end.
pub fn run(env: &Env, args: &[&str]) -> (i32, Screen) {
    start(env, args).finish()
}

/// One cell: a character and its foreground colour (an SGR code: 31 red…).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cell {
    pub c: char,
    pub fg: Option<u8>,
}

const BLANK: Cell = Cell { c: ' ', fg: None };

/// What the terminal shows, every line since the start (none scrolled away).
#[derive(Debug, Default)]
pub struct Screen {
    /// Where a line wraps.
    cols: u16,
    lines: Vec<Vec<Cell>>,
    row: usize,
    col: usize,
    fg: Option<u8>,
}

impl Screen {
    /// The screen of `cols` columns after `bytes`.
    pub fn of(bytes: &[u8], cols: u16) -> Screen {
        let text = String::from_utf8_lossy(bytes);
        let mut screen = Screen {
            cols,
            lines: vec![Vec::new()],
            ..Screen::default()
        };
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\x1b' => screen.escape(&mut chars),
                '\r' => screen.col = 0,
                '\n' => screen.down(1),
                '\x08' => screen.col = screen.col.saturating_sub(1),
                '\x07' => {}
                c => screen.put(c),
            }
        }
        screen
    }

    fn down(&mut self, n: usize) {
        self.row += n;
        while self.lines.len() <= self.row {
            self.lines.push(Vec::new());
        }
    }

    fn put(&mut self, c: char) {
        if self.col >= usize::from(self.cols) {
            self.col = 0;
            self.down(1);
        }
        let line = &mut self.lines[self.row];
        if line.len() <= self.col {
            line.resize(self.col + 1, BLANK);
        }
        line[self.col] = Cell { c, fg: self.fg };
        self.col += 1;
    }

    /// After an ESC: a CSI sequence played, an OSC or another sequence skipped.
    fn escape(&mut self, chars: &mut std::iter::Peekable<std::str::Chars>) {
        match chars.next() {
            Some('[') => {
                let mut params = String::new();
                for c in chars.by_ref() {
                    if ('\x40'..='\x7e').contains(&c) {
                        self.csi(&params, c);
                        return;
                    }
                    params.push(c);
                }
            }
            Some(']') => {
                // Up to BEL or ESC \.
                while let Some(c) = chars.next() {
                    if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                        return;
                    }
                }
            }
            _ => {}
        }
    }

    fn csi(&mut self, params: &str, end: char) {
        if params.starts_with('?') {
            return; // cursor shown or hidden
        }
        let nums: Vec<usize> = params.split(';').map(|p| p.parse().unwrap_or(0)).collect();
        let n = nums.first().copied().unwrap_or(0).max(1);
        let (row, col) = (self.row, self.col);
        let line = &mut self.lines[row];
        match end {
            'm' => {
                for code in nums {
                    self.fg = match code {
                        0 | 39 => None,
                        30..=37 | 90..=97 => Some(code as u8),
                        _ => self.fg,
                    };
                }
            }
            'K' => match nums.first().copied().unwrap_or(0) {
                0 => line.truncate(col),
                1 => line.iter_mut().take(col + 1).for_each(|c| *c = BLANK),
                _ => line.clear(),
            },
            'J' => {
                line.truncate(col);
                self.lines.truncate(row + 1);
            }
            'A' => self.row = self.row.saturating_sub(n),
            'B' => self.down(n),
            'C' => self.col += n,
            'D' => self.col = self.col.saturating_sub(n),
            'G' => self.col = n - 1,
            _ => {}
        }
    }

    /// The lines as a person reads them, without trailing blanks or empty lines at
    /// the end.
    pub fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .lines
            .iter()
            .map(|l| {
                l.iter()
                    .map(|c| c.c)
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect();
        while out.last().is_some_and(String::is_empty) {
            out.pop();
        }
        out
    }

    pub fn text(&self) -> String {
        self.lines().join("\n")
    }

    /// The cells of the first line that contains `text`, if one does.
    pub fn line_with(&self, text: &str) -> Option<&[Cell]> {
        let at = self.lines().iter().position(|l| l.contains(text))?;
        Some(&self.lines[at])
    }

    /// The colour of the cells that show `text` in the first line holding it (`None`
    /// inside: no colour; the outer `None`: no such line).
    pub fn colour_of(&self, text: &str) -> Option<Vec<Option<u8>>> {
        let cells = self.line_with(text)?;
        let line: Vec<char> = cells.iter().map(|c| c.c).collect();
        let want: Vec<char> = text.chars().collect();
        let at = line
            .windows(want.len())
            .position(|w| w == want.as_slice())?;
        Some(cells[at..at + want.len()].iter().map(|c| c.fg).collect())
    }

    /// Nothing shown as an escape (`\u{1b}`): what a terminal gets from us it acts on.
    #[track_caller]
    pub fn shows_no_escaped_code(&self) {
        let text = self.text();
        assert!(!text.contains("\\u{1b}"), "an escaped code shows:\n{text}");
    }
}
