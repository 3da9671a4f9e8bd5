#!/bin/sh
# install.sh: installs autogpt-shim and shim-audit for this user, on Linux and macOS.
#
#   curl -fsSL BASE_URL/install.sh | sh
#
# What it does, in this order (docs/install-linux.md, docs/install-macos.md):
#  1. finds the platform (uname), e.g. x86_64-unknown-linux-gnu;
#  2. downloads SHA256SUMS and SHA256SUMS.minisig from the base URL into a private temporary
#     folder and checks the signature against the release public key below (Ed25519, minisign
#     format) with `minisign` if it is installed, else with OpenSSL 3; neither -> stop;
#  3. takes this platform's archive name from the now trusted SHA256SUMS, downloads it and
#     checks its SHA-256;
#  4. only then unpacks it and copies the binaries into ~/.local/bin (atomically, by rename);
#  5. prints the next step, `autogpt-shim auth`.
# Any failure stops it with a message; it removes its temporary folder and installs nothing.
#
# Settings (environment):
#   AUTOGPT_SHIM_BASE_URL     where the release files are (default: the latest GitHub release)
#   AUTOGPT_SHIM_VERSION      install this version (default: the one the release lists)
#   AUTOGPT_SHIM_INSTALL_DIR  where the binaries go (default: ~/.local/bin)
#   AUTOGPT_SHIM_PUBKEY       the public key to trust instead of the release key (test releases)
#   AUTOGPT_SHIM_VERIFIER     minisign | openssl: use this signature checker (default: minisign
#                             if installed, else openssl)
#
# The script cannot use our own binary to check the signature: that binary is what is being
# checked. Both checkers it uses are installed separately from the download.
set -eu

# The release public key (minisign format), the same as RELEASE_PUBLIC_KEY in
# crates/release/src/lib.rs (a test keeps them equal). Empty until the first release key exists.
RELEASE_KEY=""

BASE_URL="${AUTOGPT_SHIM_BASE_URL:-https://github.com/Significant-Gravitas/autogpt-local-executor/releases/latest/download}"
BASE_URL="${BASE_URL%/}"
PUBKEY="${AUTOGPT_SHIM_PUBKEY:-$RELEASE_KEY}"
INSTALL_DIR="${AUTOGPT_SHIM_INSTALL_DIR:-${HOME:?HOME is not set}/.local/bin}"

say() { printf 'autogpt-shim install: %s\n' "$*"; }
die() {
    printf 'autogpt-shim install: error: %s\n' "$1" >&2
    [ $# -gt 1 ] && printf 'hint: %s\n' "$2" >&2
    printf 'autogpt-shim install: nothing was installed.\n' >&2
    exit 1
}

# --- 1. the platform ---------------------------------------------------------------------
os=$(uname -s)
arch=$(uname -m)
case "$os/$arch" in
    Linux/x86_64 | Linux/amd64) target=x86_64-unknown-linux-gnu ;;
    Linux/aarch64 | Linux/arm64) target=aarch64-unknown-linux-gnu ;;
    Darwin/arm64 | Darwin/aarch64) target=aarch64-apple-darwin ;;
    Darwin/x86_64) target=x86_64-apple-darwin ;;
    *) die "no release for $os on $arch" "Windows: use install.ps1; others: build from source (docs/developing.md)" ;;
esac

[ -n "$PUBKEY" ] || die "this installer has no release public key yet" \
    "set AUTOGPT_SHIM_PUBKEY to the public key printed in the install docs"

# --- tools -------------------------------------------------------------------------------
if command -v curl >/dev/null 2>&1; then
    fetch() { curl --fail --silent --show-error --location --output "$2" "$1"; }
elif command -v wget >/dev/null 2>&1; then
    fetch() { wget --quiet --output-document="$2" "$1"; }
else
    die "neither curl nor wget is installed"
fi
if command -v sha256sum >/dev/null 2>&1; then
    sha256() { sha256sum "$1" | cut -d ' ' -f 1; }
elif command -v shasum >/dev/null 2>&1; then
    sha256() { shasum -a 256 "$1" | cut -d ' ' -f 1; }
else
    sha256() { openssl dgst -sha256 -r "$1" | cut -d ' ' -f 1; }
fi
verifier="${AUTOGPT_SHIM_VERIFIER:-}"
if [ -z "$verifier" ]; then
    if command -v minisign >/dev/null 2>&1; then
        verifier=minisign
    elif openssl version 2>/dev/null | grep -q '^OpenSSL [3-9]'; then
        verifier=openssl
    else
        die "cannot check the release signature: neither minisign nor OpenSSL 3 is installed" \
            "install minisign (Debian/Ubuntu: sudo apt install minisign; macOS: brew install minisign), then run this again"
    fi
fi

# --- a private temporary folder, removed whatever happens ----------------------------------
tmp=$(mktemp -d "${TMPDIR:-/tmp}/autogpt-shim-install.XXXXXX") || die "cannot make a temporary folder"
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM HUP

# Checks $tmp/SHA256SUMS.minisig with OpenSSL 3: Ed25519 over the BLAKE2b-512 of the file
# (minisign's `ED`), then the global signature over the signature and the trusted comment.
verify_openssl() {
    printf '%s' "$PUBKEY" | tr -d ' \r\n' | openssl base64 -d -A >"$tmp/key.bin" 2>/dev/null || return 1
    [ "$(wc -c <"$tmp/key.bin" | tr -d ' ')" = 42 ] || { echo "malformed public key"; return 1; }
    [ "$(head -c 2 "$tmp/key.bin")" = Ed ] || { echo "not an Ed25519 public key"; return 1; }
    [ "$(sed -n 1p "$tmp/SHA256SUMS.minisig" | cut -c 1-19)" = "untrusted comment: " ] ||
        { echo "malformed signature file"; return 1; }
    sed -n 2p "$tmp/SHA256SUMS.minisig" | tr -d '\r' | openssl base64 -d -A >"$tmp/sig.bin" 2>/dev/null ||
        { echo "malformed signature"; return 1; }
    [ "$(wc -c <"$tmp/sig.bin" | tr -d ' ')" = 74 ] || { echo "malformed signature"; return 1; }
    [ "$(head -c 2 "$tmp/sig.bin")" = ED ] || { echo "unsupported signature algorithm"; return 1; }
    key_id=$(head -c 10 "$tmp/key.bin" | tail -c 8 | od -An -tx1 | tr -d ' \n')
    sig_id=$(head -c 10 "$tmp/sig.bin" | tail -c 8 | od -An -tx1 | tr -d ' \n')
    [ "$key_id" = "$sig_id" ] || { echo "signed by another key"; return 1; }
    comment_line=$(sed -n 3p "$tmp/SHA256SUMS.minisig" | tr -d '\r')
    comment=${comment_line#trusted comment: }
    [ "$comment" != "$comment_line" ] || { echo "malformed signature file"; return 1; }
    sed -n 4p "$tmp/SHA256SUMS.minisig" | tr -d '\r' | openssl base64 -d -A >"$tmp/global.bin" 2>/dev/null ||
        { echo "malformed signature"; return 1; }
    [ "$(wc -c <"$tmp/global.bin" | tr -d ' ')" = 64 ] || { echo "malformed signature"; return 1; }
    # The SubjectPublicKeyInfo DER of an Ed25519 key: a fixed 12-byte prefix, then the key.
    { printf '\060\052\060\005\006\003\053\145\160\003\041\000'; tail -c 32 "$tmp/key.bin"; } >"$tmp/key.der"
    openssl pkey -pubin -inform DER -in "$tmp/key.der" -out "$tmp/key.pem" 2>/dev/null ||
        { echo "malformed public key"; return 1; }
    tail -c 64 "$tmp/sig.bin" >"$tmp/sig64.bin"
    openssl dgst -blake2b512 -binary "$tmp/SHA256SUMS" >"$tmp/hash.bin" || return 1
    openssl pkeyutl -verify -pubin -inkey "$tmp/key.pem" -rawin -in "$tmp/hash.bin" \
        -sigfile "$tmp/sig64.bin" >/dev/null 2>&1 || { echo "signature verification failed"; return 1; }
    { cat "$tmp/sig64.bin"; printf '%s' "$comment"; } >"$tmp/global.msg"
    openssl pkeyutl -verify -pubin -inkey "$tmp/key.pem" -rawin -in "$tmp/global.msg" \
        -sigfile "$tmp/global.bin" >/dev/null 2>&1 || { echo "trusted comment verification failed"; return 1; }
}

# --- 2. the signed list of sums ----------------------------------------------------------
say "downloading the signed SHA256SUMS from $BASE_URL"
fetch "$BASE_URL/SHA256SUMS" "$tmp/SHA256SUMS" || die "cannot download $BASE_URL/SHA256SUMS"
fetch "$BASE_URL/SHA256SUMS.minisig" "$tmp/SHA256SUMS.minisig" ||
    die "cannot download $BASE_URL/SHA256SUMS.minisig"
case "$verifier" in
    minisign)
        why=$(minisign -Vm "$tmp/SHA256SUMS" -x "$tmp/SHA256SUMS.minisig" -P "$PUBKEY" 2>&1) ||
            die "the signature of SHA256SUMS is not valid for the release key ($why)" \
                "the download was changed or damaged; do not use it"
        ;;
    openssl)
        why=$(verify_openssl 2>&1) ||
            die "the signature of SHA256SUMS is not valid for the release key ($why)" \
                "the download was changed or damaged; do not use it"
        ;;
    *) die "AUTOGPT_SHIM_VERIFIER must be minisign or openssl, not $verifier" ;;
esac
say "signature of SHA256SUMS verified ($verifier)"

# --- 3. this platform's archive, checked against the trusted sum ----------------------------
if [ -n "${AUTOGPT_SHIM_VERSION:-}" ]; then
    pattern="autogpt-shim-${AUTOGPT_SHIM_VERSION}-${target}.tar.gz"
    lines=$(awk -v n="$pattern" '$2 == n' "$tmp/SHA256SUMS")
else
    lines=$(awk -v t="$target" '$2 ~ ("^autogpt-shim-[0-9][0-9A-Za-z.+-]*-" t "[.]tar[.]gz$")' "$tmp/SHA256SUMS")
fi
[ -n "$lines" ] || die "this release has no archive for $target"
[ "$(printf '%s\n' "$lines" | wc -l | tr -d ' ')" = 1 ] ||
    die "this release lists more than one archive for $target" "set AUTOGPT_SHIM_VERSION"
expected=$(printf '%s\n' "$lines" | cut -d ' ' -f 1)
archive=$(printf '%s\n' "$lines" | awk '{print $2}')
name=${archive%.tar.gz}
say "downloading $archive"
fetch "$BASE_URL/$archive" "$tmp/$archive" || die "cannot download $BASE_URL/$archive"
actual=$(sha256 "$tmp/$archive")
[ "$actual" = "$expected" ] ||
    die "$archive does not match its signed SHA-256 (expected $expected, got $actual)" \
        "the download was changed, truncated or is for another platform; do not use it"
say "SHA-256 of $archive verified"

# --- 4. unpack (only now) and install ------------------------------------------------------
mkdir "$tmp/unpacked"
tar -xzf "$tmp/$archive" -C "$tmp/unpacked" || die "cannot unpack $archive"
for bin in autogpt-shim shim-audit; do
    [ -f "$tmp/unpacked/$name/$bin" ] || die "$archive has no $name/$bin"
done
mkdir -p "$INSTALL_DIR" || die "cannot create $INSTALL_DIR"
for bin in autogpt-shim shim-audit; do
    # Copy next to the target, then rename: a running old binary keeps working, and a
    # half-copied file never has the final name.
    if ! { cp "$tmp/unpacked/$name/$bin" "$INSTALL_DIR/.$bin.new" &&
        chmod 755 "$INSTALL_DIR/.$bin.new" &&
        mv -f "$INSTALL_DIR/.$bin.new" "$INSTALL_DIR/$bin"; }; then
        rm -f "$INSTALL_DIR/.$bin.new"
        die "cannot write $INSTALL_DIR/$bin"
    fi
done
say "installed $("$INSTALL_DIR/autogpt-shim" --version 2>/dev/null || echo "$name") into $INSTALL_DIR"

# --- 5. the next step --------------------------------------------------------------------
case ":$PATH:" in
    *":$INSTALL_DIR:"*) shim=autogpt-shim ;;
    *)
        shim="$INSTALL_DIR/autogpt-shim"
        say "$INSTALL_DIR is not on your PATH; add it (e.g. in ~/.profile: export PATH=\"$INSTALL_DIR:\$PATH\")"
        ;;
esac
say "next: log in with \`$shim auth\` (docs: $name/README.md in the archive, or docs/daemon.md)"
