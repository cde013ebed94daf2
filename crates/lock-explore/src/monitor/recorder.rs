//! The recorder of one run: the trace, and every client's operations (how many, and,
//! when recording, their names and finish times: where steps are anchored).

use crate::trace::{Event, Trace, What};

#[derive(Debug)]
pub(crate) struct Recorder {
    /// Whether events are kept.
    pub(crate) recording: bool,
    trace: Trace,
    /// Operations each client made.
    ops: Vec<u32>,
    /// Every operation's name and finish time, per client, when recording.
    op_logs: Vec<Vec<(String, i64)>>,
    /// Which of each client's operations were commands (not markers), when recording.
    commands: Vec<Vec<u32>>,
    /// The abstract lock state after each operation, per client, when recording and
    /// states are tracked: what a step anchored there would strike.
    op_states: Vec<Vec<u64>>,
}

impl Recorder {
    pub(crate) fn new(clients: usize, recording: bool) -> Self {
        Recorder {
            recording,
            trace: Vec::with_capacity(if recording { 1024 } else { 0 }),
            ops: vec![0; clients],
            op_logs: vec![Vec::new(); clients],
            commands: vec![Vec::new(); clients],
            op_states: vec![Vec::new(); clients],
        }
    }

    /// Keeps `what`, when recording.
    pub(crate) fn push(&mut self, at_us: i64, client: Option<usize>, what: What) {
        if self.recording {
            self.trace.push(Event {
                at_us,
                client,
                what,
            });
        }
    }

    /// `client` finished an operation named `kind` at `at_us` (read only when
    /// recording), leaving the abstract lock state `state` (when tracked): its number,
    /// counted from 0.
    pub(crate) fn count(
        &mut self,
        client: usize,
        kind: &str,
        command: bool,
        state: Option<u64>,
        at_us: impl FnOnce() -> i64,
    ) -> u32 {
        let op = self.ops[client];
        self.ops[client] += 1;
        // Once the outcome took the logs, an operation ended by dropping the run's
        // tasks (a command cancelled in flight) is counted and no longer logged.
        if self.recording
            && let Some(log) = self.op_logs.get_mut(client)
        {
            log.push((kind.to_owned(), at_us()));
            if command && let Some(commands) = self.commands.get_mut(client) {
                commands.push(op);
            }
            if let (Some(state), Some(states)) = (state, self.op_states.get_mut(client)) {
                states.push(state);
            }
        }
        op
    }

    /// Per client, which operations were commands (recorded runs).
    pub(crate) fn take_commands(&mut self) -> Vec<Vec<u32>> {
        std::mem::take(&mut self.commands)
    }

    /// Per client, the abstract lock state after each operation (recorded runs that
    /// track states).
    pub(crate) fn take_op_states(&mut self) -> Vec<Vec<u64>> {
        std::mem::take(&mut self.op_states)
    }

    pub(crate) fn ops(&self) -> Vec<u32> {
        self.ops.clone()
    }

    pub(crate) fn take_op_logs(&mut self) -> Vec<Vec<(String, i64)>> {
        std::mem::take(&mut self.op_logs)
    }

    pub(crate) fn take_trace(&mut self) -> Trace {
        std::mem::take(&mut self.trace)
    }
}
