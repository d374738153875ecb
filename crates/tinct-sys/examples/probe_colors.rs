//! Runs the color probe and prints its verdicts (the same probe as
//! `tinct doctor --probe-colors`; run it in release mode, as root).
//!
//! cargo run --release -p tinct-sys --example probe_colors

fn main() {
    match tinct_sys::color_probe::probe_colors(Default::default()) {
        Ok(report) => {
            for level in &report.levels {
                println!(
                    "{}: {} — {}",
                    level.cache,
                    level.verdict.label(),
                    level.explanation
                );
            }
        }
        Err(e) => {
            eprintln!("color probe: {e}");
            std::process::exit(1);
        }
    }
}
