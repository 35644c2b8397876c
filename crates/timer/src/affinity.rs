//! Which CPUs a thread may run on. A child inherits its parent's affinity, so a control meter
//! started by a generator confined to one core (`taskset -c 1 sojourn …`) would otherwise share
//! that core with it and measure the generator's load instead of the machine's.
use std::io;

use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};

/// The CPUs the calling thread may run on, in order.
pub fn this_thread() -> io::Result<Vec<usize>> {
    let set = sched_getaffinity(None)?;
    Ok((0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect())
}

/// Confines the calling thread (and the threads and processes it starts afterwards) to `cpus`.
pub fn pin_this_thread(cpus: &[usize]) -> io::Result<()> {
    let mut set = CpuSet::new();
    for &c in cpus.iter().filter(|&&c| c < CpuSet::MAX_CPU) {
        set.set(c);
    }
    Ok(sched_setaffinity(None, &set)?)
}

/// The machine's online CPUs (`/sys/devices/system/cpu/online`, e.g. `0-3,6`).
pub fn online() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|text| parse_list(&text))
        .unwrap_or_default()
}

/// Moves the calling thread off the CPUs it inherited onto the machine's others, when there are
/// others: a process started by a generator then runs beside it, not on its cores. Returns the
/// CPUs it may run on afterwards, as a list (`0,2-3`); empty if unknown.
pub fn leave_parents_cpus() -> String {
    let Ok(inherited) = this_thread() else {
        return String::new();
    };
    let free: Vec<usize> = online()
        .into_iter()
        .filter(|c| !inherited.contains(c))
        .collect();
    // A cpuset may forbid some of the free CPUs; the kernel keeps the allowed ones, and refuses
    // only when none is, in which case the inherited CPUs stay.
    if !free.is_empty() {
        let _ = pin_this_thread(&free);
    }
    this_thread().map(|c| format_list(&c)).unwrap_or_default()
}

/// `0-3,6` → [0, 1, 2, 3, 6]; `None` for anything else.
pub fn parse_list(text: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                if b < a || b >= CpuSet::MAX_CPU {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

/// [0, 1, 2, 3, 6] → `0-3,6`.
pub fn format_list(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(match j > i {
            true => format!("{}-{}", cpus[i], cpus[j]),
            false => cpus[i].to_string(),
        });
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_as_the_kernel_writes_them() {
        let table: [(&str, Option<Vec<usize>>); 6] = [
            ("0-1\n", Some(vec![0, 1])),
            ("0", Some(vec![0])),
            ("0-3,6", Some(vec![0, 1, 2, 3, 6])),
            ("", Some(vec![])),
            ("3-1", None), // backwards
            ("a", None),
        ];
        for (text, want) in table {
            assert_eq!(parse_list(text), want, "{text:?}");
        }
        assert_eq!(format_list(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(format_list(&[1]), "1");
        assert_eq!(format_list(&[]), "");
    }

    /// A thread confined to one CPU is on that CPU alone; its children inherit it.
    #[test]
    fn pinning_a_thread_confines_it() {
        let online = online();
        assert!(!online.is_empty(), "no online CPUs read");
        let last = *online.last().unwrap();
        std::thread::spawn(move || {
            pin_this_thread(&[last]).unwrap();
            assert_eq!(this_thread().unwrap(), vec![last]);
            let child = std::thread::spawn(this_thread).join().unwrap().unwrap();
            assert_eq!(child, vec![last]);
        })
        .join()
        .unwrap();
    }
}
