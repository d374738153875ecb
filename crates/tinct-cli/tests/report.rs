//! `tinct report DIR` end to end: the page of a real run directory and of a
//! real bench directory, checked as a file (self-contained, every section)
//! and in headless Chromium (it loads with no console message, no script
//! error and no blocked fetch, and a screenshot shows the charts); the
//! run directory's JSON files read back as the types that wrote them.
//!
//! The browser rule: the browser tests need Debian's `chromium` (installed
//! by scripts/setup.sh). When it is missing they fail if
//! `TINCT_REQUIRE_BROWSER=1` or `CI` is set (CI sets both), and otherwise
//! skip with a message.

mod common;

use common::{bad_input, example, tinct, write};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Output;

/// The browser binary, or `None` (skip) when it is missing and not required.
fn chromium() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser"].iter().find_map(|name| {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(name))
                .find(|p| p.is_file())
        })
    });
    let set =
        |var: &str| std::env::var(var).is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    if found.is_none() {
        if set("TINCT_REQUIRE_BROWSER") || set("CI") {
            panic!(
                "chromium is not installed (scripts/setup.sh installs it) and \
                 TINCT_REQUIRE_BROWSER or CI is set"
            );
        }
        eprintln!("skipping: chromium is not installed (scripts/setup.sh installs it)");
    }
    found
}

/// Runs headless Chromium on `page` with `extra` arguments, a fresh
/// profile and nothing that reaches the network.
fn browse(chromium: &Path, page: &Path, extra: &[&str]) -> Output {
    let profile = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.canonicalize().unwrap().display()))
        .output()
        .unwrap();
    assert!(output.status.success(), "chromium failed: {output:?}");
    output
}

/// What the browser saw wrong on `page`: console messages (script errors
/// and CSP violations are logged there), the page's own error count, and
/// whether its script ran to the end.
fn browser_problems(chromium: &Path, page: &Path) -> Vec<String> {
    let output = browse(chromium, page, &["--dump-dom"]);
    let dom = String::from_utf8_lossy(&output.stdout);
    let log = String::from_utf8_lossy(&output.stderr);
    let mut problems: Vec<String> = log
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    if !dom.contains(r#"data-tinct-ready="yes""#) {
        problems.push("the page's script did not run to its end".into());
    }
    if !dom.contains(r#"data-tinct-errors="0""#) {
        problems.push("the page recorded errors".into());
    }
    problems
}

/// A screenshot of `page`: (distinct colours, non-white pixels, the
/// palette colours of the charts that appear).
fn screenshot(chromium: &Path, page: &Path) -> (usize, usize, Vec<&'static str>) {
    let dir = tempfile::tempdir().unwrap();
    let png_path = dir.path().join("shot.png");
    browse(
        chromium,
        page,
        &[
            &format!("--screenshot={}", png_path.display()),
            "--window-size=1400,3200",
        ],
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&png_path).unwrap(),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert!(channels >= 3, "{:?}", info.color_type);
    let pixels: Vec<[u8; 3]> = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    let colours: HashSet<[u8; 3]> = pixels.iter().copied().collect();
    let ink = pixels.iter().filter(|p| **p != [255, 255, 255]).count();
    let palette: Vec<&'static str> = tinct_report::chart::COLORS
        .iter()
        .copied()
        .filter(|hex| {
            let v = u32::from_str_radix(&hex[1..], 16).unwrap();
            colours.contains(&[(v >> 16) as u8, (v >> 8) as u8, v as u8])
        })
        .collect();
    (colours.len(), ink, palette)
}

/// A quick `tinct bench crpd` into `dir/crpd`, its directory.
fn quick_crpd(dir: &Path) -> PathBuf {
    let bench = dir.join("crpd");
    tinct()
        .args(["bench", "crpd", "--quick", "--out"])
        .arg(&bench)
        .assert()
        .success();
    bench
}

/// `tinct report BENCH -o dir/crpd.html`, the page's path.
fn report_of_bench(bench: &Path, dir: &Path) -> PathBuf {
    let out = dir.join("crpd.html");
    tinct()
        .arg("report")
        .arg(bench)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    out
}

/// A real run of the light example (four tasks on two cores, two per core,
/// so jobs can preempt each other) for `duration`, unprivileged, into
/// `run`.
fn run_light(run: &Path, duration: &str) {
    tinct()
        .args(["run", example("light.toml").to_str().unwrap()])
        // SCHED_OTHER threads of a loaded machine can end past the run's
        // grace; a run directory is all this needs, the timeout the guard.
        .args(["--duration", duration, "--no-rt", "--uncolored"])
        .args(["--watchdog", "off", "-o"])
        .arg(run)
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .success();
}

/// [`run_light`] for 1.2 s, and its report.
fn run_and_report(dir: &Path) -> PathBuf {
    let run = dir.join("run");
    run_light(&run, "1200ms");
    for figure in ["fig10-utilization.svg", "fig8-response-sensor.svg"] {
        assert!(run.join(figure).is_file(), "{figure} in the run directory");
    }
    let assert = tinct().arg("report").arg(&run).assert().success();
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).into_owned();
    assert!(stdout.contains("report.html"), "{stdout}");
    run.join("report.html")
}

#[test]
fn the_run_report_is_one_file_with_every_section() {
    let dir = tempfile::tempdir().unwrap();
    let page = run_and_report(dir.path());
    let html = std::fs::read_to_string(&page).unwrap();
    for fetch in ["src=", "href=", "@import", "url("] {
        assert!(
            !html.contains(fetch),
            "the page must fetch nothing: {fetch}"
        );
    }
    assert_eq!(
        html.matches("http://").count(),
        html.matches(r#"xmlns="http://www.w3.org/2000/svg""#)
            .count(),
        "the only URLs are SVG namespaces"
    );
    for part in [
        "Verdict",
        "analysis of the plan: SCHEDULABLE",
        "{1,2}",
        "kim2013 Fig. 8",
        "WCRT CInt (Eq. 2)",
        "cumulative distribution",
        "execution time",
        "kim2013 Fig. 10",
        "Liu-Layland bound",
        "Migrations map",
        "Hardware counters",
        "Machine",
        "SCHED_OTHER",
    ] {
        assert!(html.contains(part), "{part}");
    }
    // Four Fig. 8 charts, one CDF, four histograms, Fig. 10.
    assert_eq!(html.matches("<svg").count(), 10);

    // The files the page was drawn from read back as the types that wrote
    // them, and write the same bytes again.
    let run = page.parent().unwrap();
    let files = tinct_verify::output::RunFiles::read(run).unwrap();
    let again = |value: serde_json::Result<String>| value.unwrap() + "\n";
    for (name, json) in [
        (
            "summary.json",
            again(serde_json::to_string_pretty(&files.summary)),
        ),
        (
            "analysis.json",
            again(serde_json::to_string_pretty(&files.analysis)),
        ),
        (
            "machine.json",
            again(serde_json::to_string_pretty(&files.machine)),
        ),
    ] {
        let file = std::fs::read_to_string(run.join(name)).unwrap();
        assert!(file == json, "{name} reads back to other bytes");
    }
}

#[test]
fn the_run_report_loads_in_headless_chromium_without_errors_and_shows_its_charts() {
    let Some(chromium) = chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = run_and_report(dir.path());
    assert_eq!(browser_problems(&chromium, &page), Vec::<String>::new());
    let (colours, ink, palette) = screenshot(&chromium, &page);
    assert!(colours >= 50, "{colours} distinct colours: a blank page?");
    assert!(ink >= 100_000, "{ink} non-white pixels");
    assert!(
        palette.len() >= 4,
        "the charts' series colours on screen: {palette:?}"
    );
}

#[test]
fn the_browser_check_sees_a_broken_page() {
    let Some(chromium) = chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = run_and_report(dir.path());
    let html = std::fs::read_to_string(&page).unwrap();
    // A script that is not the page's own and a fetch: the page's policy
    // blocks both (only its own scripts, by hash, may run), and says so.
    let broken = html.replace(
        "<body>",
        "<body><img src=\"http://example.invalid/x.png\"><script>undefinedFunction();</script>",
    );
    let broken_page = write(dir.path(), "broken.html", broken);
    let problems = browser_problems(&chromium, &broken_page);
    assert!(
        problems
            .iter()
            .any(|p| p.contains("Executing inline script violates")),
        "{problems:?}"
    );
    assert!(
        !problems.iter().any(|p| p.contains("undefinedFunction")),
        "the script did not run: {problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("Content Security Policy")),
        "{problems:?}"
    );
    assert!(problems.iter().any(|p| p == "the page recorded errors"));
}

#[test]
fn a_bench_directory_gets_its_page_too() {
    let dir = tempfile::tempdir().unwrap();
    let bench = quick_crpd(dir.path());
    let out = report_of_bench(&bench, dir.path());
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("<title>tinct bench crpd</title>"));
    assert!(
        html.matches("<img class=\"chart-image\"").count() >= 1,
        "the bench's charts, as images"
    );
    assert!(html.contains("Machine") && html.contains("online_cpus"));
    if let Some(chromium) = chromium() {
        assert_eq!(browser_problems(&chromium, &out), Vec::<String>::new());
    }
}

/// Issue 27: SVG files in a bench directory that carry scripts (each
/// passed the old blacklist) run nothing in the report's page: headless
/// Chromium loads it, the page's own scripts run, and none of the files'
/// does (each would mark the document).
#[test]
fn a_hostile_svg_runs_no_script_in_the_page() {
    let Some(chromium) = chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bench = quick_crpd(dir.path());
    let mark = "document.documentElement.setAttribute('data-pwned','yes')";
    let hostile = [
        format!("<svg/onload=\"{mark}\">"),
        format!("<svg\nonload=\"{mark}\"></svg>"),
        format!("<svg\tonload=\"{mark}\"></svg>"),
        format!("<svg></svg><img/src=x/onerror=\"{mark}\">"),
        format!("<svg><script>{mark}</script></svg>"),
        format!("<svg><a href=\"&#106;avascript:{mark}\"><text>x</text></a></svg>"),
    ];
    for (i, svg) in hostile.iter().enumerate() {
        std::fs::write(bench.join(format!("evil{i}.svg")), svg).unwrap();
    }
    let out = report_of_bench(&bench, dir.path());
    let output = browse(&chromium, &out, &["--dump-dom"]);
    let dom = String::from_utf8_lossy(&output.stdout);
    assert!(
        dom.contains(r#"data-tinct-ready="yes""#),
        "the page's own script ran: {dom}"
    );
    assert!(!dom.contains("data-pwned"), "a file's script ran: {dom}");
}

/// Issue 27: a run directory whose jobs.csv was emptied beside its
/// summary is not reported CLEAN: bad input (exit 2) naming jobs.csv and
/// saying the directory is inconsistent, and no page is written.
#[test]
fn a_run_directory_whose_jobs_csv_disagrees_with_its_summary_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    run_light(&run, "300ms");
    let jobs = run.join("jobs.csv");
    let text = std::fs::read_to_string(&jobs).unwrap();
    std::fs::write(&jobs, format!("{}\n", text.lines().next().unwrap())).unwrap();
    let stderr = bad_input([std::ffi::OsStr::new("report"), run.as_os_str()]);
    assert!(
        stderr.contains(&jobs.display().to_string()) && stderr.contains("inconsistent"),
        "{stderr}"
    );
    assert!(!run.join("report.html").exists(), "no page of a broken run");
}

#[test]
fn a_directory_that_is_neither_or_a_broken_file_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let stderr = bad_input([std::ffi::OsStr::new("report"), dir.path().as_os_str()]);
    assert!(stderr.contains("expected a run directory"), "{stderr}");

    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    std::fs::write(run.join("summary.json"), "{}").unwrap();
    std::fs::write(run.join("jobs.csv"), "task\n").unwrap();
    let stderr = bad_input([std::ffi::OsStr::new("report"), run.as_os_str()]);
    assert!(
        stderr.contains("summary.json:1") && stderr.contains("missing field"),
        "{stderr}"
    );
}
