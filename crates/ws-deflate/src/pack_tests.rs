use flate2::Decompress;

use super::*;

/// Inflates one message as the receiving end does (its inflater kept across messages).
fn inflate(d: &mut Decompress, packed: &[u8]) -> Vec<u8> {
    crate::stream::inflate(d, packed.to_vec(), 64 << 20).unwrap()
}

/// Text like a screenshot answer: base64-ish runs with repetition at every distance.
fn screen_text(n: usize, seed: u32) -> Vec<u8> {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut x = seed;
    let mut out = b"{\"type\":\"SCREENSHOT_RESPONSE\",\"image_base64\":\"".to_vec();
    while out.len() < n {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        if x.is_multiple_of(5) && out.len() > 3000 {
            // Copy an earlier stretch, as a screen repeats rows of text.
            let back = 1 + (x >> 8) as usize % 3000;
            let from = out.len() - back;
            let run = 20 + (x >> 20) as usize % 80;
            for k in 0..run {
                out.push(out[from + k % back]);
            }
        } else {
            out.push(alphabet[((x >> 16) % 64) as usize]);
        }
    }
    out.truncate(n);
    out
}

#[test]
fn pieces_follow_size_and_cores() {
    assert_eq!(pieces_for(0, 4), 1);
    assert_eq!(pieces_for(200 * 1024, 4), 1);
    assert_eq!(pieces_for(800 * 1024, 2), 2);
    assert_eq!(pieces_for(800 * 1024, 1), 1);
    assert_eq!(pieces_for(800 * 1024, 64), 6);
    assert_eq!(pieces_for(64 << 20, 64), PIECES_MAX);
}

#[test]
fn pieces_join_into_one_stream_that_keeps_its_context() {
    // A run of messages through one compressor and one inflater, as on a connection with
    // context takeover: small, large in pieces, a copy of the large one's end (which only
    // decodes if the history after a split is right), large again in another count.
    for bits in [9u8, 12, 15] {
        let level = Compression::new(2);
        let mut c = Compress::new_with_window_bits(level, false, bits);
        let mut d = Decompress::new(false);
        let big = screen_text(700_000, 7);
        let tail_copy = big[big.len() - 20_000..].to_vec();
        let messages: Vec<(Vec<u8>, usize)> = vec![
            (screen_text(5_000, 1), 1),
            (big.clone(), 3),
            (tail_copy, 1),
            (screen_text(400_000, 3), 2),
            (big, 4),
            (b"small".to_vec(), 4),
        ];
        for (i, (msg, pieces)) in messages.iter().enumerate() {
            let packed = deflate_in_pieces(&mut c, level, bits, msg, *pieces).unwrap();
            assert!(!packed.ends_with(&TAIL), "message {i}: tail not stripped");
            let got = inflate(&mut d, &packed);
            assert!(
                got == *msg,
                "bits {bits}, message {i} ({pieces} pieces) differs"
            );
        }
    }
}

#[test]
fn the_message_after_a_split_points_back_into_it() {
    // Context takeover survives a split: a message repeating the previous one's end
    // compresses to almost nothing (if the compressor had lost its history, it could not).
    let level = Compression::new(2);
    let mut c = Compress::new_with_window_bits(level, false, 15);
    let big = screen_text(600_000, 11);
    deflate_in_pieces(&mut c, level, 15, &big, 2).unwrap();
    let again = &big[big.len() - 30_000..];
    let packed = deflate_in_pieces(&mut c, level, 15, again, 1).unwrap();
    // The same after the message in one piece, and with no history at all.
    let mut whole = Compress::new_with_window_bits(level, false, 15);
    deflate_in_pieces(&mut whole, level, 15, &big, 1).unwrap();
    let unsplit = deflate_in_pieces(&mut whole, level, 15, again, 1).unwrap();
    let mut fresh = Compress::new_with_window_bits(level, false, 15);
    let alone = deflate_in_pieces(&mut fresh, level, 15, again, 1).unwrap();
    assert!(
        packed.len() * 10 <= unsplit.len() * 12 && packed.len() * 3 < alone.len(),
        "{} bytes after the split, {} after one piece, {} alone",
        packed.len(),
        unsplit.len(),
        alone.len()
    );
}

#[test]
fn pieces_cost_almost_no_size() {
    let level = Compression::new(2);
    let big = screen_text(800_000, 5);
    let fresh = || Compress::new_with_window_bits(level, false, 15);
    let whole = deflate_in_pieces(&mut fresh(), level, 15, &big, 1).unwrap();
    let split = deflate_in_pieces(&mut fresh(), level, 15, &big, 4).unwrap();
    assert!(
        split.len() * 1000 <= whole.len() * 1005,
        "4 pieces {} bytes, one {}",
        split.len(),
        whole.len()
    );
}

#[test]
fn a_zlib_inflater_reads_the_joined_pieces() {
    // Not only our own inflater: the C zlib in Python (what the platform's server runs)
    // reads the split stream too. Skipped where there is no python3.
    let level = Compression::new(2);
    let big = screen_text(500_000, 13);
    let mut c = Compress::new_with_window_bits(level, false, 15);
    let mut packed = deflate_in_pieces(&mut c, level, 15, &big, 3).unwrap();
    packed.extend_from_slice(&TAIL);
    let dir = std::env::temp_dir().join(format!("ws-deflate-pack-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (z, plain) = (dir.join("packed"), dir.join("plain"));
    std::fs::write(&z, &packed).unwrap();
    let script = "import sys, zlib\n\
        d = zlib.decompressobj(-15)\n\
        out = d.decompress(open(sys.argv[1], 'rb').read())\n\
        open(sys.argv[2], 'wb').write(out)\n";
    let Ok(status) = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&z)
        .arg(&plain)
        .status()
    else {
        eprintln!("SKIP: no python3");
        return;
    };
    assert!(status.success());
    assert!(std::fs::read(&plain).unwrap() == big);
    std::fs::remove_dir_all(&dir).unwrap();
}
