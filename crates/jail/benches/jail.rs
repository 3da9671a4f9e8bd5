//! FILE_STAT and a 4 KiB FILE_READ through the jail at depths 1, 5 and 10, next to the
//! same call through plain `std::fs` in the same run.
//!
//! Run: `cargo bench -p shim-jail`. Ratios: `jail/<op>/<depth>` over `std/<op>/<depth>`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::Criterion;
use criterion::criterion_group;
use criterion::criterion_main;
use shim_jail::JailConfig;
use shim_jail::JailRoot;
use shim_jail::ReadOptions;

fn setup(depth: usize) -> (tempfile::TempDir, JailRoot, PathBuf, String) {
    let t = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(t.path()).unwrap().join("root");
    let mut dir = root.clone();
    for i in 0..depth - 1 {
        dir = dir.join(format!("d{i}"));
    }
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("f.txt");
    std::fs::write(&file, "x".repeat(4096)).unwrap();
    let jail = JailRoot::open(&root, JailConfig::default(), cap_std::ambient_authority()).unwrap();
    let wire = file.to_str().unwrap().to_owned();
    (t, jail, file, wire)
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("jail_vs_std");
    g.sample_size(60)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for depth in [1usize, 5, 10] {
        let (_t, jail, file, wire) = setup(depth);
        g.bench_function(format!("stat/jail/{depth}"), |b| {
            b.iter(|| black_box(jail.stat(black_box(&wire), true).unwrap()))
        });
        g.bench_function(format!("stat/std/{depth}"), |b| {
            b.iter(|| black_box(std::fs::metadata(black_box(&file)).unwrap()))
        });
        let opts = ReadOptions::default();
        g.bench_function(format!("read4k/jail/{depth}"), |b| {
            b.iter(|| black_box(jail.read(black_box(&wire), &opts).unwrap()))
        });
        g.bench_function(format!("read4k/std/{depth}"), |b| {
            b.iter(|| {
                let bytes = std::fs::read(black_box(&file)).unwrap();
                black_box(String::from_utf8_lossy(&bytes).into_owned())
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
