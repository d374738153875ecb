//! The benches' progress as an indicatif bar on stderr (hidden when stderr
//! is not a terminal or with `--no-progress`).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tinct_bench::harness::Progress;

/// A progress bar that a bench drives through [`Progress`].
#[derive(Debug)]
pub struct Bar {
    bar: ProgressBar,
}

impl Bar {
    /// A bar drawn only if `enabled` (and indicatif draws only on a terminal).
    pub fn new(enabled: bool) -> Self {
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
        Self { bar }
    }
}

impl Progress for Bar {
    fn start(&self, total: u64, label: &str) {
        self.bar.set_length(total);
        self.bar.set_position(0);
        self.bar.set_prefix(label.to_string());
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hidden_bar_counts_what_the_bench_reports() {
        let bar = Bar::new(false);
        bar.start(10, "calibrate");
        bar.inc(3);
        bar.inc_length(5);
        bar.set_message("L2");
        assert_eq!(bar.bar.position(), 3);
        assert_eq!(bar.bar.length(), Some(15));
        bar.start(4, "again");
        assert_eq!((bar.bar.position(), bar.bar.length()), (0, Some(4)));
    }
}
