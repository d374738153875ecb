//! Kernel and OS settings that matter for real-time work: kernel version and
//! preemption model, page size, transparent huge pages, RT throttling,
//! frequency governors, CPU isolation, `RLIMIT_MEMLOCK` and the steal time
//! a hypervisor reports per CPU.

use crate::cpulist::parse_cpu_list;
use crate::error::Result;
use crate::root::SysRoot;

/// Kernel release and build string.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Kernel {
    /// `uname -r`, e.g. `6.18.44`.
    pub release: String,
    /// `uname -v`, e.g. `#1 SMP PREEMPT_DYNAMIC ...`.
    pub version: String,
    /// The preemption model, as far as it can be told.
    pub preemption: Preemption,
}

/// The kernel's preemption model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Preemption {
    /// `PREEMPT_NONE`: server kernel, long non-preemptible sections.
    None,
    /// `PREEMPT_VOLUNTARY`.
    Voluntary,
    /// `PREEMPT` (full preemption, not RT).
    Full,
    /// `PREEMPT_LAZY`.
    Lazy,
    /// `PREEMPT_RT`: fully preemptible real-time kernel.
    Rt,
    /// `PREEMPT_DYNAMIC` kernel whose current mode could not be read
    /// (`/sys/kernel/debug/sched/preempt` needs debugfs).
    Dynamic,
    /// Nothing conclusive.
    Unknown,
}

impl Kernel {
    /// Reads `/proc/sys/kernel/{osrelease,version}`, `/sys/kernel/realtime`
    /// and `/sys/kernel/debug/sched/preempt` under `root`; on the live system
    /// falls back to `uname` if procfs lacks the files.
    pub fn read(root: &SysRoot) -> Result<Self> {
        let (release, version) = match (
            root.read_line_optional("/proc/sys/kernel/osrelease")?,
            root.read_line_optional("/proc/sys/kernel/version")?,
        ) {
            (Some(release), Some(version)) => (release, version),
            _ if root.is_live() => {
                let uname = rustix::system::uname();
                (
                    uname.release().to_string_lossy().into_owned(),
                    uname.version().to_string_lossy().into_owned(),
                )
            }
            _ => (
                root.read_line("/proc/sys/kernel/osrelease")?,
                root.read_line("/proc/sys/kernel/version")?,
            ),
        };
        let realtime = root.read_line_optional("/sys/kernel/realtime")?;
        let dynamic_mode = root.read_line_optional("/sys/kernel/debug/sched/preempt")?;
        let preemption = preemption_model(&version, realtime.as_deref(), dynamic_mode.as_deref());
        Ok(Self {
            release,
            version,
            preemption,
        })
    }
}

/// Decides the preemption model from `uname -v`, `/sys/kernel/realtime` and
/// the debugfs `sched/preempt` line (`none voluntary (full) lazy`).
pub fn preemption_model(
    version: &str,
    realtime: Option<&str>,
    dynamic_mode: Option<&str>,
) -> Preemption {
    if realtime == Some("1") || version.split_whitespace().any(|w| w == "PREEMPT_RT") {
        return Preemption::Rt;
    }
    if let Some(mode) = dynamic_mode.and_then(selected_in_brackets('(', ')')) {
        return match mode {
            "none" => Preemption::None,
            "voluntary" => Preemption::Voluntary,
            "full" => Preemption::Full,
            "lazy" => Preemption::Lazy,
            _ => Preemption::Unknown,
        };
    }
    let words: Vec<&str> = version.split_whitespace().collect();
    if words.contains(&"PREEMPT_DYNAMIC") {
        Preemption::Dynamic
    } else if words.contains(&"PREEMPT_LAZY") {
        Preemption::Lazy
    } else if words.contains(&"PREEMPT") {
        Preemption::Full
    } else {
        Preemption::Unknown
    }
}

/// Returns a function that picks the word between `open` and `close` in a
/// sysfs choice line such as `always [madvise] never`.
fn selected_in_brackets(open: char, close: char) -> impl Fn(&str) -> Option<&str> {
    move |line: &str| {
        let start = line.find(open)? + open.len_utf8();
        let end = start + line[start..].find(close)?;
        Some(&line[start..end])
    }
}

impl Preemption {
    /// The kernel config name, e.g. `PREEMPT_RT`.
    pub fn label(self) -> &'static str {
        match self {
            Self::None => "PREEMPT_NONE",
            Self::Voluntary => "PREEMPT_VOLUNTARY",
            Self::Full => "PREEMPT (full)",
            Self::Lazy => "PREEMPT_LAZY",
            Self::Rt => "PREEMPT_RT",
            Self::Dynamic => "PREEMPT_DYNAMIC (current mode unknown)",
            Self::Unknown => "unknown",
        }
    }
}

/// The base page size and how it was learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PageSize {
    /// Bytes per page.
    pub bytes: u64,
    /// Where the number came from.
    pub source: PageSizeSource,
}

/// Where [`PageSize`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum PageSizeSource {
    /// The auxiliary vector of this process (`AT_PAGESZ`).
    Auxv,
    /// `KernelPageSize` in `/proc/self/smaps` of a fixture tree.
    Smaps,
    /// Not recorded in the fixture tree; 4 KiB assumed.
    Assumed,
}

impl PageSizeSource {
    /// Where the page size came from, in words.
    pub fn label(self) -> &'static str {
        match self {
            Self::Auxv => "the auxiliary vector",
            Self::Smaps => "/proc/self/smaps",
            Self::Assumed => "nowhere: assumed",
        }
    }
}

impl PageSize {
    /// The live page size on `/`, else `KernelPageSize` from the tree's
    /// `/proc/self/smaps`, else an assumed 4 KiB.
    pub fn read(root: &SysRoot) -> Result<Self> {
        if root.is_live() {
            return Ok(Self {
                bytes: rustix::param::page_size() as u64,
                source: PageSizeSource::Auxv,
            });
        }
        let from_smaps = root.read_optional("/proc/self/smaps")?.and_then(|smaps| {
            smaps.lines().find_map(|line| {
                let kib = line
                    .strip_prefix("KernelPageSize:")?
                    .trim()
                    .strip_suffix("kB")?;
                kib.trim().parse::<u64>().ok().map(|k| k * 1024)
            })
        });
        Ok(match from_smaps {
            Some(bytes) => Self {
                bytes,
                source: PageSizeSource::Smaps,
            },
            None => Self {
                bytes: 4096,
                source: PageSizeSource::Assumed,
            },
        })
    }
}

/// Transparent huge page mode (`/sys/kernel/mm/transparent_hugepage/enabled`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum ThpMode {
    /// Huge pages for every anonymous mapping.
    Always,
    /// Only where `madvise(MADV_HUGEPAGE)` asks.
    Madvise,
    /// Never.
    Never,
    /// A mode this reader does not know.
    Other(String),
}

impl ThpMode {
    /// Reads the selected mode; `None` if the kernel has no THP support.
    pub fn read(root: &SysRoot) -> Result<Option<Self>> {
        let rel = "/sys/kernel/mm/transparent_hugepage/enabled";
        let Some(line) = root.read_line_optional(rel)? else {
            return Ok(None);
        };
        let selected = selected_in_brackets('[', ']')(&line).ok_or_else(|| {
            root.parse_error(rel, 1, "a choice line like `always [madvise] never`", &line)
        })?;
        Ok(Some(match selected {
            "always" => Self::Always,
            "madvise" => Self::Madvise,
            "never" => Self::Never,
            other => Self::Other(other.to_string()),
        }))
    }
}

/// RT throttling: real-time tasks may use `runtime_us` of every `period_us`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct RtThrottling {
    /// `/proc/sys/kernel/sched_rt_runtime_us`: microseconds, or -1 (the only
    /// value that disables throttling).
    pub runtime_us: i64,
    /// `/proc/sys/kernel/sched_rt_period_us`.
    pub period_us: u64,
}

impl RtThrottling {
    /// Reads both sysctls. A runtime below -1 is not a value the kernel
    /// accepts: an error naming the file and the value found.
    pub fn read(root: &SysRoot) -> Result<Self> {
        let runtime_rel = "/proc/sys/kernel/sched_rt_runtime_us";
        let expected = "-1 (unlimited) or microseconds >= 0";
        let runtime_us: i64 = root.parse(runtime_rel, expected)?;
        if runtime_us < -1 {
            return Err(root.parse_error(runtime_rel, 1, expected, &runtime_us.to_string()));
        }
        Ok(Self {
            runtime_us,
            period_us: root.parse("/proc/sys/kernel/sched_rt_period_us", "microseconds")?,
        })
    }

    /// True if real-time tasks are never throttled (`runtime_us == -1`).
    pub fn is_disabled(&self) -> bool {
        self.runtime_us == -1
    }

    /// The time RT tasks lose per period, in microseconds (0 if disabled).
    pub fn throttled_us(&self) -> u64 {
        match u64::try_from(self.runtime_us) {
            Ok(runtime) => self.period_us.saturating_sub(runtime),
            Err(_) => 0,
        }
    }
}

/// The periods the kernel lets a SCHED_DEADLINE reservation have:
/// `sched_setattr` refuses (EINVAL) a period (or, without one, a deadline)
/// outside `min_us..=max_us`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeadlinePeriodLimits {
    /// `/proc/sys/kernel/sched_deadline_period_min_us` (default 100 µs).
    pub min_us: u64,
    /// `/proc/sys/kernel/sched_deadline_period_max_us` (default 2^22 µs,
    /// about 4.2 s).
    pub max_us: u64,
}

impl DeadlinePeriodLimits {
    /// The kernel's defaults, in force on kernels without the sysctls.
    pub const DEFAULT: DeadlinePeriodLimits = DeadlinePeriodLimits {
        min_us: 100,
        max_us: 1 << 22,
    };

    /// Reads both sysctls; the default of each one that is not there.
    pub fn read(root: &SysRoot) -> Result<Self> {
        let read = |name: &str, default: u64| -> Result<u64> {
            let rel = format!("/proc/sys/kernel/sched_deadline_period_{name}_us");
            Ok(root
                .parse_optional(&rel, "microseconds")?
                .unwrap_or(default))
        };
        Ok(Self {
            min_us: read("min", Self::DEFAULT.min_us)?,
            max_us: read("max", Self::DEFAULT.max_us)?,
        })
    }
}

/// The steal time of each CPU (`/proc/stat`, the 8th value of a `cpuN`
/// line): time the hypervisor ran something else while the vCPU wanted to
/// run. The kernel counts it in USER_HZ ticks (10 ms at the usual 100), so
/// it says how much was stolen over seconds, not when.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct StealTime {
    /// (CPU, stolen ns since boot), in `/proc/stat` order.
    pub cpus: Vec<(u32, u64)>,
    /// The resolution: one USER_HZ tick, ns.
    pub tick_ns: u64,
}

impl StealTime {
    /// Reads `/proc/stat`.
    pub fn read(root: &SysRoot) -> Result<Self> {
        let rel = "/proc/stat";
        let text = root.read(rel)?;
        let ticks_per_second = rustix::param::clock_ticks_per_second().max(1);
        parse_steal(&text, ticks_per_second).map_err(|(line, found)| {
            root.parse_error(rel, line, "cpuN followed by at least 8 tick counts", &found)
        })
    }

    /// Stolen ns of `cpu` since `earlier` (0 if either reading lacks it).
    pub fn since(&self, earlier: &StealTime, cpu: u32) -> u64 {
        let of = |s: &StealTime| s.cpus.iter().find(|(c, _)| *c == cpu).map(|(_, ns)| *ns);
        match (of(self), of(earlier)) {
            (Some(now), Some(then)) => now.saturating_sub(then),
            _ => 0,
        }
    }
}

/// The steal column of every `cpuN` line of `/proc/stat` text, in ns;
/// `Err((line, text))` names a malformed line.
pub fn parse_steal(
    text: &str,
    ticks_per_second: u64,
) -> std::result::Result<StealTime, (usize, String)> {
    let tick_ns = 1_000_000_000 / ticks_per_second.max(1);
    let mut cpus = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let mut fields = line.split_whitespace();
        let Some(cpu) = fields
            .next()
            .and_then(|name| name.strip_prefix("cpu"))
            .filter(|n| !n.is_empty())
        else {
            continue;
        };
        let bad = || (index + 1, line.to_string());
        let cpu: u32 = cpu.parse().map_err(|_| bad())?;
        let steal: u64 = fields.nth(7).and_then(|v| v.parse().ok()).ok_or_else(bad)?;
        cpus.push((cpu, steal.saturating_mul(tick_ns)));
    }
    Ok(StealTime { cpus, tick_ns })
}

/// The cpufreq governor of one CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Governor {
    /// The CPU.
    pub cpu: u32,
    /// `cpufreq/scaling_governor`, or `None` if the CPU has no cpufreq driver.
    pub governor: Option<String>,
}

/// Governors of `cpus`.
pub fn governors(root: &SysRoot, cpus: &[u32]) -> Result<Vec<Governor>> {
    cpus.iter()
        .map(|&cpu| {
            Ok(Governor {
                cpu,
                governor: root.read_line_optional(&format!(
                    "/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"
                ))?,
            })
        })
        .collect()
}

/// CPU isolation from the scheduler and the tick.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Isolation {
    /// The `isolcpus=` argument on the kernel command line, verbatim.
    pub cmdline_isolcpus: Option<String>,
    /// The `nohz_full=` argument, verbatim.
    pub cmdline_nohz_full: Option<String>,
    /// The `rcu_nocbs=` argument, verbatim.
    pub cmdline_rcu_nocbs: Option<String>,
    /// CPUs isolated from the scheduler (`/sys/devices/system/cpu/isolated`).
    pub isolated: Vec<u32>,
    /// Tickless CPUs (`/sys/devices/system/cpu/nohz_full`); `None` if the
    /// kernel was built without `NO_HZ_FULL`.
    pub nohz_full: Option<Vec<u32>>,
}

impl Isolation {
    /// Reads `/proc/cmdline` and the sysfs isolation files.
    pub fn read(root: &SysRoot) -> Result<Self> {
        let cmdline = root.read_optional("/proc/cmdline")?.unwrap_or_default();
        let isolated =
            read_optional_list(root, "/sys/devices/system/cpu/isolated")?.unwrap_or_default();
        let nohz_full = read_optional_list(root, "/sys/devices/system/cpu/nohz_full")?;
        Ok(Self {
            cmdline_isolcpus: cmdline_value(&cmdline, "isolcpus"),
            cmdline_nohz_full: cmdline_value(&cmdline, "nohz_full"),
            cmdline_rcu_nocbs: cmdline_value(&cmdline, "rcu_nocbs"),
            isolated,
            nohz_full,
        })
    }
}

fn read_optional_list(root: &SysRoot, rel: &str) -> Result<Option<Vec<u32>>> {
    let Some(line) = root.read_line_optional(rel)? else {
        return Ok(None);
    };
    // The kernel writes "(null)" into nohz_full when the mask is empty.
    if line == "(null)" {
        return Ok(Some(Vec::new()));
    }
    parse_cpu_list(&line)
        .map(Some)
        .map_err(|e| root.parse_error(rel, 1, "a CPU list like 0-3,8", &e.to_string()))
}

/// The value of `key=` on a kernel command line (the last one wins, as in the
/// kernel); arguments after a bare `--` belong to init and are ignored.
pub fn cmdline_value(cmdline: &str, key: &str) -> Option<String> {
    cmdline
        .split_whitespace()
        .take_while(|word| *word != "--")
        .filter_map(|word| word.strip_prefix(key)?.strip_prefix('='))
        .last()
        .map(str::to_string)
}

/// `RLIMIT_MEMLOCK`: how much memory the process may lock; `None` = unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct MemlockLimit {
    /// Soft limit in bytes.
    pub soft_bytes: Option<u64>,
    /// Hard limit in bytes.
    pub hard_bytes: Option<u64>,
}

impl MemlockLimit {
    /// `getrlimit(RLIMIT_MEMLOCK)` on `/`, else the `Max locked memory` line
    /// of the tree's `/proc/self/limits`.
    pub fn read(root: &SysRoot) -> Result<Self> {
        if root.is_live() {
            let limit = rustix::process::getrlimit(rustix::process::Resource::Memlock);
            return Ok(Self {
                soft_bytes: limit.current,
                hard_bytes: limit.maximum,
            });
        }
        let rel = "/proc/self/limits";
        let text = root.read(rel)?;
        let (index, line) = text
            .lines()
            .enumerate()
            .find(|(_, l)| l.starts_with("Max locked memory"))
            .ok_or_else(|| root.parse_error(rel, 1, "a `Max locked memory` line", ""))?;
        let fields: Vec<&str> = line["Max locked memory".len()..]
            .split_whitespace()
            .collect();
        let value = |s: &str| -> Result<Option<u64>> {
            if s == "unlimited" {
                Ok(None)
            } else {
                s.parse()
                    .map(Some)
                    .map_err(|_| root.parse_error(rel, index + 1, "bytes or `unlimited`", line))
            }
        };
        match fields.as_slice() {
            [soft, hard, ..] => Ok(Self {
                soft_bytes: value(soft)?,
                hard_bytes: value(hard)?,
            }),
            _ => Err(root.parse_error(rel, index + 1, "soft and hard limits", line)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preemption_models() {
        let rt = "#1 SMP PREEMPT_RT Thu Jan 1";
        assert_eq!(preemption_model(rt, None, None), Preemption::Rt);
        assert_eq!(preemption_model("#1 SMP", Some("1"), None), Preemption::Rt);
        let dynamic = "#1 SMP PREEMPT_DYNAMIC @0";
        assert_eq!(preemption_model(dynamic, None, None), Preemption::Dynamic);
        assert_eq!(
            preemption_model(dynamic, None, Some("none voluntary (full) lazy")),
            Preemption::Full
        );
        assert_eq!(
            preemption_model("#1 SMP PREEMPT x", None, None),
            Preemption::Full
        );
        assert_eq!(preemption_model("#1 SMP", None, None), Preemption::Unknown);
    }

    #[test]
    fn deadline_period_limits_are_read_or_the_kernels_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let root = SysRoot::at(dir.path());
        assert_eq!(
            DeadlinePeriodLimits::read(&root).unwrap(),
            DeadlinePeriodLimits::DEFAULT
        );
        let kernel = dir.path().join("proc/sys/kernel");
        std::fs::create_dir_all(&kernel).unwrap();
        std::fs::write(kernel.join("sched_deadline_period_max_us"), "1000000\n").unwrap();
        let limits = DeadlinePeriodLimits::read(&root).unwrap();
        assert_eq!((limits.min_us, limits.max_us), (100, 1_000_000));
        std::fs::write(kernel.join("sched_deadline_period_min_us"), "x\n").unwrap();
        assert!(
            DeadlinePeriodLimits::read(&root).is_err(),
            "a bad value is an error"
        );
    }

    #[test]
    fn steal_time_is_the_eighth_value_of_each_cpu_line_in_ticks() {
        let text = "cpu  9 9 9 9 9 9 9 99 0 0\n\
                    cpu0 1 2 3 4 5 6 7 8 0 0\n\
                    cpu1 1 2 3 4 5 6 7 12 0 0\n\
                    intr 5 6\n";
        let steal = parse_steal(text, 100).unwrap();
        assert_eq!(steal.tick_ns, 10_000_000);
        assert_eq!(steal.cpus, vec![(0, 80_000_000), (1, 120_000_000)]);
        let later = parse_steal(&text.replace(" 12 0 0", " 15 0 0"), 100).unwrap();
        assert_eq!(later.since(&steal, 1), 30_000_000);
        assert_eq!(later.since(&steal, 0), 0);
        assert_eq!(later.since(&steal, 7), 0, "an unknown CPU");
        assert_eq!(
            parse_steal("cpu0 1 2 3\n", 100).unwrap_err(),
            (1, "cpu0 1 2 3".to_string())
        );
    }

    #[test]
    fn cmdline_values_ignore_init_arguments() {
        let line = "quiet isolcpus=domain,2-3 nohz_full=2-3 -- isolcpus=9";
        assert_eq!(
            cmdline_value(line, "isolcpus").as_deref(),
            Some("domain,2-3")
        );
        assert_eq!(cmdline_value(line, "nohz_full").as_deref(), Some("2-3"));
        assert_eq!(cmdline_value(line, "rcu_nocbs"), None);
        assert_eq!(cmdline_value("nohz_full_x=1", "nohz_full"), None);
    }

    #[test]
    fn rt_throttling_arithmetic() {
        let on = RtThrottling {
            runtime_us: 950_000,
            period_us: 1_000_000,
        };
        assert_eq!((on.is_disabled(), on.throttled_us()), (false, 50_000));
        let off = RtThrottling {
            runtime_us: -1,
            period_us: 1_000_000,
        };
        assert_eq!((off.is_disabled(), off.throttled_us()), (true, 0));
    }
}
