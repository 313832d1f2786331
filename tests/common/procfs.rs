//! What `/proc` says of a process the `--init`, `--wait` and `--watch` tests
//! started: its signal masks, its name, its CPU time and its memory.

use std::fs;

/// A `/proc/PID/status` field's text (`Name`, `VmRSS`), trimmed; None once the process is gone.
pub fn status_field(pid: i32, field: &str) -> Option<String> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix(field)?.strip_prefix(':')).map(|v| v.trim().to_string())
}

/// A `/proc/PID/status` mask (`SigCgt`, `SigBlk`) as a number; None once the process is gone.
pub fn status_mask(pid: i32, field: &str) -> Option<u64> {
    u64::from_str_radix(&status_field(pid, field)?, 16).ok()
}

/// The process's name (`Name` of `/proc/PID/status`).
pub fn status_name(pid: i32) -> Option<String> {
    status_field(pid, "Name")
}

/// The process's CPU time so far (user + system), in clock ticks (1/100 s).
pub fn cpu_ticks(pid: u32) -> u64 {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command's `)`: state is the 3rd, utime the 14th, stime the 15th.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// The process's resident memory, in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    let rss = status_field(pid as i32, "VmRSS").unwrap();
    rss.split_whitespace().next().unwrap().parse().unwrap()
}
