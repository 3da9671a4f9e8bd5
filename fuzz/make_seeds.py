#!/usr/bin/env python3
"""Writes the committed seed corpus of the fuzz targets (fuzz/corpus/<target>/seed-*).

Run from the repository root: `python3 fuzz/make_seeds.py`. Audit records are signed with
the key of AUDIT_AUTH_CLI.md 1.9's example (bytes 00 01 .. 1f), root grants with the key
[7; 32] of the root_grant target; both as the Rust code does (canonical JSON of 1.9, whose
float layout is Python's repr).
"""
import base64
import hashlib
import hmac
import json
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
AUDIT_KEY = bytes(range(32))
GRANT_AUDIT_KEY = bytes([7] * 32)


def write(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def line(obj):
    """The on-disk form of 1.4 (insertion order, ", " and ": ")."""
    return json.dumps(obj, separators=(", ", ": "), ensure_ascii=False)


def chain(events, key=AUDIT_KEY):
    out = []
    prev = None
    for seq, (op, details) in enumerate(events, 1):
        rec = {
            "ts": 1767225600.25 + seq,
            "session_id": "3c6f0a1e-2b7d-4f59-8e14-5a9b0c7d2e31",
            "machine_id": "3f2b8c1e-5d4a-4e6b-9c7d-0a1b2c3d4e5f",
            "shim_version": "0.2.0",
            "request_id": None if seq == 1 else "4c1d7a52-0f1e-4b8e-9d7a-%012d" % seq,
            "op": op,
            "details": details,
            "result": {"ok": True, "exit_code": None, "duration_ms": seq, "error_code": None},
            "seq": seq,
            "prev_hmac": prev,
        }
        h = hmac.new(key, canonical(rec).encode(), hashlib.sha256).hexdigest()
        rec["hmac"] = h
        prev = h
        out.append(line(rec) + "\n")
    return "".join(out)


EVENTS = [
    ("SHIM_START", {"shim_version": "0.2.0"}),
    ("FILE_READ", {"path": "/home/ada/autogpt-workspace/notes.txt", "encoding": "utf-8",
                   "offset": 0, "length": None, "size_bytes_returned": 1234}),
    ("EXECUTE_COMMAND", {"command": "echo \"hi\"\tthere\n", "cwd": "/home/ada/é/😀",
                         "timeout": 30.5, "env": ["A=1", "B=\u2028"], "big": 12345678901234567890123}),
    ("FILE_WRITE", {"path": "/w/a\\b", "bytes": 0, "ratio": 1e-05, "huge": 2.5e300,
                    "neg": -0.0, "nested": {"z": [1, [2, {"y": None}]], "a": True}}),
]
ROTATED = ("AUDIT_ROTATED", {"reason": "size", "previous_file": "audit.log.1",
                             "previous_last_seq": 41, "previous_last_hmac": "0" * 64})

# audit_verify: whole logs.
write("audit_verify", "one-record", chain(EVENTS[:1]))
write("audit_verify", "four-records", chain(EVENTS))
write("audit_verify", "rotated-head", chain([ROTATED] + EVENTS[1:3]))
write("audit_verify", "blank-lines", chain(EVENTS[:2]).replace("\n", "\n \r\n", 1))
write("audit_verify", "truncated", chain(EVENTS[:3])[:-40])
write("audit_verify", "wrong-key", chain(EVENTS[:2], key=bytes(32)))

# audit_parse: single lines and values.
for i, rec in enumerate(chain(EVENTS + [ROTATED]).splitlines()):
    write("audit_parse", "record-%d" % i, rec)
write("audit_parse", "spec-canonical",
      '{"details":{"shim_version":"0.1.0"},"machine_id":"3f2b8c1e-5d4a-4e6b-9c7d-0a1b2c3d4e5f",'
      '"op":"SHIM_START","prev_hmac":null,"request_id":null,"result":{"duration_ms":0,'
      '"error_code":null,"exit_code":null,"ok":true},"seq":1,"session_id":"-",'
      '"shim_version":"0.1.0","ts":1767225600.25}')
write("audit_parse", "escapes", r'{"s": "\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t\u001f", "\u0061": 1}')
write("audit_parse", "numbers", "[0, -0, 1.5e3, 1E-7, -12.25, 1e16, 123456789012345678901234567890, 5e-324]")
write("audit_parse", "keys-utf16-order", '{"\ue000": 1, "\U0001f600": 2, "z": 3, "é": 4}')

# key_chord.
for name, text in [("ctrl-shift-t", "ctrl+shift+t"), ("alt-f4", "Alt + F4"),
                   ("super-right", "superright+plus"), ("keypad", "num7+pageup+Return"),
                   ("punct", "ctrl+bracketleft+;+`"), ("modifier", "Command"),
                   ("media", "volumemute+playpause+f24")]:
    write("key_chord", name, text)

# config_toml: TOML, then NUL, then environment lines NAME=VALUE.
write("config_toml", "full",
      'platform_url = "https://platform.example"\n'
      'platform_ws_url = "wss://platform.example/ws"\n'
      'allow_insecure_platform_url = false\n'
      'oauth_redirect_port = 41899\n'
      'session_id = "abc"\n'
      'display_name = "Ada\'s laptop"\n'
      'allowed_root = "~/work"\n'
      'audit_log_path = "/var/log/shim/audit.log"\n'
      'enable_shell = true\n'
      'max_concurrent = 4\n'
      'max_file_size_bytes = 10485760\n'
      'computer_use_masked_regions = ["0,0,100,50", "10, 10, 20, 20"]\n'
      'recording_channels = ["screen"]\n'
      'reconnect_base_delay = 1\n'
      'reconnect_max_delay = 60.0\n'
      'reconnect_jitter_seconds = 0.5\n'
      'status_interval_seconds = 30\n'
      'handshake_timeout_seconds = 2.5\n')
write("config_toml", "env",
      'platform_url = "http://127.0.0.1:8080"\n\0'
      'MAX_CONCURRENT=8\nENABLE_SHELL=yes\nRECONNECT_BASE_DELAY=0.25\n'
      'COMPUTER_USE_MASKED_REGIONS=["1,2,3,4"]\nIDLE_TIMEOUT_SECONDS=600\n')
write("config_toml", "bad-type", 'max_concurrent = "four"\n')
write("config_toml", "syntax", '[table\nplatform_url = \n')


# root_grant: mode byte 0 (raw grant text), then a grant issued like grant::issue.
def json_string(s):
    return json.dumps(s, ensure_ascii=True)


def issue(claims, key=GRANT_AUDIT_KEY):
    text = "{%s}" % ",".join(
        "%s:%s" % (json_string(k), json_string(v) if isinstance(v, str) else json.dumps(v))
        for k, v in [("allowed_root", claims["allowed_root"]),
                     ("fingerprint", claims["fingerprint"]),
                     ("issued_at", claims["issued_at"]),
                     ("machine_id", claims["machine_id"]),
                     ("revision", claims["revision"]),
                     ("session_id", claims["session_id"])])
    enc = base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()
    gk = hmac.new(key, b"autogpt-root-grant-v1", hashlib.sha256).digest()
    sig = base64.urlsafe_b64encode(hmac.new(gk, enc.encode(), hashlib.sha256).digest()).rstrip(b"=").decode()
    return "v1.%s.%s" % (enc, sig)


base = {"allowed_root": "/tmp/grant-fuzz/root", "fingerprint": "ab" * 32, "issued_at": 1767225600.5,
        "machine_id": "fuzz-machine", "revision": 1, "session_id": "fuzz-session"}
write("root_grant", "issued", b"\0" + issue(base).encode())
write("root_grant", "issued-rev7", b"\0" + issue(dict(base, revision=7)).encode())
write("root_grant", "other-session", b"\0" + issue(dict(base, session_id="s\u00e9\U0001f600")).encode())
write("root_grant", "revision-0", b"\0" + issue(dict(base, revision=0)).encode())
write("root_grant", "structured", b"\1\1\1\0\1\0" + bytes(range(40)))

# oauth_callback: expected state, LF, request target.
for name, text in [("code", "st4te\n/callback?code=c0de&state=st4te"),
                   ("denied", "st4te\n/callback?error=access_denied&error_description=x&state=st4te"),
                   ("wrong-state", "st4te\n/callback?code=c&state=other"),
                   ("encoded", "a b+c\n/callback?state=a%20b%2Bc&code=%E2%9C%93"),
                   ("stray", "st4te\n/favicon.ico"),
                   ("empty-code", "s\n/callback?code=&state=s&state=t")]:
    write("oauth_callback", name, text)


# credential_envelope: the writers' form (3.9.4) and near misses.
def envelope(memory=65536, iterations=3, parallelism=1, salt=bytes(range(16)), nonce=bytes(12),
             ct=bytes(range(48))):
    b = lambda x: base64.b64encode(x).decode()
    return ('{"cipher":{"name":"aes-256-gcm","nonce":"%s"},"ciphertext":"%s",'
            '"format":"autogpt-shim-credentials","kdf":{"iterations":%d,"memory_kib":%d,'
            '"name":"argon2id","parallelism":%d,"salt":"%s","version":19},"version":1}\n'
            % (b(nonce), b(ct), iterations, memory, parallelism, b(salt)))


write("credential_envelope", "written", envelope())
write("credential_envelope", "min-params", envelope(memory=19456, iterations=2, salt=bytes(32)))
write("credential_envelope", "too-cheap", envelope(memory=1024))
write("credential_envelope", "short-nonce", envelope(nonce=bytes(8)))
write("credential_envelope", "spaced",
      json.dumps(json.loads(envelope()), indent=2, sort_keys=False))
