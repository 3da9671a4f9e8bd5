#![allow(missing_docs)] // criterion_group! generates an undocumented function
//! Criterion benchmarks of the audit log's hot paths:
//! encoding one record (canonical form + HMAC + line), verifying an in-memory log,
//! raw HMAC-SHA256 over the same lines (the physical limit), and a durable append.
//!
//! `cargo bench -p shim-audit --bench audit`. The one-shot figures of the issue (1 vs 64
//! writers, a 1,000,000-record log) come from `examples/bench_audit.rs`.

use std::hint::black_box;

use criterion::Criterion;
use criterion::Throughput;
use criterion::criterion_group;
use criterion::criterion_main;
use shim_audit::AuditKey;
use shim_audit::AuditLog;
use shim_audit::WriterConfig;
use shim_audit::testing::sample_event;
use shim_audit::testing::synthesize_log;

fn key() -> AuditKey {
    match AuditKey::from_bytes(&[42u8; 32]) {
        Ok(k) => k,
        Err(e) => panic!("{e}"),
    }
}

fn benches(c: &mut Criterion) {
    let key = key();
    let Ok(dir) = tempfile::tempdir() else { return };
    let path = dir.path().join("bench.log");
    let Ok(bytes) = synthesize_log(&path, &key, 20_000) else {
        return;
    };
    let Ok(data) = std::fs::read(&path) else {
        return;
    };
    let lines: Vec<&[u8]> = data
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();

    let mut g = c.benchmark_group("verify");
    g.throughput(Throughput::Bytes(bytes));
    g.sample_size(10);
    g.bench_function("verify_bytes_20k_records", |b| {
        b.iter(|| black_box(shim_audit::verify_bytes(black_box(&data), &key)))
    });
    g.bench_function("raw_hmac_per_line_20k_records", |b| {
        b.iter(|| {
            for l in &lines {
                black_box(key.mac(l));
            }
        })
    });
    g.finish();

    let mut g = c.benchmark_group("record");
    g.bench_function("parse_and_canonicalise_one_line", |b| {
        let line = lines[lines.len() / 2];
        let mut out = Vec::with_capacity(1024);
        b.iter(|| {
            if let Ok(node) = shim_audit::parse::parse(black_box(line)) {
                out.clear();
                shim_audit::parse::write_canonical_node(&mut out, &node, Some("hmac"));
            }
            black_box(out.len())
        })
    });
    g.finish();

    let mut g = c.benchmark_group("append");
    g.sample_size(10);
    let log_path = dir.path().join("append.log");
    if let Ok(log) = AuditLog::open(WriterConfig::new(&log_path, "bench", "0.2.0"), key.clone()) {
        let mut i = 0u64;
        g.bench_function("append_with_fsync_one_writer", |b| {
            b.iter(|| {
                i += 1;
                black_box(log.append_blocking(sample_event(i)).is_ok())
            })
        });
    }
    g.finish();
}

criterion_group!(audit, benches);
criterion_main!(audit);
