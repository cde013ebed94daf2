//! Redis's protected mode: with no password set, only clients on the loopback interface
//! are served. A test double must not become an open door when someone binds it to
//! `0.0.0.0`: an unauthenticated remote client could flush every database, run writing
//! scripts, lower `maxclients` to lock everyone out, or fast-forward every lock's clock.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// What Redis 7.0 writes to a client it refuses in protected mode, before it closes the
/// connection (`clientAcceptHandler` in `networking.c`).
pub(crate) const DENIED: &str = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

/// Whether a client at `peer` is refused: protected mode is on, no password is set, and
/// the peer is not 127.0.0.1 or ::1 (the two addresses Redis's `islocalClient` accepts;
/// an IPv4 address mapped into IPv6 is not one of them there either).
pub(crate) fn refuses(protected: bool, has_password: bool, peer: SocketAddr) -> bool {
    protected && !has_password && !is_local(peer.ip())
}

fn is_local(ip: IpAddr) -> bool {
    ip == IpAddr::V4(Ipv4Addr::LOCALHOST) || ip == IpAddr::V6(Ipv6Addr::LOCALHOST)
}

/// What to warn of at start-up: a server bound beyond loopback without a password.
pub(crate) fn warning(bind: IpAddr, protected: bool, has_password: bool) -> Option<String> {
    if has_password || bind.is_loopback() {
        return None;
    }
    Some(if protected {
        format!(
            "bound to {bind} without a password: protected mode refuses every client that is not on the loopback interface (set --requirepass to let them in)"
        )
    } else {
        format!(
            "bound to {bind} without a password and with protected mode off: anyone who reaches the port can flush every database, run scripts and move the clock"
        )
    })
}

/// Whether `given` is `password`, in time that does not depend on where they differ.
pub(crate) fn password_matches(given: &[u8], password: &[u8]) -> bool {
    constant_time_eq::constant_time_eq(given, password)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ip: &str) -> SocketAddr {
        SocketAddr::new(ip.parse().unwrap(), 50_000)
    }

    #[test]
    fn only_loopback_clients_are_served_without_a_password() {
        for local in ["127.0.0.1", "::1"] {
            assert!(!refuses(true, false, at(local)), "{local}");
        }
        for remote in [
            "10.0.0.7",
            "192.168.1.2",
            "127.0.0.2",
            "::ffff:127.0.0.1",
            "fe80::1",
        ] {
            assert!(refuses(true, false, at(remote)), "{remote}");
            assert!(!refuses(true, true, at(remote)), "{remote} with a password");
            assert!(
                !refuses(false, false, at(remote)),
                "{remote}, protected mode off"
            );
        }
    }

    #[test]
    fn binding_beyond_loopback_without_a_password_is_warned_of() {
        let any: IpAddr = "0.0.0.0".parse().unwrap();
        assert!(
            warning(any, true, false)
                .unwrap()
                .contains("protected mode refuses")
        );
        assert!(
            warning(any, false, false)
                .unwrap()
                .contains("protected mode off")
        );
        assert_eq!(warning(any, true, true), None);
        assert_eq!(warning("127.0.0.1".parse().unwrap(), true, false), None);
    }

    #[test]
    fn passwords_compare_whole() {
        assert!(password_matches(b"secret", b"secret"));
        assert!(!password_matches(b"secret", b"secreT"));
        assert!(!password_matches(b"secre", b"secret"));
        assert!(!password_matches(b"", b"secret"));
    }
}
