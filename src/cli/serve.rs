//! `nxlock serve`: the double on a Redis-protocol socket until interrupted.

use std::net::IpAddr;
use std::process::ExitCode;

use clap::Args;
use lock_server::{RedisVersion, Server, ServerOptions};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (loopback by default: the double is for tests).
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Port to listen on, 0 to 65535 (0 picks a free one).
    #[arg(long, default_value_t = 6379)]
    port: u16,
    /// Password clients must AUTH with.
    #[arg(long)]
    requirepass: Option<String>,
    /// Redis's protected mode: without a password, refuse clients that are not on the
    /// loopback interface (yes or no; CONFIG SET protected-mode changes it).
    #[arg(long, value_name = "yes|no", default_value = "yes", value_parser = yes_or_no)]
    protected_mode: bool,
    /// Answer as a one-node Redis Cluster serving every slot (CLUSTER SLOTS, SHARDS,
    /// NODES, INFO), holding commands and scripts to the cluster's cross-slot rules, so
    /// cluster clients of any language connect.
    #[arg(long)]
    cluster: bool,
    /// Answer as this Redis version (7.0, 7.2 or 7.4; default the newest): which
    /// commands exist (WAITAOF from 7.2), which scripts may call (WAIT from 7.2, WAITAOF
    /// from 7.4), the version INFO, HELLO and scripts report, and 7.4's cross-slot text.
    #[arg(long, value_name = "VERSION", default_value_t = RedisVersion::default())]
    redis_version: RedisVersion,
}

pub fn run(args: ServeArgs) -> ExitCode {
    // One thread, as Redis has one event loop: connections are served in the order their
    // bytes arrived, so a command sent on one connection runs before a command sent
    // after it on another (Redis's own pub/sub tests rely on it). A multi-thread runtime
    // polls connections in parallel, and the later command sometimes ran first.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("nxlock serve: cannot start a tokio runtime: {e}");
            return ExitCode::from(2);
        }
    };
    runtime.block_on(async {
        let options = ServerOptions {
            bind: args.bind,
            port: args.port,
            requirepass: args.requirepass,
            protected_mode: args.protected_mode,
            cluster: args.cluster,
            redis_version: args.redis_version,
            ..ServerOptions::default()
        };
        let server = match Server::start(options).await {
            Ok(server) => server,
            Err(e) => {
                eprintln!(
                    "nxlock serve: cannot listen on {}:{}: {e}",
                    args.bind, args.port
                );
                return ExitCode::FAILURE;
            }
        };
        for warning in server.warnings() {
            eprintln!("nxlock serve: {warning}");
        }
        // Scripts and tests wait for this line to know the port.
        say!("nxlock serve listening on {}", server.url());
        let _ = tokio::signal::ctrl_c().await;
        server.stop().await;
        ExitCode::SUCCESS
    })
}

/// `yes` or `no`, as Redis spells booleans in its configuration.
fn yes_or_no(value: &str) -> Result<bool, String> {
    match value.to_ascii_lowercase().as_str() {
        "yes" => Ok(true),
        "no" => Ok(false),
        _ => Err("must be 'yes' or 'no'".into()),
    }
}
