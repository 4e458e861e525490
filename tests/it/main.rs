//! The fast suite: the real binary against the in-process API test server.

mod support;
mod terminal;

mod after;
mod bad_input;
mod closed_stdout;
mod compare;
mod delete;
mod ecosystem;
mod faults;
mod firsthour;
mod follow;
mod forged;
mod gang;
mod hardened;
mod hints;
mod list;
mod local;
mod logs;
mod nodes;
mod outage;
mod perf;
mod progress;
mod proxy;
mod queues;
mod resources;
mod restart;
mod roles;
mod rule;
mod security;
mod shared;
mod spawn;
mod start;
mod starter;
mod stop;
mod sweep;
