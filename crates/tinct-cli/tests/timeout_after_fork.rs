//! A timeout armed in a child forked after the process's timer thread
//! started (a worker of a fork-started Python pool calling `timeout=`, a
//! supervised run) still fires: only the forking thread exists in the
//! child, so the shared timer thread of `tinct_core::timeout` is not there.
//!
//! One test in this file: it forks this process.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tinct_core::timeout::stop_after;
use tinct_sys::supervise::{ChildExit, Forked, exit_child, fork};

#[test]
fn a_timeout_armed_in_a_forked_child_fires() {
    // The timer thread runs in this process before the fork.
    let before = stop_after(Some(Duration::from_millis(1)));
    while !before.load(Ordering::Relaxed) {
        std::thread::yield_now();
    }
    match fork().expect("fork") {
        Forked::Child => {
            let flag = stop_after(Some(Duration::from_millis(1)));
            // A guard against hanging, not a measurement: 1 ms armed, 20 s
            // allowed (status 1: it never fired).
            let give_up = Instant::now() + Duration::from_secs(20);
            while !flag.load(Ordering::Relaxed) {
                if Instant::now() > give_up {
                    exit_child(1);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            exit_child(0);
        }
        Forked::Parent(child) => loop {
            if let Some(exit) = child.try_wait().expect("wait for the child") {
                assert_eq!(
                    exit,
                    ChildExit::Exited(0),
                    "the child's timeout never fired"
                );
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        },
    }
}
