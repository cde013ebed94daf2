//! TLS for `rediss://` URLs. redis-rs speaks TLS through rustls, which needs a process
//! wide crypto provider; rustls picks one by itself only when exactly one is built in,
//! and otherwise a TLS connection panics ("Could not automatically determine the
//! process-level CryptoProvider"). So every connection this crate makes installs ring
//! first, unless the program chose a provider of its own.

/// Readies a connection to `urls`: refuses TLS this build cannot speak, and installs
/// the crypto provider TLS needs.
pub(crate) fn prepare(urls: &[&str]) -> lock_core::Result<()> {
    for url in urls {
        check_supported(url)
            .map_err(|why| lock_core::Error::new(lock_core::ErrorKind::InvalidConfig, why))?;
    }
    ensure_crypto_provider();
    Ok(())
}

/// Installs ring as the process's rustls provider when none is installed yet; a
/// provider the program installed itself is kept.
fn ensure_crypto_provider() {
    #[cfg(feature = "tls")]
    {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Another thread may win the race: either way a provider is there after.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    }
}

/// Refuses a `rediss://` URL when this build has no TLS, with the reason, rather than
/// redis-rs's "can't connect with TLS, the feature is not enabled".
fn check_supported(url: &str) -> Result<(), String> {
    let wants_tls = url.starts_with("rediss://") || url.starts_with("valkeys://");
    if wants_tls && !cfg!(feature = "tls") {
        return Err(format!(
            "{url:?} asks for TLS, and this build has none (lock-redis's `tls` feature)"
        ));
    }
    Ok(())
}
