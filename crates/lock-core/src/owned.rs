//! [`OwnedCommands`]: commands whose futures own their arguments, so that a future can be
//! stored, handed to another task or wrapped in `tokio::time::timeout` without the key
//! and argument lists living in variables of their own.

use std::future::Future;

use crate::{KvBackend, Result, Script, SetOptions, SetReply, Value};

/// Owned arguments: anything that iterates over byte strings (`["lock"]`,
/// `[token.as_bytes(), ttl.as_bytes()]`, a `Vec<Vec<u8>>`), copied once.
fn owned<I>(items: I) -> Vec<Vec<u8>>
where
    I: IntoIterator,
    I::Item: AsRef<[u8]>,
{
    items
        .into_iter()
        .map(|item| item.as_ref().to_vec())
        .collect()
}

/// The commands of [`KvBackend`] whose futures are `'static`: they own a clone of the
/// backend and copies of their arguments. [`KvBackend::eval`]'s future borrows its key
/// and argument slices, so building them inline and storing the future fails to compile
/// (E0716, "temporary value dropped while borrowed"); these accept them inline.
///
/// Implemented for every `KvBackend + Clone + 'static`.
///
/// ```
/// use std::time::Duration;
/// use lock_core::{KvBackend, OwnedCommands, Result, Script, SetOptions, SetReply, Value};
///
/// /// Acquires, giving up after a second: the future is built, stored, then awaited.
/// async fn acquire<B: KvBackend + Clone + 'static>(backend: &B, token: &str) -> bool {
///     let pending = backend.set_owned("lock", token, SetOptions::new().nx().px(30_000));
///     let answered = tokio::time::timeout(Duration::from_secs(1), pending).await;
///     matches!(answered, Ok(Ok(SetReply::Applied)))
/// }
///
/// /// Releases: the keys and arguments are written inline.
/// async fn release<B: KvBackend + Clone + 'static>(b: &B, script: &Script, token: &str) -> Result<Value> {
///     b.eval_owned(script, ["lock"], [token.as_bytes()]).await
/// }
/// ```
pub trait OwnedCommands: KvBackend + Clone + 'static {
    /// [`KvBackend::eval`] with owned keys and arguments.
    fn eval_owned<K, A>(
        &self,
        script: &Script,
        keys: K,
        args: A,
    ) -> impl Future<Output = Result<Value>> + Send + 'static
    where
        K: IntoIterator,
        K::Item: AsRef<[u8]>,
        A: IntoIterator,
        A::Item: AsRef<[u8]>,
    {
        let (backend, script) = (self.clone(), script.clone());
        let (keys, args) = (owned(keys), owned(args));
        async move {
            let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            backend.eval(&script, &keys, &args).await
        }
    }

    /// [`KvBackend::set`] with an owned key and value.
    fn set_owned(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        options: SetOptions,
    ) -> impl Future<Output = Result<SetReply>> + Send + 'static {
        let backend = self.clone();
        let (key, value) = (key.as_ref().to_vec(), value.as_ref().to_vec());
        async move { backend.set(&key, &value, options).await }
    }

    /// [`KvBackend::get`] with an owned key.
    fn get_owned(
        &self,
        key: impl AsRef<[u8]>,
    ) -> impl Future<Output = Result<Option<Vec<u8>>>> + Send + 'static {
        let backend = self.clone();
        let key = key.as_ref().to_vec();
        async move { backend.get(&key).await }
    }

    /// [`KvBackend::del`] with owned keys.
    fn del_owned<K>(&self, keys: K) -> impl Future<Output = Result<i64>> + Send + 'static
    where
        K: IntoIterator,
        K::Item: AsRef<[u8]>,
    {
        let backend = self.clone();
        let keys = owned(keys);
        async move {
            let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            backend.del(&keys).await
        }
    }
}

impl<B: KvBackend + Clone + 'static> OwnedCommands for B {}
