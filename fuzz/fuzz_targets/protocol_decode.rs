//! Fuzzes the frame decoder: it must never panic, and whatever it accepts must re-encode
//! and decode to the same frame.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shim_protocol::frame;
use shim_protocol::messages::Direction;

fuzz_target!(|data: &[u8]| {
    let Ok(decoded) = frame::decode_bytes(data) else {
        return;
    };
    let encoded = match decoded.message_type().direction() {
        Direction::PlatformToShim => {
            frame::encode_platform(&decoded.id, decoded.ts, &decoded.message)
        }
        _ => frame::encode_shim(&decoded.id, decoded.ts, None, &decoded.message),
    };
    let Ok(text) = encoded else {
        return;
    };
    let again = frame::decode(&text).expect("re-encoded frame must decode");
    assert_eq!(
        again.message, decoded.message,
        "round trip changed the message"
    );
    assert_eq!(again.id, decoded.id);
});
