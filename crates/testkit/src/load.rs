//! How much CPU the rest of the machine took while a test measured: the half of "is this
//! machine quiet?" that a control meter cannot see.
//!
//! The control meter only sleeps, and the kernel's scheduler favours a thread waking from a
//! sleep over ones that have run: with both cores of a 2-vCPU machine held by busy processes, the
//! meter's wake-ups stay within 0.1 ms at p99 while a server under test, whose threads run as
//! well as sleep, answers milliseconds late at p95 (measured with two spinning shells beside
//! `crates/server/tests/accuracy.rs`). So the machine is also judged by the CPU time that went
//! to anything outside this test's own process tree, hypervisor steal included, from the
//! kernel's counters.
use std::time::Instant;

/// The kernel's counters tick at USER_HZ, which Linux fixes at 100 for user space on every
/// architecture (`man 5 proc`), whatever the kernel's own tick rate.
const TICKS_PER_SECOND: f64 = 100.0;

/// Below this the counters' 10 ms ticks are too coarse to say anything.
const SHORTEST: f64 = 0.2;

/// A start point: the machine's busy time and this process tree's, in ticks.
pub struct OtherLoad {
    started: Instant,
    at_start: Option<(u64, u64)>,
}

impl OtherLoad {
    pub fn start() -> OtherLoad {
        OtherLoad {
            started: Instant::now(),
            at_start: counters(),
        }
    }

    /// The cores that work outside this process and its reaped children used on average since
    /// the start; `None` if the counters cannot be read or the stretch was too short to tell.
    pub fn cores(&self) -> Option<f64> {
        let (machine, own) = self.at_start?;
        let (machine_now, own_now) = counters()?;
        cores_outside(
            machine_now.saturating_sub(machine),
            own_now.saturating_sub(own),
            self.started.elapsed().as_secs_f64(),
        )
    }
}

/// Cores used outside, from the machine's and this tree's busy ticks over `seconds`.
pub fn cores_outside(machine: u64, own: u64, seconds: f64) -> Option<f64> {
    (seconds >= SHORTEST).then(|| machine.saturating_sub(own) as f64 / TICKS_PER_SECOND / seconds)
}

fn counters() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    Some((machine_busy(&stat)?, tree_ticks(std::process::id())?))
}

/// The CPU ticks of process `root` and all its descendants: those alive (or exited and not yet
/// reaped) from their own counters, those reaped from their parents' (a reaped child's ticks move
/// into its parent's). Test binaries run tests side by side, so a neighbouring test's
/// `sojourn run` is this tree's work, not the machine's.
fn tree_ticks(root: u32) -> Option<u64> {
    let processes: Vec<(u32, u32, u64)> = std::fs::read_dir("/proc")
        .ok()?
        .filter_map(|entry| {
            let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (ppid, ticks) = parent_and_ticks(&stat)?;
            Some((pid, ppid, ticks))
        })
        .collect();
    let mut inside = vec![root];
    let mut total = 0;
    while let Some(pid) = inside.pop() {
        for &(child, parent, ticks) in &processes {
            if child == pid {
                total += ticks;
            }
            if parent == pid {
                inside.push(child);
            }
        }
    }
    Some(total)
}

/// Busy ticks of all CPUs from `/proc/stat`: user, nice, system, irq, softirq and steal (time
/// the hypervisor gave to someone else), leaving out idle and iowait. Guest time is already
/// inside user and nice.
pub fn machine_busy(proc_stat: &str) -> Option<u64> {
    let line = proc_stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    let busy = [0, 1, 2, 5, 6, 7];
    busy.iter().map(|&i| fields.get(i).copied()).sum()
}

/// A process's parent and its user and system ticks with those of the children it has reaped,
/// from `/proc/PID/stat` (fields 4 and 14–17, counted after the command name, which may hold
/// spaces and parentheses).
pub fn parent_and_ticks(proc_pid_stat: &str) -> Option<(u32, u64)> {
    let after_name = &proc_pid_stat[proc_pid_stat.rfind(')')? + 1..];
    // After the name come the state (field 3), the parent (4), …, utime (14): here 0, 1, 11.
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let parent = fields.get(1)?.parse().ok()?;
    let ticks = fields
        .get(11..15)?
        .iter()
        .map(|f| f.parse::<u64>().ok())
        .sum::<Option<u64>>()?;
    Some((parent, ticks))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn machine_busy_counts_work_and_steal_but_not_idle() {
        // user nice system idle iowait irq softirq steal guest guest_nice
        let stat = "cpu  100 20 30 5000 70 4 5 60 9 1\ncpu0 1 2 3 4 5 6 7 8 9 10\n";
        assert_eq!(machine_busy(stat), Some(100 + 20 + 30 + 4 + 5 + 60));
        assert_eq!(machine_busy("intr 1 2\n"), None);
    }

    #[test]
    fn a_stat_line_is_read_past_a_name_with_spaces_and_parentheses() {
        let stat = "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 500 0 0 0 11 22 33 44 20 0 1 0";
        assert_eq!(parent_and_ticks(stat), Some((17, 11 + 22 + 33 + 44)));
    }

    /// One test, not two: a shell spinning beside this process's own spinning would be
    /// counted, rightly, in the other's stretch. The spinning shell is started in the background
    /// of one that exits at once, so that it leaves this process's tree (whose work would be this
    /// test's own). Each stretch is judged against one at rest just before it, so a machine busy
    /// with something else throughout does not decide the result.
    #[test]
    fn this_trees_work_is_left_out_and_another_processs_is_counted() {
        let stretch = Duration::from_millis(500);
        let at_rest = || {
            let load = OtherLoad::start();
            std::thread::sleep(stretch);
            load.cores().expect("the counters are readable")
        };

        let rest = at_rest();
        let load = OtherLoad::start();
        let until = Instant::now() + stretch;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
        let own = load.cores().unwrap();
        assert!(
            own < rest + 0.5,
            "this process's own spinning counted: {own:.2} cores against {rest:.2} at rest"
        );

        // A child's work, alive or reaped, is this tree's too: tests run `sojourn` side by side.
        let rest = at_rest();
        let load = OtherLoad::start();
        let child = std::process::Command::new("timeout")
            .args(["0.5", "sh", "-c", "while :; do :; done"])
            .spawn()
            .expect("a shell");
        std::thread::sleep(stretch / 2);
        let alive = load.cores().unwrap();
        let status = child.wait_with_output().expect("reaping the shell").status;
        assert!(!status.success(), "the shell spun until stopped");
        let reaped = load.cores().unwrap();
        assert!(
            alive < rest + 0.5 && reaped < rest + 0.5,
            "a child's spinning counted: {alive:.2} cores alive, {reaped:.2} reaped, against \
             {rest:.2} at rest"
        );

        let rest = at_rest();
        let spin = "timeout 5 sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!";
        let started = std::process::Command::new("sh")
            .args(["-c", spin])
            .output()
            .expect("a shell");
        let pid = String::from_utf8(started.stdout).unwrap();
        let load = OtherLoad::start();
        std::thread::sleep(stretch);
        let other = load.cores().unwrap();
        std::process::Command::new("kill")
            .arg(pid.trim())
            .status()
            .expect("stopping the spinning shell");
        assert!(
            other > rest + 0.7,
            "a spinning shell counted as {other:.2} cores against {rest:.2} at rest"
        );
    }

    #[test]
    fn too_short_a_stretch_says_nothing() {
        assert_eq!(cores_outside(10, 0, 0.05), None);
        assert_eq!(cores_outside(300, 100, 1.0), Some(2.0));
    }
}
