//! Whether the dynamic loader will load the shim into a program at all,
//! decided before it is started: `LD_PRELOAD` is read by the dynamic
//! loader (`ld.so`), so a statically linked program (no `PT_INTERP`
//! program header: no loader runs) never gets it, and a set-user-ID or
//! set-group-ID program that changes the caller's identity runs in secure
//! mode, where the loader ignores preload paths that contain a slash (the
//! shim's always does). A `#!` script runs its interpreter, so the
//! interpreter decides. The program is found through `PATH` as `execvp`
//! finds it.

use object::read::elf::{FileHeader, ProgramHeader};
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use tinct_base::InputError;

/// How many `#!` interpreters are followed (the kernel's own limit,
/// `BINPRM_MAX_RECURSION`, is 4).
const MAX_INTERPRETERS: usize = 4;
/// The bytes of a `#!` line the kernel reads (`BINPRM_BUF_SIZE`).
const SHEBANG_BYTES: usize = 256;

/// A program the loader will not load the shim into, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreloadIgnored {
    /// The program as found (through `PATH` if it was given by name).
    pub program: PathBuf,
    /// Why the shim will not be loaded.
    pub reason: Reason,
}

/// Why the dynamic loader will not load the shim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// An ELF program without a `PT_INTERP` program header: no dynamic
    /// loader runs.
    Static,
    /// Set-user-ID or set-group-ID to an identity other than the caller's:
    /// the loader runs in secure mode.
    SecureMode {
        /// Which bit.
        bit: SetId,
        /// The owner (uid or gid) the program runs as.
        becomes: u32,
        /// The caller's (real uid or gid).
        caller: u32,
    },
    /// A `#!` script whose interpreter is one of the above.
    Interpreter(Box<PreloadIgnored>),
}

/// The set-ID bit that changes the identity a program runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetId {
    /// Set-user-ID: runs as the file's owner.
    User,
    /// Set-group-ID: runs as the file's group.
    Group,
}

impl fmt::Display for PreloadIgnored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ", self.program.display())?;
        match &self.reason {
            Reason::Static => write!(
                f,
                "is statically linked (no PT_INTERP program header): no dynamic loader runs \
                 to read LD_PRELOAD"
            ),
            Reason::SecureMode {
                bit,
                becomes,
                caller,
            } => {
                let (bit, id) = match bit {
                    SetId::User => ("set-user-ID", "uid"),
                    SetId::Group => ("set-group-ID", "gid"),
                };
                write!(
                    f,
                    "is {bit} (runs as {id} {becomes}, started by {id} {caller}): the loader \
                     runs it in secure mode and ignores LD_PRELOAD"
                )
            }
            Reason::Interpreter(inner) => write!(f, "is a #! script: its interpreter {inner}"),
        }
    }
}

/// Whether the loader will ignore the shim in `program` (a path, or a
/// name found through the `PATH` of this process); `None` when it will
/// load it, or when the program cannot be found or read (starting it then
/// fails with the kernel's own reason).
pub fn preload_ignored(program: &OsStr) -> Option<PreloadIgnored> {
    let path = resolve(program, std::env::var_os("PATH").as_deref())?;
    check(&path, MAX_INTERPRETERS)
}

/// Whether the shim reaches the program of `command` (its first word):
/// `Ok(None)` when it does; else the program would run uncoloured, which
/// under `strict` (`--strict`) is bad input, refused before it starts, and
/// otherwise a warning, returned to be said.
pub fn check_loads(command: &[OsString], strict: bool) -> Result<Option<String>, InputError> {
    let Some(ignored) = command.first().and_then(|p| preload_ignored(p)) else {
        return Ok(None);
    };
    if strict {
        return Err(InputError::new(
            "",
            "--strict",
            "a program the shim can be loaded into",
            format!("that {ignored}; it would run uncoloured (drop --strict to run it so)"),
        ));
    }
    Ok(Some(format!("the program will run uncoloured: {ignored}")))
}

/// `program` as `execvp` finds it: itself if it contains a slash, else
/// the first executable regular file of that name in `path_var` (an empty
/// entry is the current directory; glibc's default without `PATH`).
pub fn resolve(program: &OsStr, path_var: Option<&OsStr>) -> Option<PathBuf> {
    if program.as_bytes().contains(&b'/') {
        return Some(PathBuf::from(program));
    }
    if program.is_empty() {
        return None;
    }
    let search = path_var.unwrap_or(OsStr::new("/bin:/usr/bin"));
    search
        .as_bytes()
        .split(|&b| b == b':')
        .map(|dir| match dir {
            b"" => Path::new(".").join(program),
            dir => Path::new(OsStr::from_bytes(dir)).join(program),
        })
        .find(|candidate| is_executable_file(candidate))
}

fn is_executable_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
        && rustix::fs::access(path, rustix::fs::Access::EXEC_OK).is_ok()
}

/// The verdict for one file, following up to `interpreters` `#!` lines.
fn check(path: &Path, interpreters: usize) -> Option<PreloadIgnored> {
    let file = std::fs::File::open(path).ok()?;
    let mut head = [0u8; SHEBANG_BYTES];
    let read = read_head(&file, &mut head);
    let head = &head[..read];
    let ignored = |reason| {
        Some(PreloadIgnored {
            program: path.to_path_buf(),
            reason,
        })
    };
    if let Some(interpreter) = head.strip_prefix(b"#!").and_then(shebang_interpreter) {
        // The kernel ignores the set-ID bits of a script: only its
        // interpreter counts.
        let inner = check(&interpreter, interpreters.checked_sub(1)?)?;
        return ignored(Reason::Interpreter(Box::new(inner)));
    }
    if !head.starts_with(b"\x7fELF") {
        return None;
    }
    if let Some(reason) = secure_mode(&file) {
        return ignored(reason);
    }
    match has_interpreter(&file) {
        Some(false) => ignored(Reason::Static),
        _ => None,
    }
}

/// Reads as much of the start of `file` as fits in `buffer`.
fn read_head(mut file: &std::fs::File, buffer: &mut [u8]) -> usize {
    use std::io::Read;
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read(&mut buffer[filled..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => filled += n,
        }
    }
    filled
}

/// The interpreter's path of a `#!` line (after the `#!`), as the kernel
/// reads it: blanks skipped, then up to a blank or the line's end.
fn shebang_interpreter(line: &[u8]) -> Option<PathBuf> {
    let line = line.split(|&b| b == b'\n').next()?;
    let start = line.iter().position(|&b| b != b' ' && b != b'\t')?;
    let word = line[start..]
        .split(|&b| b == b' ' || b == b'\t')
        .next()
        .filter(|w| !w.is_empty())?;
    Some(PathBuf::from(OsStr::from_bytes(word)))
}

/// Secure mode (`AT_SECURE`): a set-user-ID bit to another user than the
/// caller, or a set-group-ID bit (with group execute) to another group, on
/// a file system not mounted `nosuid`.
fn secure_mode(file: &std::fs::File) -> Option<Reason> {
    let meta = file.metadata().ok()?;
    let nosuid = rustix::fs::fstatvfs(file)
        .is_ok_and(|s| s.f_flag.contains(rustix::fs::StatVfsMountFlags::NOSUID));
    if nosuid {
        return None;
    }
    let mode = meta.mode();
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    if mode & libc::S_ISUID != 0 && meta.uid() != uid {
        return Some(Reason::SecureMode {
            bit: SetId::User,
            becomes: meta.uid(),
            caller: uid,
        });
    }
    let setgid = libc::S_ISGID | libc::S_IXGRP;
    if mode & setgid == setgid && meta.gid() != gid {
        return Some(Reason::SecureMode {
            bit: SetId::Group,
            becomes: meta.gid(),
            caller: gid,
        });
    }
    None
}

/// Whether an ELF file has a `PT_INTERP` program header (`None`: not an
/// ELF file object can read).
fn has_interpreter(file: &std::fs::File) -> Option<bool> {
    let data = object::ReadCache::new(file);
    match object::FileKind::parse(&data).ok()? {
        object::FileKind::Elf32 => {
            interpreter_header::<object::elf::FileHeader32<object::Endianness>>(&data)
        }
        object::FileKind::Elf64 => {
            interpreter_header::<object::elf::FileHeader64<object::Endianness>>(&data)
        }
        _ => None,
    }
}

fn interpreter_header<Elf: FileHeader<Endian = object::Endianness>>(
    data: &object::ReadCache<&std::fs::File>,
) -> Option<bool> {
    let header = Elf::parse(data).ok()?;
    let endian = header.endian().ok()?;
    let headers = header.program_headers(endian, data).ok()?;
    Some(
        headers
            .iter()
            .any(|h| h.p_type(endian) == object::elf::PT_INTERP),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_dynamic_program_is_fine_and_a_name_is_found_through_path() {
        let sh = resolve(
            OsStr::new("sh"),
            Some(OsStr::new("/nonexistent:/bin:/usr/bin")),
        );
        let sh = sh.expect("sh on /bin or /usr/bin");
        assert!(sh.ends_with("sh"), "{}", sh.display());
        assert_eq!(check(&sh, MAX_INTERPRETERS), None);
        assert_eq!(
            resolve(OsStr::new("sh"), Some(OsStr::new("/nonexistent"))),
            None
        );
        assert_eq!(resolve(OsStr::new("./x"), None), Some(PathBuf::from("./x")));
    }

    #[test]
    fn shebang_lines_name_their_interpreter_as_the_kernel_reads_them() {
        let read = |line: &[u8]| shebang_interpreter(line).map(|p| p.display().to_string());
        assert_eq!(read(b"/bin/sh\n"), Some("/bin/sh".into()));
        assert_eq!(
            read(b" \t/usr/bin/env python3 -u\nx"),
            Some("/usr/bin/env".into())
        );
        assert_eq!(read(b"   \n/bin/sh"), None);
    }

    #[test]
    fn set_group_id_to_another_group_is_secure_mode_and_to_ones_own_is_not() {
        if !tinct_sys::testing::privileged_or_skip("chown to group nobody") {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("true");
        let original = resolve(OsStr::new("true"), Some(OsStr::new("/bin:/usr/bin"))).unwrap();
        std::fs::copy(original, &copy).unwrap();
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o2755)).unwrap();
        assert_eq!(check(&copy, MAX_INTERPRETERS), None, "its own group");
        std::os::unix::fs::chown(&copy, None, Some(65534)).unwrap();
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o2755)).unwrap();
        let ignored = check(&copy, MAX_INTERPRETERS).expect("secure mode");
        assert_eq!(
            ignored.reason,
            Reason::SecureMode {
                bit: SetId::Group,
                becomes: 65534,
                caller: 0
            }
        );
        // Without group execute the bit means mandatory locking, not set-ID.
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o2745)).unwrap();
        assert_eq!(check(&copy, MAX_INTERPRETERS), None);
    }

    #[test]
    fn a_script_of_a_script_reaches_no_further_than_the_kernel() {
        let dir = tempfile::tempdir().unwrap();
        // A chain of scripts longer than the kernel follows, ending at a
        // file that is not a program: nothing to say about it.
        let mut previous = dir.path().join("end");
        std::fs::write(&previous, "plain text").unwrap();
        for k in 0..MAX_INTERPRETERS + 2 {
            let script = dir.path().join(format!("s{k}"));
            std::fs::write(&script, format!("#!{}\n", previous.display())).unwrap();
            std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
            previous = script;
        }
        assert_eq!(preload_ignored(previous.as_os_str()), None);
    }
}
