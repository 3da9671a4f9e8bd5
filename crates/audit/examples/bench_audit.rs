//! The audit benchmark in one run (`cargo xtask bench audit` calls this):
//!
//! ```text
//! cargo run --release -p shim-audit --example bench_audit
//! ```
//!
//! * appends per second with fsync from 1 writer and from 64 concurrent writers (group commit);
//! * verification of a 1,000,000-record log in records/s and MB/s, beside raw HMAC-SHA256 over
//!   the same record bytes (one MAC per line, one core: the physical limit of any verifier).
//!
//! Environment: `BENCH_AUDIT_DIR` (where the logs go; default the system temp dir),
//! `BENCH_AUDIT_RECORDS` (default 1000000), `BENCH_AUDIT_SECS` (append phase length, default 2).
#![allow(clippy::print_stdout)]

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::time::Duration;
use std::time::Instant;

use shim_audit::AuditKey;
use shim_audit::AuditLog;
use shim_audit::WriterConfig;
use shim_audit::testing::sample_event;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn env_num(k: &str, default: u64) -> u64 {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Appends from `writers` concurrent tokio tasks for `secs`; returns appends per second.
fn append_rate(
    dir: &std::path::Path,
    key: &AuditKey,
    writers: usize,
    secs: u64,
) -> Res<(f64, f64)> {
    let path = dir.join(format!("append-{writers}.log"));
    let log = AuditLog::open(WriterConfig::new(&path, "bench", "0.2.0"), key.clone())?;
    for i in 0..20 {
        log.append_blocking(sample_event(i))?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    // The writers are tokio tasks, as in the daemon (one runtime worker per core).
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(std::thread::available_parallelism().map_or(2, |n| n.get()))
        .enable_time()
        .build()?;
    let start = Instant::now();
    let result: Result<(), String> = rt.block_on(async {
        let mut handles = Vec::new();
        for w in 0..writers {
            let (log, stop, count) = (log.clone(), stop.clone(), count.clone());
            handles.push(tokio::spawn(async move {
                let mut i = w as u64 * 1_000_000_000;
                while !stop.load(Ordering::Relaxed) {
                    log.append(sample_event(i))
                        .await
                        .map_err(|e| e.to_string())?;
                    count.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
                Ok::<(), String>(())
            }));
        }
        tokio::time::sleep(Duration::from_secs(secs)).await;
        stop.store(true, Ordering::Relaxed);
        for h in handles {
            h.await.map_err(|e| e.to_string())??;
        }
        Ok(())
    });
    result?;
    let elapsed = start.elapsed().as_secs_f64();
    let stats = log.stats();
    let per_fsync = stats.records as f64 / stats.fsyncs.max(1) as f64;
    drop(log);
    let report = shim_audit::verify_file(&path, key)?;
    if !report.is_clean() {
        return Err(format!(
            "benchmark log does not verify: {:?}",
            report.violations.first()
        )
        .into());
    }
    Ok((count.load(Ordering::Relaxed) as f64 / elapsed, per_fsync))
}

/// One HMAC per line over the file, single-threaded; returns seconds.
fn raw_hmac_secs(path: &std::path::Path, key: &AuditKey) -> Res<(f64, u64)> {
    let mut f = std::fs::File::open(path)?;
    let mut buf = Vec::new();
    let start = Instant::now();
    let mut macs = 0u64;
    let mut chunk = vec![0u8; 8 << 20];
    let mut acc = 0u8;
    loop {
        let n = f.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        let cut = match buf.iter().rposition(|&c| c == b'\n') {
            Some(i) => i + 1,
            None => continue,
        };
        for line in buf[..cut].split(|&c| c == b'\n').filter(|l| !l.is_empty()) {
            acc ^= key.mac(line)[0];
            macs += 1;
        }
        buf.drain(..cut);
    }
    std::hint::black_box(acc);
    Ok((start.elapsed().as_secs_f64(), macs))
}

fn main() -> Res<()> {
    let records = env_num("BENCH_AUDIT_RECORDS", 1_000_000);
    let secs = env_num("BENCH_AUDIT_SECS", 2);
    let base = std::env::var_os("BENCH_AUDIT_DIR").map_or_else(std::env::temp_dir, Into::into);
    let dir = tempfile::tempdir_in(base)?;
    let key = AuditKey::generate()?;
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    println!(
        "shim-audit benchmark: {cores} cores, logs in {}",
        dir.path().display()
    );
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load1: f64 = load
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    if load1 > cores as f64 {
        println!(
            "note: load average {load1:.1} exceeds the {cores} cores: figures are noisy; \
             compare the ratios, which are measured side by side"
        );
    }

    let (one, one_batch) = append_rate(dir.path(), &key, 1, secs)?;
    let (many, many_batch) = append_rate(dir.path(), &key, 64, secs)?;

    let path = dir.path().join("verify.log");
    let t = Instant::now();
    let bytes = shim_audit::testing::synthesize_log(&path, &key, records)?;
    let gen_secs = t.elapsed().as_secs_f64();
    // Warm the page cache so both measurements read from memory.
    let _ = raw_hmac_secs(&path, &key)?;
    let mut verify_secs = f64::MAX;
    for _ in 0..2 {
        let t = Instant::now();
        let r = shim_audit::verify_file(&path, &key)?;
        verify_secs = verify_secs.min(t.elapsed().as_secs_f64());
        if !r.is_clean() || r.records != records {
            return Err(format!("verification failed: {:?}", r.violations.first()).into());
        }
    }
    let t = Instant::now();
    let r = shim_audit::verify_file_threads(&path, &key, 1)?;
    let verify1_secs = t.elapsed().as_secs_f64();
    if !r.is_clean() {
        return Err("single-threaded verification failed".into());
    }
    let mut raw_secs = f64::MAX;
    for _ in 0..2 {
        let (s, macs) = raw_hmac_secs(&path, &key)?;
        raw_secs = raw_secs.min(s);
        if macs != records {
            return Err("raw HMAC pass saw a different number of lines".into());
        }
    }
    let mb = bytes as f64 / 1e6;
    let verify_mbs = mb / verify_secs;
    let raw_mbs = mb / raw_secs;
    let ratio_appends = many / one;
    let ratio_verify = verify_mbs / raw_mbs;
    let verdict = |ok: bool| if ok { "PASS" } else { "FAIL" };

    println!();
    println!("{:<46} {:>16}", "measurement", "result");
    println!("{}", "-".repeat(63));
    println!("{:<46} {:>12.0} /s", "appends with fsync, 1 writer", one);
    println!(
        "{:<46} {:>12.0} /s",
        "appends with fsync, 64 concurrent writers", many
    );
    println!(
        "{:<46} {:>16}",
        "records per fsync (1 writer / 64 writers)",
        format!("{one_batch:.1} / {many_batch:.1}")
    );
    println!(
        "{:<46} {:>16}",
        format!("verify {records} records ({mb:.0} MB), records/s"),
        format!("{:.0}", records as f64 / verify_secs)
    );
    println!(
        "{:<46} {:>13.0} MB/s",
        format!(
            "verify throughput (default, {} thread(s))",
            shim_audit::default_threads()
        ),
        verify_mbs
    );
    println!(
        "{:<46} {:>13.0} MB/s",
        "verify throughput (1 thread)",
        mb / verify1_secs
    );
    println!(
        "{:<46} {:>13.0} MB/s",
        "raw HMAC-SHA256, one MAC per record (1 core)", raw_mbs
    );
    println!("{}", "-".repeat(63));
    println!(
        "{:<46} {:>10.1}x  target >= 20x  {}",
        "64 writers / 1 writer",
        ratio_appends,
        verdict(ratio_appends >= 20.0)
    );
    println!(
        "{:<46} {:>10.2}   target >= 0.33 {}",
        "verify MB/s / raw HMAC MB/s",
        ratio_verify,
        verdict(ratio_verify >= 1.0 / 3.0)
    );
    println!(
        "{:<46} {:>10.2}   (per core, informational)",
        "verify 1 thread / raw HMAC 1 core",
        (mb / verify1_secs) / raw_mbs
    );
    println!("(log synthesised in {gen_secs:.1} s; verification best of 2 runs)");
    Ok(())
}
