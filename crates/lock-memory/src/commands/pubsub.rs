//! PUBLISH, SUBSCRIBE and PSUBSCRIBE: in-process fan-out, delivered in publish order.

use lock_core::{Result, Subscription};

use crate::pubsub::InboxAddress;
use crate::store::Store;

impl Store {
    pub(crate) fn publish(&mut self, channel: &[u8], message: &[u8]) -> Result<i64> {
        Ok(self.channels.lock().publish(channel, message))
    }

    /// Registered under the store's lock, so every publish that follows (from a command or
    /// a script) reaches the subscription: no wake-up is lost between the two.
    pub(crate) fn subscribe(&mut self, channel: &[u8]) -> Result<Subscription> {
        Ok(self.channels.lock().subscribe(channel))
    }

    pub(crate) fn subscribe_inbox(&mut self, channel: &[u8], inbox: &InboxAddress) -> Result<()> {
        self.channels.lock().subscribe_inbox(channel, inbox);
        Ok(())
    }

    pub(crate) fn psubscribe_inbox(&mut self, pattern: &[u8], inbox: &InboxAddress) -> Result<()> {
        self.channels.lock().psubscribe_inbox(pattern, inbox);
        Ok(())
    }
}
