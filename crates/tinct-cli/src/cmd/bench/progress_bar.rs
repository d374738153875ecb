//! The benches' progress as an indicatif bar on stderr (hidden when stderr
//! is not a terminal or with `--no-progress`), and Ctrl-C: the bar answers
//! the bench's [`Progress::stop_requested`] from the process's stop flag,
//! armed when the bar is made.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use tinct_bench::harness::Progress;
use tinct_sys::signals::StopFlag;

/// A progress bar that a bench drives through [`Progress`].
#[derive(Debug)]
pub(super) struct Bar {
    bar: ProgressBar,
    stop: StopFlag,
    /// No bar on a terminal: each measurement's start is a line on stderr
    /// instead (logs, and whoever waits for the bench to start).
    lines: bool,
}

impl Bar {
    /// A bar drawn only if `enabled` (and indicatif draws only on a
    /// terminal); SIGINT and SIGTERM ask the bench to stop from now on (a
    /// second one exits at once).
    pub(super) fn new(enabled: bool) -> Self {
        Self::stopped_by(enabled, tinct_sys::signals::stop_on_signals())
    }

    /// A bar whose bench stops once `stop` is raised.
    pub(super) fn stopped_by(enabled: bool, stop: StopFlag) -> Self {
        let bar = if enabled {
            ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr())
        } else {
            ProgressBar::hidden()
        };
        let style = ProgressStyle::with_template(
            "{prefix:>12} [{bar:30}] {pos}/{len} {elapsed_precise} eta {eta} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        let lines = !enabled || !std::io::stderr().is_terminal();
        Self { bar, stop, lines }
    }

    /// True once the bench was asked to stop.
    pub(super) fn stopped(&self) -> bool {
        self.stop.is_raised()
    }
}

impl Progress for Bar {
    fn start(&self, total: u64, label: &str) {
        self.bar.set_length(total);
        self.bar.set_position(0);
        self.bar.set_prefix(label.to_string());
        if self.lines {
            eprintln!(
                "tinct bench {label}: measuring, {total} steps (Ctrl-C stops and keeps what is done)"
            );
        }
    }

    fn inc(&self, n: u64) {
        self.bar.inc(n);
    }

    fn inc_length(&self, n: u64) {
        self.bar.inc_length(n);
    }

    fn set_message(&self, message: &str) {
        self.bar.set_message(message.to_string());
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }

    fn stop_requested(&self) -> bool {
        self.stop.is_raised()
    }

    fn stop_flag(&self) -> Option<StopFlag> {
        Some(self.stop.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hidden_bar_counts_what_the_bench_reports() {
        let stop = StopFlag::new();
        let bar = Bar::stopped_by(false, stop.clone());
        bar.start(10, "calibrate");
        assert!(!bar.stop_requested());
        stop.raise();
        assert!(bar.stop_requested() && bar.stopped());
        bar.inc(3);
        bar.inc_length(5);
        bar.set_message("L2");
        assert_eq!(bar.bar.position(), 3);
        assert_eq!(bar.bar.length(), Some(15));
        bar.start(4, "again");
        assert_eq!((bar.bar.position(), bar.bar.length()), (0, Some(4)));
    }
}
