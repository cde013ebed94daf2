//! The commands every [`KvBackend`](lock_core::KvBackend) method sends, built once for
//! both network backends ([`RedisBackend`](crate::RedisBackend) and
//! [`ClusterBackend`](crate::ClusterBackend)), which differ only in where they send them.

use lock_core::{ExpireCondition, SetCondition, SetExpiry, SetOptions};
use redis::Cmd;

pub(crate) fn set_command(key: &[u8], value: &[u8], options: SetOptions) -> Cmd {
    let mut cmd = redis::cmd("SET");
    cmd.arg(key).arg(value);
    match options.condition {
        SetCondition::Always => {}
        SetCondition::IfNotExists => {
            cmd.arg("NX");
        }
        SetCondition::IfExists => {
            cmd.arg("XX");
        }
    }
    if options.get {
        cmd.arg("GET");
    }
    match options.expiry {
        SetExpiry::Clear => {}
        SetExpiry::KeepTtl => {
            cmd.arg("KEEPTTL");
        }
        SetExpiry::Ex(s) => {
            cmd.arg("EX").arg(s);
        }
        SetExpiry::Px(ms) => {
            cmd.arg("PX").arg(ms);
        }
        SetExpiry::ExAt(s) => {
            cmd.arg("EXAT").arg(s);
        }
        SetExpiry::PxAt(ms) => {
            cmd.arg("PXAT").arg(ms);
        }
    }
    cmd
}

pub(crate) fn expire_command(name: &str, key: &[u8], when: i64, condition: ExpireCondition) -> Cmd {
    let mut cmd = redis::cmd(name);
    cmd.arg(key).arg(when);
    let flag = match condition {
        ExpireCondition::Always => None,
        ExpireCondition::IfNoExpiry => Some("NX"),
        ExpireCondition::IfHasExpiry => Some("XX"),
        ExpireCondition::IfGreater => Some("GT"),
        ExpireCondition::IfLess => Some("LT"),
    };
    if let Some(flag) = flag {
        cmd.arg(flag);
    }
    cmd
}

pub(crate) fn key_command(name: &str, key: &[u8]) -> Cmd {
    let mut cmd = redis::cmd(name);
    cmd.arg(key);
    cmd
}

pub(crate) fn keys_command(name: &str, keys: &[&[u8]]) -> Cmd {
    let mut cmd = redis::cmd(name);
    for key in keys {
        cmd.arg(*key);
    }
    cmd
}

/// `EVALSHA sha …` or `EVAL lua …`.
pub(crate) fn script_command(command: &str, body: &str, keys: &[&[u8]], args: &[&[u8]]) -> Cmd {
    let mut cmd = redis::cmd(command);
    cmd.arg(body).arg(keys.len());
    for key in keys {
        cmd.arg(*key);
    }
    for arg in args {
        cmd.arg(*arg);
    }
    cmd
}

/// The [`KvBackend`](lock_core::KvBackend) methods that are one command each, sent with
/// the implementing type's `query`; `del`, `exists` and `eval` after its `check_keys`.
/// `eval` is `EVALSHA`, then `EVAL` on `NOSCRIPT` (which also caches the script again).
macro_rules! one_command_each {
    () => {
        async fn eval(
            &self,
            script: &lock_core::Script,
            keys: &[&[u8]],
            args: &[&[u8]],
        ) -> lock_core::Result<lock_core::Value> {
            self.check_keys(keys)?;
            for (command, body) in [("EVALSHA", script.sha1()), ("EVAL", script.lua())] {
                let command = $crate::commands::script_command(command, body, keys, args);
                match self.query::<redis::Value>(&command).await {
                    Err(e) if e.kind() == lock_core::ErrorKind::NoScript => continue,
                    reply => return reply.map($crate::value::from_redis),
                }
            }
            Err(lock_core::Error::no_script())
        }
        async fn set(
            &self,
            key: &[u8],
            value: &[u8],
            options: lock_core::SetOptions,
        ) -> lock_core::Result<lock_core::SetReply> {
            let command = $crate::commands::set_command(key, value, options);
            $crate::replies::set(options, self.query(&command).await?)
        }
        async fn setnx(&self, key: &[u8], value: &[u8]) -> lock_core::Result<bool> {
            let reply = self.query(redis::cmd("SETNX").arg(key).arg(value)).await?;
            $crate::replies::flag("SETNX", reply)
        }
        async fn get(&self, key: &[u8]) -> lock_core::Result<Option<Vec<u8>>> {
            let reply = self
                .query(&$crate::commands::key_command("GET", key))
                .await?;
            $crate::replies::bulk_or_nil("GET", reply)
        }
        async fn getset(&self, key: &[u8], value: &[u8]) -> lock_core::Result<Option<Vec<u8>>> {
            let reply = self.query(redis::cmd("GETSET").arg(key).arg(value)).await?;
            $crate::replies::bulk_or_nil("GETSET", reply)
        }
        async fn getdel(&self, key: &[u8]) -> lock_core::Result<Option<Vec<u8>>> {
            let reply = self
                .query(&$crate::commands::key_command("GETDEL", key))
                .await?;
            $crate::replies::bulk_or_nil("GETDEL", reply)
        }
        async fn del(&self, keys: &[&[u8]]) -> lock_core::Result<i64> {
            self.check_keys(keys)?;
            let reply = self
                .query(&$crate::commands::keys_command("DEL", keys))
                .await?;
            $crate::replies::integer("DEL", reply)
        }
        async fn exists(&self, keys: &[&[u8]]) -> lock_core::Result<i64> {
            self.check_keys(keys)?;
            let reply = self
                .query(&$crate::commands::keys_command("EXISTS", keys))
                .await?;
            $crate::replies::integer("EXISTS", reply)
        }
        async fn pexpire(
            &self,
            key: &[u8],
            ms: i64,
            condition: lock_core::ExpireCondition,
        ) -> lock_core::Result<bool> {
            let command = $crate::commands::expire_command("PEXPIRE", key, ms, condition);
            $crate::replies::flag("PEXPIRE", self.query(&command).await?)
        }
        async fn pexpireat(
            &self,
            key: &[u8],
            unix_ms: i64,
            condition: lock_core::ExpireCondition,
        ) -> lock_core::Result<bool> {
            let command = $crate::commands::expire_command("PEXPIREAT", key, unix_ms, condition);
            $crate::replies::flag("PEXPIREAT", self.query(&command).await?)
        }
        async fn pttl(&self, key: &[u8]) -> lock_core::Result<i64> {
            let reply = self
                .query(&$crate::commands::key_command("PTTL", key))
                .await?;
            $crate::replies::integer("PTTL", reply)
        }
        async fn ttl(&self, key: &[u8]) -> lock_core::Result<i64> {
            let reply = self
                .query(&$crate::commands::key_command("TTL", key))
                .await?;
            $crate::replies::integer("TTL", reply)
        }
        async fn persist(&self, key: &[u8]) -> lock_core::Result<bool> {
            let reply = self
                .query(&$crate::commands::key_command("PERSIST", key))
                .await?;
            $crate::replies::flag("PERSIST", reply)
        }
        async fn incr(&self, key: &[u8]) -> lock_core::Result<i64> {
            let reply = self
                .query(&$crate::commands::key_command("INCR", key))
                .await?;
            $crate::replies::integer("INCR", reply)
        }
    };
}
pub(crate) use one_command_each;
