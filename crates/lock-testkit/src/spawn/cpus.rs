//! [`CpuPlacement`]: a benchmark's client on one CPU and the servers it spawned on the
//! others, as if they ran on separate machines.
//!
//! Why: on loopback the client and the servers share the machine's CPUs, and the
//! scheduler may run a server on the client's CPU. A server the client wakes (by sending
//! it a command) then takes the CPU from the client, which waits while the server works
//! instead of sending to the other servers and reading their replies: commands meant to
//! run in parallel run one after another. How often that happens changes from second to
//! second, and it is what makes one measured round differ from the next; with the
//! client's CPU kept to itself it cannot happen, as it cannot when the servers are other
//! machines.

/// Where a benchmark's client threads and the servers it spawned may run (Linux only:
/// elsewhere [`CpuPlacement::apart`] is an error).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuPlacement {
    /// CPUs the client's threads run on.
    pub client: Vec<usize>,
    /// CPUs the spawned servers run on.
    pub servers: Vec<usize>,
}

impl CpuPlacement {
    /// The first CPU this thread may run on for the client, every other one for the
    /// servers. An error when there is only one, or the platform cannot pin.
    pub fn apart() -> Result<Self, String> {
        Self::split(&allowed_cpus()?)
    }

    /// The first of `allowed` for the client, the rest for the servers.
    pub fn split(allowed: &[usize]) -> Result<Self, String> {
        match allowed {
            [client, servers @ ..] if !servers.is_empty() => Ok(Self {
                client: vec![*client],
                servers: servers.to_vec(),
            }),
            _ => Err(format!(
                "keeping the servers off the client's CPU needs 2 CPUs; this process may use {}",
                describe(allowed)
            )),
        }
    }

    /// Keeps the calling thread, and the threads it starts from now on, on the client's
    /// CPUs. Call it before building the runtime, so that its threads inherit it.
    pub fn pin_this_thread(&self) -> Result<(), String> {
        set_cpus(None, &self.client)
    }
}

/// `CPU 3`, `CPUs 1-3`, `CPUs 0, 2, 5`, `no CPU`.
fn describe(cpus: &[usize]) -> String {
    match cpus {
        [] => "no CPU".into(),
        [one] => format!("CPU {one}"),
        [first, .., last] if last - first + 1 == cpus.len() => format!("CPUs {first}-{last}"),
        _ => {
            let listed: Vec<String> = cpus.iter().map(usize::to_string).collect();
            format!("CPUs {}", listed.join(", "))
        }
    }
}

/// The CPUs process `pid` may run on, in order.
pub fn cpus_of(pid: u32) -> Result<Vec<usize>, String> {
    get_cpus(Some(pid))
}

/// The CPUs the calling thread may run on, in order.
fn allowed_cpus() -> Result<Vec<usize>, String> {
    get_cpus(None)
}

/// Keeps process `pid` on `cpus`.
pub(crate) fn keep_on(pid: u32, cpus: &[usize]) -> Result<(), String> {
    set_cpus(Some(pid), cpus)
}

#[cfg(target_os = "linux")]
fn pid_of(pid: Option<u32>) -> Result<Option<rustix::process::Pid>, String> {
    pid.map(|pid| {
        i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .ok_or_else(|| format!("{pid} is not a process id"))
    })
    .transpose()
}

#[cfg(target_os = "linux")]
fn get_cpus(pid: Option<u32>) -> Result<Vec<usize>, String> {
    use rustix::thread::{CpuSet, sched_getaffinity};
    let set = sched_getaffinity(pid_of(pid)?).map_err(|e| format!("sched_getaffinity: {e}"))?;
    Ok((0..CpuSet::MAX_CPU)
        .filter(|&cpu| set.is_set(cpu))
        .collect())
}

#[cfg(target_os = "linux")]
fn set_cpus(pid: Option<u32>, cpus: &[usize]) -> Result<(), String> {
    use rustix::thread::{CpuSet, sched_setaffinity};
    let mut set = CpuSet::new();
    for &cpu in cpus {
        if cpu >= CpuSet::MAX_CPU {
            return Err(format!("there is no CPU {cpu}"));
        }
        set.set(cpu);
    }
    sched_setaffinity(pid_of(pid)?, &set)
        .map_err(|e| format!("cannot keep {} on {}: {e}", who(pid), describe(cpus)))
}

#[cfg(target_os = "linux")]
fn who(pid: Option<u32>) -> String {
    pid.map_or_else(|| "this thread".into(), |pid| format!("process {pid}"))
}

#[cfg(not(target_os = "linux"))]
fn get_cpus(_pid: Option<u32>) -> Result<Vec<usize>, String> {
    Err("choosing CPUs needs Linux".into())
}

#[cfg(not(target_os = "linux"))]
fn set_cpus(_pid: Option<u32>, _cpus: &[usize]) -> Result<(), String> {
    Err("choosing CPUs needs Linux".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_takes_the_first_cpu_and_the_servers_the_rest() {
        let placement = CpuPlacement::split(&[0, 1, 2, 3]).unwrap();
        assert_eq!(placement.client, [0]);
        assert_eq!(placement.servers, [1, 2, 3]);
        let placement = CpuPlacement::split(&[2, 5]).unwrap();
        assert_eq!((placement.client, placement.servers), (vec![2], vec![5]));
    }

    #[test]
    fn one_cpu_cannot_keep_the_servers_apart() {
        let error = CpuPlacement::split(&[3]).unwrap_err();
        assert_eq!(
            error,
            "keeping the servers off the client's CPU needs 2 CPUs; this process may use CPU 3"
        );
        let error = CpuPlacement::split(&[]).unwrap_err();
        assert!(error.ends_with("this process may use no CPU"), "{error}");
        assert_eq!(describe(&[1, 4, 6]), "CPUs 1, 4, 6");
        assert_eq!(describe(&[1, 2, 3]), "CPUs 1-3");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_cpu_beyond_the_set_is_refused_not_ignored() {
        let error = set_cpus(None, &[1, usize::MAX]).unwrap_err();
        assert_eq!(error, format!("there is no CPU {}", usize::MAX));
    }
}
