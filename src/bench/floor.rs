//! The floor nxlock's token lock should reach on Redis: the same cycle written by hand on
//! redis-rs, one `SET NX PX` and one `EVALSHA` per cycle, no abstraction in between.

use std::time::{Duration, Instant};

use lock_core::scripts::COMPARE_AND_DELETE;
use redis::aio::MultiplexedConnection;

use super::BenchError;

/// Runs `clients` tasks doing hand-written uncontended cycles (each on its own key) on
/// `url` for `duration`; answers total cycles per second.
pub async fn hand_written_floor(
    url: &str,
    clients: usize,
    duration: Duration,
) -> Result<f64, BenchError> {
    floor(url, clients, duration)
        .await
        .map_err(BenchError::Floor)
}

async fn floor(url: &str, clients: usize, duration: Duration) -> Result<f64, String> {
    let client = redis::Client::open(url).map_err(|e| e.to_string())?;
    let connection = client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| e.to_string())?;
    let sha = COMPARE_AND_DELETE.sha1().to_string();
    let _: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(COMPARE_AND_DELETE.lua())
        .query_async(&mut connection.clone())
        .await
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + duration;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for client in 0..clients.max(1) {
        let (mut conn, sha): (MultiplexedConnection, String) = (connection.clone(), sha.clone());
        tasks.push(tokio::spawn(async move {
            let key = format!("nxlock-floor:{client}");
            let mut cycles = 0u64;
            while Instant::now() < deadline {
                let token = uuid::Uuid::new_v4().to_string();
                let set: Option<String> = redis::cmd("SET")
                    .arg(&key)
                    .arg(&token)
                    .arg("NX")
                    .arg("PX")
                    .arg(10_000)
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| e.to_string())?;
                let released: i64 = redis::cmd("EVALSHA")
                    .arg(&sha)
                    .arg(1)
                    .arg(&key)
                    .arg(&token)
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| e.to_string())?;
                if set.is_some() && released == 1 {
                    cycles += 1;
                }
            }
            Ok::<u64, String>(cycles)
        }));
    }
    let mut total = 0;
    for task in tasks {
        total += task.await.map_err(|e| e.to_string())??;
    }
    Ok(total as f64 / started.elapsed().as_secs_f64())
}
