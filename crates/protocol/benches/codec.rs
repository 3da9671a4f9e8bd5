//! Decode and encode of `FILE_CONTENTS` frames of 4 KiB and 1 MiB, beside serde_json
//! parsing the same bytes into a `serde_json::Value` (the target: typed decoding is no
//! slower than that).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::BenchmarkId;
use criterion::Criterion;
use criterion::Throughput;
use criterion::criterion_group;
use criterion::criterion_main;
use shim_protocol::frame;
use shim_protocol::messages::Message;
use shim_protocol::messages::files::ContentEncoding;
use shim_protocol::messages::files::FileContents;
use std::hint::black_box;

fn contents(size: usize) -> Message {
    // Realistic text: mostly ASCII with newlines, quotes and a few multi-byte characters,
    // so escaping is exercised.
    let line = "fn main() { println!(\"héllo, wörld\"); }\t// comment\n";
    let mut content = String::with_capacity(size);
    while content.len() + line.len() <= size {
        content.push_str(line);
    }
    while content.len() < size {
        content.push('x');
    }
    Message::FileContents(FileContents {
        size_bytes: content.len() as u64,
        content,
        encoding: ContentEncoding::Utf8,
        truncated: false,
    })
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("file_contents");
    for (label, size) in [("4KiB", 4 * 1024), ("1MiB", 1024 * 1024)] {
        let msg = contents(size);
        let text = frame::encode_shim(
            "0b6c7a52-4f3e-4d1c-9a35-0c1f8e2d7a11",
            1767225600.25,
            Some(3),
            &msg,
        )
        .unwrap();
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(BenchmarkId::new("decode_typed", label), &text, |b, t| {
            b.iter(|| frame::decode(black_box(t)).unwrap())
        });
        group.bench_with_input(
            BenchmarkId::new("serde_json_value", label),
            &text,
            |b, t| b.iter(|| serde_json::from_str::<serde_json::Value>(black_box(t)).unwrap()),
        );
        group.bench_with_input(BenchmarkId::new("encode", label), &msg, |b, m| {
            b.iter(|| {
                frame::encode_shim(
                    "0b6c7a52-4f3e-4d1c-9a35-0c1f8e2d7a11",
                    1767225600.25,
                    Some(3),
                    black_box(m),
                )
                .unwrap()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
