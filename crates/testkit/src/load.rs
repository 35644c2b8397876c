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
//!
//! The machine's busy time is what its CPUs were *not* idle, not the sum of `/proc/stat`'s user
//! and system fields. Those fields are sampled at the kernel's tick (250 Hz here, without
//! `CONFIG_VIRT_CPU_ACCOUNTING`): each tick charges a whole 4 ms to whatever runs at that
//! instant. A generator sending every millisecond on a schedule whose phase happens to put a
//! send on every tick was charged a whole core that way, while its own process counters
//! (scaled to the scheduler's exact run time) showed a tenth of it: a quiet machine read as
//! "other work 0.53–0.65 cores" in one run in six, with no process outside the tree busy. Idle
//! time, under `NO_HZ`, is clocked exactly as each CPU enters and leaves idle.
use std::time::Instant;

/// The kernel's counters tick at USER_HZ, which Linux fixes at 100 for user space on every
/// architecture (`man 5 proc`), whatever the kernel's own tick rate.
const TICKS_PER_SECOND: f64 = 100.0;

/// Below this the counters' 10 ms ticks are too coarse to say anything.
const SHORTEST: f64 = 0.2;

/// A start point: the machine's idle time and this process tree's busy time, in ticks, and
/// every process's ticks (to name the busiest outside the tree when the machine was noisy).
pub struct OtherLoad {
    started: Instant,
    at_start: Option<Counters>,
    processes: Vec<Process>,
    stat: String,
}

impl OtherLoad {
    pub fn start() -> OtherLoad {
        OtherLoad {
            started: Instant::now(),
            at_start: counters(),
            processes: processes().unwrap_or_default(),
            stat: std::fs::read_to_string("/proc/stat").unwrap_or_default(),
        }
    }

    /// Where the work outside this tree went since the start, in cores: the three busiest
    /// processes outside it, the kernel's interrupt and softirq time (charged to no process)
    /// and hypervisor steal. Said when a run was judged noisy, so the next look starts from
    /// a cause and not a guess.
    pub fn breakdown(&self) -> String {
        let seconds = self.started.elapsed().as_secs_f64().max(SHORTEST);
        let cores = |ticks: u64| ticks as f64 / TICKS_PER_SECOND / seconds;
        let now = processes().unwrap_or_default();
        let inside = tree(&now, std::process::id());
        let mut outside: Vec<(u64, &str)> = now
            .iter()
            .filter(|p| !inside.contains(&p.pid))
            .map(|p| {
                let before = self.processes.iter().find(|q| q.pid == p.pid);
                let ticks = p.ticks - before.map_or(0, |q| q.ticks.min(p.ticks));
                (ticks, p.name.as_str())
            })
            .filter(|&(ticks, _)| ticks > 0)
            .collect();
        outside.sort_unstable_by(|a, b| b.cmp(a));
        let mut said: Vec<String> = outside
            .iter()
            .take(3)
            .map(|&(ticks, name)| format!("{name} {:.2}", cores(ticks)))
            .collect();
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let field = |i: usize| field_delta(&self.stat, &stat, i).map(cores);
        if let (Some(irq), Some(softirq), Some(steal)) = (field(5), field(6), field(7)) {
            said.push(format!("interrupts {:.2}", irq + softirq));
            said.push(format!("steal {steal:.2}"));
        }
        said.join(", ")
    }

    /// The cores that work outside this process and its reaped children used on average since
    /// the start; `None` if the counters cannot be read or the stretch was too short to tell.
    pub fn cores(&self) -> Option<f64> {
        let start = self.at_start?;
        let now = counters()?;
        let seconds = self.started.elapsed().as_secs_f64();
        let busy = busy_ticks(now.cpus, seconds, now.idle.saturating_sub(start.idle));
        cores_outside(busy, now.own.saturating_sub(start.own), seconds)
    }
}

/// Cores used outside, from the machine's and this tree's busy ticks over `seconds`.
pub fn cores_outside(machine: u64, own: u64, seconds: f64) -> Option<f64> {
    (seconds >= SHORTEST).then(|| machine.saturating_sub(own) as f64 / TICKS_PER_SECOND / seconds)
}

/// The ticks `cpus` CPUs were busy in `seconds`, of which they were idle for `idle` ticks.
pub fn busy_ticks(cpus: u64, seconds: f64, idle: u64) -> u64 {
    let all = (cpus as f64 * seconds * TICKS_PER_SECOND).round() as u64;
    all.saturating_sub(idle)
}

#[derive(Clone, Copy)]
struct Counters {
    cpus: u64,
    idle: u64,
    own: u64,
}

fn counters() -> Option<Counters> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    Some(Counters {
        cpus: cpus(&stat),
        idle: machine_idle(&stat)?,
        own: tree_ticks(std::process::id())?,
    })
}

/// The CPUs `/proc/stat` lists (those online), one `cpuN` line each.
fn cpus(proc_stat: &str) -> u64 {
    let numbered =
        |l: &&str| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit);
    proc_stat.lines().filter(numbered).count() as u64
}

/// A process as `/proc/PID/stat` shows it: its parent, its name and its ticks (its own and
/// those of the children it reaped).
struct Process {
    pid: u32,
    parent: u32,
    ticks: u64,
    name: String,
}

fn processes() -> Option<Vec<Process>> {
    let listed = std::fs::read_dir("/proc").ok()?.filter_map(|entry| {
        let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (parent, ticks) = parent_and_ticks(&stat)?;
        let name = stat.get(stat.find('(')? + 1..stat.rfind(')')?)?.to_string();
        Some(Process {
            pid,
            parent,
            ticks,
            name,
        })
    });
    Some(listed.collect())
}

/// The pids of process `root` and all its descendants.
fn tree(processes: &[Process], root: u32) -> Vec<u32> {
    let mut inside = vec![root];
    let mut next = 0;
    while let Some(&pid) = inside.get(next) {
        inside.extend(processes.iter().filter(|p| p.parent == pid).map(|p| p.pid));
        next += 1;
    }
    inside
}

/// The CPU ticks of process `root` and all its descendants: those alive (or exited and not yet
/// reaped) from their own counters, those reaped from their parents' (a reaped child's ticks move
/// into its parent's). Test binaries run tests side by side, so a neighbouring test's
/// `sojourn run` is this tree's work, not the machine's.
fn tree_ticks(root: u32) -> Option<u64> {
    let processes = processes()?;
    let inside = tree(&processes, root);
    let own = processes.iter().filter(|p| inside.contains(&p.pid));
    Some(own.map(|p| p.ticks).sum())
}

/// How many ticks field `i` (0 = user) of the `cpu` line grew by from `before` to `after`.
fn field_delta(before: &str, after: &str, i: usize) -> Option<u64> {
    let field = |stat: &str| -> Option<u64> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        line.split_whitespace().nth(i + 1)?.parse().ok()
    };
    Some(field(after)?.saturating_sub(field(before)?))
}

/// Idle ticks of all CPUs from `/proc/stat`: idle and iowait (a CPU waiting on a disk runs
/// nothing). Everything else (user, system, interrupts, steal: time the hypervisor gave to
/// someone else) is busy.
pub fn machine_idle(proc_stat: &str) -> Option<u64> {
    let line = proc_stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    Some(fields.get(3)? + fields.get(4)?)
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
    fn idle_is_idle_and_iowait_and_the_rest_is_busy() {
        // user nice system idle iowait irq softirq steal guest guest_nice
        let stat = "cpu  100 20 30 5000 70 4 5 60 9 1\ncpu0 1 2 3 4 5 6 7 8 9 10\n\
                    cpu1 1 2 3 4 5 6 7 8 9 10\nintr 1 2\n";
        assert_eq!(machine_idle(stat), Some(5000 + 70));
        assert_eq!(cpus(stat), 2);
        assert_eq!(machine_idle("intr 1 2\n"), None);
        // Two CPUs for 1.5 s are 300 ticks; 120 of them idle leaves 180 busy.
        assert_eq!(busy_ticks(2, 1.5, 120), 180);
        assert_eq!(busy_ticks(2, 1.5, 400), 0);
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
