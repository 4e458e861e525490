//! (The sweep live view's harness: stdout alone on a terminal of any size; pty.rs is the
//! one the colour tests use, stdout and stderr on a 120-column terminal.)
//! A pseudo-terminal for the binary's stdout, and the screen a person would see on it:
//! what it wrote (colours, the live views' redraws: cursor up, line erased) played on
//! a grid of characters, as a terminal does.

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The binary started with its stdout on a terminal of `cols` × `rows` (stderr a pipe,
/// stdin nothing), and what it writes there, gathered as it comes.
pub struct OnPty {
    pub child: Child,
    cols: usize,
    written: Arc<Mutex<Vec<u8>>>,
    reader: std::thread::JoinHandle<()>,
}

impl OnPty {
    /// `cmd` (e.g. `Env::cmd()`) with `TERM` a terminal's and colours allowed.
    pub fn start(mut cmd: Command, cols: u16, rows: u16) -> OnPty {
        let (mut master, mut slave) = (-1, -1);
        let size = libc::winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty writes two descriptors, which are owned below and nowhere else.
        let made = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(made, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: each descriptor was just opened and is owned once; close-on-exec, lest
        // a child another test starts meanwhile keep the terminal open.
        let (master, slave) = unsafe {
            libc::fcntl(master, libc::F_SETFD, libc::FD_CLOEXEC);
            libc::fcntl(slave, libc::F_SETFD, libc::FD_CLOEXEC);
            (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave))
        };
        let child = cmd
            .env_remove("NO_COLOR")
            .env("TERM", "xterm-256color")
            .stdout(Stdio::from(slave))
            .stderr(Stdio::piped())
            .spawn()
            .expect("start tf-spawner on a pty");
        // `cmd` kept the slave's descriptor: dropped with it, so the master reads EOF
        // (EIO) once the child has exited.
        drop(cmd);
        let written = Arc::new(Mutex::new(Vec::new()));
        let into = Arc::clone(&written);
        let reader = std::thread::spawn(move || {
            let mut master = std::fs::File::from(master);
            let mut buf = [0u8; 4096];
            while let Ok(n) = master.read(&mut buf) {
                if n == 0 {
                    break;
                }
                into.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        OnPty {
            child,
            cols: usize::from(cols),
            written,
            reader,
        }
    }

    /// The screen as of now.
    pub fn screen(&self) -> String {
        screen(
            &String::from_utf8_lossy(&self.written.lock().unwrap()),
            self.cols,
        )
    }

    /// Blocks until the screen shows `text` (60 s at most: then fails showing it).
    pub fn await_screen(&self, text: &str) {
        let start = Instant::now();
        while !self.screen().contains(text) {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the screen never showed {text:?}:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the child's end: its exit code, its stderr, the last screen (all the
    /// child wrote: the terminal is read to its end, 10 s at most).
    pub fn finish(self) -> (i32, String, String) {
        let OnPty {
            child,
            cols,
            written,
            reader,
        } = self;
        let out = child.wait_with_output().expect("tf-spawner ends");
        let start = Instant::now();
        while !reader.is_finished() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let screen = screen(&String::from_utf8_lossy(&written.lock().unwrap()), cols);
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            screen,
        )
    }
}

/// What a terminal shows after `written`: the characters placed at the cursor, moved by
/// CR, LF and the CSI sequences a live view uses (`A` up, `B` down, `C` right, `D` left,
/// `G` to a column, `K` erase in line, `J` erase below); colours and modes change no
/// character; a line longer than `cols` goes on in the next row. Every line kept (no
/// scrolling away), trailing spaces and empty lines at the end dropped.
pub fn screen(written: &str, cols: usize) -> String {
    let mut lines: Vec<Vec<char>> = vec![Vec::new()];
    let (mut row, mut col) = (0usize, 0usize);
    let mut chars = written.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => col = 0,
            '\n' => row += 1,
            '\x1b' if chars.peek() == Some(&'[') => {
                chars.next();
                let mut params = String::new();
                let mut last = '\0';
                for p in chars.by_ref() {
                    if ('\x40'..='\x7e').contains(&p) {
                        last = p;
                        break;
                    }
                    params.push(p);
                }
                let n = params.trim_start_matches('?').parse::<usize>().ok();
                while lines.len() <= row {
                    lines.push(Vec::new());
                }
                let line = &mut lines[row];
                match last {
                    'A' => row = row.saturating_sub(n.unwrap_or(1)),
                    'B' => row += n.unwrap_or(1),
                    'C' => col += n.unwrap_or(1),
                    'D' => col = col.saturating_sub(n.unwrap_or(1)),
                    'G' => col = n.unwrap_or(1).saturating_sub(1),
                    'K' => match n.unwrap_or(0) {
                        0 => line.truncate(col),
                        1 => line.iter_mut().take(col + 1).for_each(|c| *c = ' '),
                        _ => line.clear(),
                    },
                    'J' if n.unwrap_or(0) == 0 => {
                        line.truncate(col);
                        lines.truncate(row + 1);
                    }
                    _ => {}
                }
            }
            '\x1b' => {
                chars.next();
            }
            c if c.is_control() => {}
            c => {
                if col >= cols {
                    (row, col) = (row + 1, 0);
                }
                while lines.len() <= row {
                    lines.push(Vec::new());
                }
                let line = &mut lines[row];
                while line.len() < col {
                    line.push(' ');
                }
                if col < line.len() {
                    line[col] = c;
                } else {
                    line.push(c);
                }
                col += 1;
            }
        }
    }
    let mut text: Vec<String> = lines
        .iter()
        .map(|l| l.iter().collect::<String>().trim_end().to_string())
        .collect();
    while text.last().is_some_and(String::is_empty) {
        text.pop();
    }
    text.join("\n") + "\n"
}
