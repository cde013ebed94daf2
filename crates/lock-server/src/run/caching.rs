//! What a tracking client's commands read, for client-side caching: the keys Redis
//! remembers for it after each command, and the invalidations written to it after its
//! reply.

use lock_core::Value;

use crate::protocol::request::CommandId;
use crate::state::client::Client;
use crate::state::shared::Shared;
use crate::state::subscriptions::delivered;
use crate::table::{self, command_keys, introspection};

/// After `args` ran for `client`: if it tracks in default mode (and OPTIN/OPTOUT with
/// CLIENT CACHING let this command count), the keys a read-only command named, or a
/// script's declared keys when the script ran a read-only command.
pub(crate) fn remember_reads(shared: &Shared, client: &Client, id: CommandId, args: &[Vec<u8>]) {
    if !client.tracks {
        return;
    }
    let Some(mode) = shared.tracking.mode(client.id) else {
        return;
    };
    if mode.bcast || (mode.optin && !client.caching) || (mode.optout && client.caching) {
        return;
    }
    let command = table::command(id);
    let script = matches!(
        command.name,
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro"
    );
    if (script && client.script_read) || (!script && introspection::reads_keys(command)) {
        shared
            .tracking
            .remember(client.id, command_keys::keys_of(command, args));
    }
}

/// After a command: sends the invalidations for what it (and anything it caused) changed.
/// The other clients' go to their inboxes; `client`'s own, encoded for it, come back, to
/// be written after its reply.
pub(crate) fn invalidations(shared: &Shared, client: &Client) -> Vec<Value> {
    if !shared.tracking.active() {
        return Vec::new();
    }
    shared
        .tracking
        .invalidate(client.id, shared.dbs(), &shared.registry)
        .into_iter()
        .filter_map(|delivery| delivered(delivery, client.protocol, client.subscriptions.active()))
        .collect()
}
