//! A progress bar on stderr (indicatif), hidden when stderr is not a
//! terminal or when the user asked for none.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar; cheap to clone (clones share one bar).
#[derive(Debug, Clone)]
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar of `total` steps labelled `label`; drawn only if `enabled` (and
    /// indicatif draws only on a terminal).
    pub fn new(total: u64, label: &str, enabled: bool) -> Self {
        if !enabled {
            return Self::hidden();
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{prefix:>12} [{bar:30}] {pos}/{len} {elapsed_precise} eta {eta} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(label.to_string());
        Self { bar }
    }

    /// A bar that never draws (tests, `--no-progress`).
    pub fn hidden() -> Self {
        Self {
            bar: ProgressBar::hidden(),
        }
    }

    /// Advances by `n` steps.
    pub fn inc(&self, n: u64) {
        self.bar.inc(n);
    }

    /// Grows the total by `n` steps (when the amount of work is found out late).
    pub fn inc_length(&self, n: u64) {
        self.bar.inc_length(n);
    }

    /// Shows `message` after the bar (e.g. the current size or condition).
    pub fn set_message(&self, message: impl Into<String>) {
        self.bar.set_message(message.into());
    }

    /// Steps done so far.
    pub fn position(&self) -> u64 {
        self.bar.position()
    }

    /// Removes the bar from the terminal.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
