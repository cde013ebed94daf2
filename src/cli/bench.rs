//! `nxlock bench`: a contention benchmark on the embedded double or any Redis server.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use nxlock::bench::{Algorithm, BenchReport, Waiting, Workload, hand_written_floor, run};
use nxlock::{MemoryBackend, RedisBackend};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum AlgorithmArg {
    Token,
    Legacy,
    Scripted,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum WaitArg {
    Poll,
    Notify,
    Fair,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum RuntimeArg {
    Current,
    Multi,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Benchmark this server (any Redis-protocol server) instead of the embedded double.
    #[arg(long, value_name = "redis://HOST:PORT")]
    url: Option<String>,
    /// The lock algorithm.
    #[arg(long, value_enum, default_value = "token")]
    algorithm: AlgorithmArg,
    /// How blocked clients wait: poll (backoff and retry), notify (wake on release) or
    /// fair (FIFO ticket line with direct hand-off). Default: fair for token, else poll.
    #[arg(long, value_enum)]
    wait: Option<WaitArg>,
    /// Concurrent clients.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    clients: u32,
    /// Keys; client i uses key i % keys.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    keys: u32,
    /// Microseconds each client holds the lock per cycle.
    #[arg(long, default_value_t = 0)]
    hold_us: u64,
    /// Lock TTL in milliseconds.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    ttl_ms: u64,
    /// Seconds to run.
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Tokio runtime flavour.
    #[arg(long, value_enum, default_value = "current")]
    runtime: RuntimeArg,
    /// Print one JSON object and nothing else.
    #[arg(long)]
    json: bool,
    /// Also run the token cycle hand-written on redis-rs (needs --url) and print the ratio.
    #[arg(long)]
    compare: bool,
}

fn progress(seconds: f64, quiet: bool) -> Option<ProgressBar> {
    if quiet || !std::io::stdout().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new((seconds * 10.0) as u64);
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} benchmarking {bar:40} {elapsed}/{duration}")
    {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(100));
    Some(bar)
}

pub fn run_bench(args: BenchArgs) -> ExitCode {
    if !(args.duration.is_finite() && args.duration > 0.0 && args.duration <= 86_400.0) {
        eprintln!("nxlock bench: --duration must be between 0 and 86400 seconds");
        return ExitCode::from(2);
    }
    if args.compare && args.url.is_none() {
        eprintln!("nxlock bench: --compare needs --url (the floor is hand-written redis-rs)");
        return ExitCode::from(2);
    }
    if matches!(args.wait, Some(WaitArg::Notify | WaitArg::Fair))
        && !matches!(args.algorithm, AlgorithmArg::Token)
    {
        eprintln!("nxlock bench: --wait notify and --wait fair need --algorithm token");
        return ExitCode::from(2);
    }
    let workload = Workload {
        algorithm: match args.algorithm {
            AlgorithmArg::Token => Algorithm::Token,
            AlgorithmArg::Legacy => Algorithm::Legacy,
            AlgorithmArg::Scripted => Algorithm::Scripted,
        },
        clients: args.clients as usize,
        keys: args.keys as usize,
        hold: Duration::from_micros(args.hold_us),
        ttl: Duration::from_millis(args.ttl_ms),
        duration: Duration::from_secs_f64(args.duration),
        wait: match (args.wait, args.algorithm) {
            (Some(WaitArg::Poll), _) | (None, AlgorithmArg::Legacy | AlgorithmArg::Scripted) => {
                Waiting::Poll
            }
            (Some(WaitArg::Notify), _) => Waiting::Notify,
            (Some(WaitArg::Fair), _) | (None, AlgorithmArg::Token) => Waiting::Fair,
        },
    };
    let runtime = match args.runtime {
        RuntimeArg::Current => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        RuntimeArg::Multi => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build(),
    };
    let Ok(runtime) = runtime else {
        eprintln!("nxlock bench: cannot start a tokio runtime");
        return ExitCode::from(2);
    };
    let bar = progress(
        args.duration * if args.compare { 2.0 } else { 1.0 },
        args.json,
    );
    let outcome: Result<(BenchReport, Option<f64>), String> = runtime.block_on(async {
        let ticker = bar.clone().map(|bar| {
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    bar.inc(1);
                }
            })
        });
        let result = match &args.url {
            None => Ok((
                run(MemoryBackend::new(), "memory", &workload)
                    .await
                    .map_err(|e| e.to_string())?,
                None,
            )),
            Some(url) => match RedisBackend::connect(url).await {
                Err(e) => Err(format!("cannot connect to {url}: {e}")),
                Ok(backend) => {
                    let report = run(backend, url.clone(), &workload)
                        .await
                        .map_err(|e| e.to_string())?;
                    let floor = if args.compare {
                        let floor = hand_written_floor(url, workload.clients, workload.duration);
                        Some(floor.await.map_err(|e| e.to_string())?)
                    } else {
                        None
                    };
                    Ok((report, floor))
                }
            },
        };
        if let Some(ticker) = ticker {
            ticker.abort();
        }
        result
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    match outcome {
        Err(e) => {
            eprintln!("nxlock bench: {e}");
            ExitCode::FAILURE
        }
        Ok((report, floor)) => {
            if args.json {
                println!("{}", report.to_json());
            } else {
                println!("{report}");
                if let Some(floor) = floor {
                    println!(
                        "hand-written redis-rs floor {floor:.0} cycles/s; nxlock/floor = {:.3}",
                        report.cycles_per_sec / floor
                    );
                }
            }
            if report.violations == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
