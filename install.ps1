# install.ps1: installs autogpt-shim and shim-audit for this user, on Windows (x86_64).
#
#   powershell -ExecutionPolicy Bypass -c "irm BASE_URL/install.ps1 | iex"
#   (or download it, read it, and run: powershell -ExecutionPolicy Bypass -File install.ps1)
#
# What it does, in this order (docs/install-windows.md), the same as install.sh:
#  1. finds the platform: x86_64-pc-windows-gnu (also on Arm64 Windows 11, which runs x64
#     programs);
#  2. downloads SHA256SUMS and SHA256SUMS.minisig from the base URL into a private temporary
#     folder and checks the signature against the release public key below (Ed25519, minisign
#     format) with `minisign` if it is on PATH, else with the checker written out below in
#     this script (BLAKE2b-512 and Ed25519 in C#, compiled by Add-Type);
#  3. takes this platform's archive name from the now trusted SHA256SUMS, downloads it and
#     checks its SHA-256;
#  4. only then unpacks it and puts the binaries into
#     %LOCALAPPDATA%\Programs\autogpt-shim\bin (a running old binary is renamed aside, as
#     Windows allows, and the new one renamed into place);
#  5. prints the next step, `autogpt-shim auth`.
# Any failure stops it with a message; it removes its temporary folder and installs nothing.
#
# Settings (environment):
#   AUTOGPT_SHIM_BASE_URL     where the release files are (default: the latest GitHub release)
#   AUTOGPT_SHIM_VERSION      install this version (default: the one the release lists)
#   AUTOGPT_SHIM_INSTALL_DIR  where the binaries go
#   AUTOGPT_SHIM_PUBKEY       the public key to trust instead of the release key (test releases)
#   AUTOGPT_SHIM_VERIFIER     minisign | builtin: use this signature checker (default: minisign
#                             if on PATH, else builtin)
#
# The script cannot use our own binary to check the signature: that binary is what is being
# checked. The built-in checker is part of this script, so what you read is what checks.
# Tested: the built-in checker's C# is compiled with Mono and run on every signature attack
# by `cargo xtask installer-test` in CI; the whole script runs against a local server on the
# windows-2022 runner of .github/workflows/native-tests.yml (`cargo xtask installer-test
# --ps1`), which has not run yet. No PowerShell can be installed on the project's machines.

# The release public key (minisign format), the same as RELEASE_PUBLIC_KEY in
# crates/release/src/lib.rs and RELEASE_KEY in install.sh (a test keeps them equal). Empty
# until the first release key exists.
$ReleaseKey = ''

$VerifierSource = @'
using System;
using System.Numerics;
using System.Security.Cryptography;
using System.Text;

namespace AutogptShimInstall
{
    /// minisign signatures of the `ED` kind: Ed25519 over the BLAKE2b-512 of the file, then
    /// a global Ed25519 signature over that signature and the trusted comment.
    public static class Minisign
    {
        /// Null if `signatureFile` is a valid signature of `data` by `publicKey` (base64 of
        /// "Ed", the 8-byte key id and the 32-byte key); otherwise why not.
        public static string Verify(string publicKey, byte[] data, string signatureFile)
        {
            byte[] key = Base64(publicKey);
            if (key == null || key.Length != 42 || key[0] != (byte)'E' || key[1] != (byte)'d')
                return "malformed public key";
            string[] lines = signatureFile.Replace("\r", "").Split('\n');
            if (lines.Length < 4 || !lines[0].StartsWith("untrusted comment: ", StringComparison.Ordinal))
                return "malformed signature file";
            byte[] sig = Base64(lines[1]);
            if (sig == null || sig.Length != 74)
                return "malformed signature";
            if (sig[0] != (byte)'E' || sig[1] != (byte)'D')
                return "unsupported signature algorithm";
            for (int i = 2; i < 10; i++)
                if (sig[i] != key[i])
                    return "signed by another key";
            const string Trusted = "trusted comment: ";
            if (!lines[2].StartsWith(Trusted, StringComparison.Ordinal))
                return "malformed signature file";
            byte[] comment = Encoding.UTF8.GetBytes(lines[2].Substring(Trusted.Length));
            byte[] global = Base64(lines[3]);
            if (global == null || global.Length != 64)
                return "malformed signature";
            byte[] pk = Slice(key, 10, 32);
            byte[] s = Slice(sig, 10, 64);
            if (!Ed25519.Verify(pk, Blake2b.Hash512(data), s))
                return "signature verification failed";
            byte[] signed = new byte[64 + comment.Length];
            Array.Copy(s, signed, 64);
            Array.Copy(comment, 0, signed, 64, comment.Length);
            if (!Ed25519.Verify(pk, signed, global))
                return "trusted comment verification failed";
            return null;
        }

        static byte[] Base64(string text)
        {
            try { return Convert.FromBase64String(text.Trim()); }
            catch (FormatException) { return null; }
        }

        internal static byte[] Slice(byte[] a, int from, int count)
        {
            byte[] r = new byte[count];
            Array.Copy(a, from, r, 0, count);
            return r;
        }
    }

    /// BLAKE2b-512 without a key (RFC 7693).
    public static class Blake2b
    {
        static readonly ulong[] IV = {
            0x6a09e667f3bcc908UL, 0xbb67ae8584caa73bUL, 0x3c6ef372fe94f82bUL, 0xa54ff53a5f1d36f1UL,
            0x510e527fade682d1UL, 0x9b05688c2b3e6c1fUL, 0x1f83d9abfb41bd6bUL, 0x5be0cd19137e2179UL };
        static readonly byte[,] Sigma = {
            { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 },
            { 14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3 },
            { 11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4 },
            { 7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8 },
            { 9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13 },
            { 2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9 },
            { 12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11 },
            { 13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10 },
            { 6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5 },
            { 10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0 } };

        /// The 64-byte BLAKE2b-512 of `data`.
        public static byte[] Hash512(byte[] data)
        {
            ulong[] h = (ulong[])IV.Clone();
            h[0] ^= 0x01010040UL; // digest length 64, no key, fanout 1, depth 1
            ulong t = 0;
            int off = 0;
            while (data.Length - off > 128)
            {
                t += 128;
                Compress(h, data, off, t, false);
                off += 128;
            }
            byte[] last = new byte[128];
            int rest = data.Length - off;
            Array.Copy(data, off, last, 0, rest);
            t += (ulong)rest;
            Compress(h, last, 0, t, true);
            byte[] digest = new byte[64];
            for (int i = 0; i < 8; i++)
                for (int j = 0; j < 8; j++)
                    digest[i * 8 + j] = (byte)(h[i] >> (8 * j));
            return digest;
        }

        static ulong Rotr(ulong x, int n) { return (x >> n) | (x << (64 - n)); }

        static void G(ulong[] v, int a, int b, int c, int d, ulong x, ulong y)
        {
            unchecked
            {
                v[a] = v[a] + v[b] + x; v[d] = Rotr(v[d] ^ v[a], 32);
                v[c] = v[c] + v[d]; v[b] = Rotr(v[b] ^ v[c], 24);
                v[a] = v[a] + v[b] + y; v[d] = Rotr(v[d] ^ v[a], 16);
                v[c] = v[c] + v[d]; v[b] = Rotr(v[b] ^ v[c], 63);
            }
        }

        static void Compress(ulong[] h, byte[] block, int off, ulong t, bool last)
        {
            ulong[] m = new ulong[16];
            for (int i = 0; i < 16; i++)
                for (int j = 7; j >= 0; j--)
                    m[i] = (m[i] << 8) | block[off + i * 8 + j];
            ulong[] v = new ulong[16];
            for (int i = 0; i < 8; i++)
            {
                v[i] = h[i];
                v[i + 8] = IV[i];
            }
            v[12] ^= t; // the counter's high word stays 0: no file here reaches 2^64 bytes
            if (last)
                v[14] = ~v[14];
            for (int r = 0; r < 12; r++)
            {
                int s = r % 10;
                G(v, 0, 4, 8, 12, m[Sigma[s, 0]], m[Sigma[s, 1]]);
                G(v, 1, 5, 9, 13, m[Sigma[s, 2]], m[Sigma[s, 3]]);
                G(v, 2, 6, 10, 14, m[Sigma[s, 4]], m[Sigma[s, 5]]);
                G(v, 3, 7, 11, 15, m[Sigma[s, 6]], m[Sigma[s, 7]]);
                G(v, 0, 5, 10, 15, m[Sigma[s, 8]], m[Sigma[s, 9]]);
                G(v, 1, 6, 11, 12, m[Sigma[s, 10]], m[Sigma[s, 11]]);
                G(v, 2, 7, 8, 13, m[Sigma[s, 12]], m[Sigma[s, 13]]);
                G(v, 3, 4, 9, 14, m[Sigma[s, 14]], m[Sigma[s, 15]]);
            }
            for (int i = 0; i < 8; i++)
                h[i] ^= v[i] ^ v[i + 8];
        }
    }

    /// Ed25519 signature verification (RFC 8032 5.1.7) on BigInteger: slow next to a real
    /// library (tens of milliseconds), which is nothing next to a download.
    public static class Ed25519
    {
        static readonly BigInteger P = BigInteger.Pow(2, 255) - 19;
        static readonly BigInteger L =
            BigInteger.Pow(2, 252) + BigInteger.Parse("27742317777372353535851937790883648493");
        static readonly BigInteger D = Mod(-121665 * Inv(121666));
        static readonly BigInteger SqrtMinusOne = BigInteger.ModPow(2, (P - 1) / 4, P);
        static readonly BigInteger[] Base = BasePoint();

        /// True if `sig` (R and S, 64 bytes) is a valid signature of `msg` by `pk` (32 bytes).
        public static bool Verify(byte[] pk, byte[] msg, byte[] sig)
        {
            if (pk.Length != 32 || sig.Length != 64)
                return false;
            BigInteger[] a = Decode(pk);
            if (a == null)
                return false;
            byte[] r = Minisign.Slice(sig, 0, 32);
            BigInteger s = LittleEndian(Minisign.Slice(sig, 32, 32));
            if (s >= L)
                return false;
            byte[] input = new byte[64 + msg.Length];
            Array.Copy(r, input, 32);
            Array.Copy(pk, 0, input, 32, 32);
            Array.Copy(msg, 0, input, 64, msg.Length);
            byte[] hash;
            using (SHA512 sha = SHA512.Create())
                hash = sha.ComputeHash(input);
            BigInteger k = LittleEndian(hash) % L;
            // [S]B - [k]A must be R.
            BigInteger[] minusA = { Mod(-a[0]), a[1], a[2], Mod(-a[3]) };
            byte[] check = Encode(Add(Multiply(s, Base), Multiply(k, minusA)));
            for (int i = 0; i < 32; i++)
                if (check[i] != r[i])
                    return false;
            return true;
        }

        static BigInteger Mod(BigInteger a)
        {
            BigInteger r = a % P;
            return r.Sign < 0 ? r + P : r;
        }

        static BigInteger Inv(BigInteger a) { return BigInteger.ModPow(a, P - 2, P); }

        static BigInteger LittleEndian(byte[] b)
        {
            byte[] unsigned = new byte[b.Length + 1];
            Array.Copy(b, unsigned, b.Length);
            return new BigInteger(unsigned);
        }

        static BigInteger[] BasePoint()
        {
            byte[] y = Mod(4 * Inv(5)).ToByteArray();
            byte[] e = new byte[32];
            Array.Copy(y, e, Math.Min(32, y.Length));
            return Decode(e);
        }

        /// A point in extended coordinates (X, Y, Z, T), or null if `e` encodes none.
        static BigInteger[] Decode(byte[] e)
        {
            byte[] b = (byte[])e.Clone();
            int sign = b[31] >> 7;
            b[31] &= 0x7f;
            BigInteger y = LittleEndian(b);
            if (y >= P)
                return null;
            BigInteger y2 = Mod(y * y);
            BigInteger x2 = Mod((y2 - 1) * Inv(Mod(D * y2 + 1)));
            BigInteger x = BigInteger.ModPow(x2, (P + 3) / 8, P);
            if (Mod(x * x - x2) != 0)
                x = Mod(x * SqrtMinusOne);
            if (Mod(x * x - x2) != 0)
                return null;
            if (x.IsZero && sign == 1)
                return null;
            if ((x.IsEven ? 0 : 1) != sign)
                x = P - x;
            return new BigInteger[] { x, y, BigInteger.One, Mod(x * y) };
        }

        static byte[] Encode(BigInteger[] p)
        {
            BigInteger zi = Inv(p[2]);
            BigInteger x = Mod(p[0] * zi);
            byte[] y = Mod(p[1] * zi).ToByteArray();
            byte[] e = new byte[32];
            Array.Copy(y, e, Math.Min(32, y.Length));
            if (!x.IsEven)
                e[31] |= 0x80;
            return e;
        }

        static BigInteger[] Add(BigInteger[] p, BigInteger[] q)
        {
            BigInteger a = Mod((p[1] - p[0]) * (q[1] - q[0]));
            BigInteger b = Mod((p[1] + p[0]) * (q[1] + q[0]));
            BigInteger c = Mod(2 * p[3] * q[3] * D);
            BigInteger d = Mod(2 * p[2] * q[2]);
            BigInteger e = b - a, f = d - c, g = d + c, h = b + a;
            return new BigInteger[] { Mod(e * f), Mod(g * h), Mod(f * g), Mod(e * h) };
        }

        static BigInteger[] Multiply(BigInteger k, BigInteger[] p)
        {
            BigInteger[] q = { BigInteger.Zero, BigInteger.One, BigInteger.One, BigInteger.Zero };
            while (k.Sign > 0)
            {
                if (!k.IsEven)
                    q = Add(q, p);
                p = Add(p, p);
                k >>= 1;
            }
            return q;
        }
    }
}
'@

function Install-AutogptShim {
    $ErrorActionPreference = 'Stop'
    $ProgressPreference = 'SilentlyContinue' # Windows PowerShell's progress bar slows downloads
    # Windows PowerShell 5.1 may default to TLS 1.0; the release host needs 1.2.
    [Net.ServicePointManager]::SecurityProtocol = [Net.ServicePointManager]::SecurityProtocol -bor
        [Net.SecurityProtocolType]::Tls12

    $baseUrl = $env:AUTOGPT_SHIM_BASE_URL
    if (-not $baseUrl) {
        $baseUrl = 'https://github.com/Significant-Gravitas/autogpt-local-executor/releases/latest/download'
    }
    $baseUrl = $baseUrl.TrimEnd('/')
    $pubkey = $env:AUTOGPT_SHIM_PUBKEY
    if (-not $pubkey) { $pubkey = $ReleaseKey }
    $installDir = $env:AUTOGPT_SHIM_INSTALL_DIR
    if (-not $installDir) {
        if (-not $env:LOCALAPPDATA) { Stop-Install 'LOCALAPPDATA is not set' 'set AUTOGPT_SHIM_INSTALL_DIR' }
        $installDir = Join-Path $env:LOCALAPPDATA 'Programs\autogpt-shim\bin'
    }

    # --- 1. the platform ----------------------------------------------------------------------
    $arch = $env:PROCESSOR_ARCHITEW6432 # set when a 32-bit PowerShell runs on 64-bit Windows
    if (-not $arch) { $arch = $env:PROCESSOR_ARCHITECTURE }
    switch ($arch) {
        'AMD64' { $target = 'x86_64-pc-windows-gnu' }
        'ARM64' { $target = 'x86_64-pc-windows-gnu'; Say 'Arm64: installing the x86_64 build, which Windows 11 runs' }
        default { Stop-Install "no release for Windows on $arch" 'build from source (docs/developing.md)' }
    }
    if (-not $pubkey) {
        Stop-Install 'this installer has no release public key yet' 'set AUTOGPT_SHIM_PUBKEY to the public key printed in the install docs'
    }

    $verifier = $env:AUTOGPT_SHIM_VERIFIER
    if (-not $verifier) {
        if (Get-Command minisign -ErrorAction SilentlyContinue) { $verifier = 'minisign' } else { $verifier = 'builtin' }
    }
    if ($verifier -ne 'minisign' -and $verifier -ne 'builtin') {
        Stop-Install "AUTOGPT_SHIM_VERIFIER must be minisign or builtin, not $verifier"
    }

    # --- a private temporary folder, removed whatever happens --------------------------------
    $tmp = Join-Path ([IO.Path]::GetTempPath()) ('autogpt-shim-install.' + [Guid]::NewGuid().ToString('N'))
    New-Item -ItemType Directory -Path $tmp | Out-Null
    try {
        # --- 2. the signed list of sums ------------------------------------------------------
        Say "downloading the signed SHA256SUMS from $baseUrl"
        $sums = Join-Path $tmp 'SHA256SUMS'
        $sig = Join-Path $tmp 'SHA256SUMS.minisig'
        Get-Download "$baseUrl/SHA256SUMS" $sums
        Get-Download "$baseUrl/SHA256SUMS.minisig" $sig
        if ($verifier -eq 'minisign') {
            $code, $why = Invoke-Native { & minisign -Vm $sums -x $sig -P $pubkey }
            if ($code -ne 0) {
                Stop-Install "the signature of SHA256SUMS is not valid for the release key ($($why.Trim()))" 'the download was changed or damaged; do not use it'
            }
        } else {
            if (-not ('AutogptShimInstall.Minisign' -as [type])) {
                if ($PSVersionTable.PSEdition -eq 'Core') {
                    Add-Type -TypeDefinition $VerifierSource -Language CSharp
                } else {
                    Add-Type -TypeDefinition $VerifierSource -Language CSharp -ReferencedAssemblies System.Numerics
                }
            }
            $why = [AutogptShimInstall.Minisign]::Verify($pubkey, [IO.File]::ReadAllBytes($sums), [IO.File]::ReadAllText($sig))
            if ($null -ne $why) {
                Stop-Install "the signature of SHA256SUMS is not valid for the release key ($why)" 'the download was changed or damaged; do not use it'
            }
        }
        Say "signature of SHA256SUMS verified ($verifier)"

        # --- 3. this platform's archive, checked against the trusted sum ----------------------
        $lines = @(Get-Content -LiteralPath $sums | Where-Object {
                $f = $_ -split '\s+'
                if ($f.Count -ne 2) { return $false }
                if ($env:AUTOGPT_SHIM_VERSION) {
                    $f[1] -ceq "autogpt-shim-$($env:AUTOGPT_SHIM_VERSION)-$target.zip"
                } else {
                    $f[1] -cmatch ('^autogpt-shim-[0-9][0-9A-Za-z.+-]*-' + [regex]::Escape($target) + '\.zip$')
                }
            })
        if ($lines.Count -eq 0) { Stop-Install "this release has no archive for $target" }
        if ($lines.Count -gt 1) { Stop-Install "this release lists more than one archive for $target" 'set AUTOGPT_SHIM_VERSION' }
        $expected, $archive = $lines[0] -split '\s+'
        $name = $archive.Substring(0, $archive.Length - 4)
        Say "downloading $archive"
        $zip = Join-Path $tmp $archive
        Get-Download "$baseUrl/$archive" $zip
        $actual = (Get-FileHash -Algorithm SHA256 -LiteralPath $zip).Hash.ToLowerInvariant()
        if ($actual -cne $expected.ToLowerInvariant()) {
            Stop-Install "$archive does not match its signed SHA-256 (expected $expected, got $actual)" 'the download was changed, truncated or is for another platform; do not use it'
        }
        Say "SHA-256 of $archive verified"

        # --- 4. unpack (only now) and install -------------------------------------------------
        $unpacked = Join-Path $tmp 'unpacked'
        try {
            Expand-Archive -LiteralPath $zip -DestinationPath $unpacked
        } catch {
            Stop-Install "cannot unpack ${archive}: $($_.Exception.Message)"
        }
        $bins = 'autogpt-shim.exe', 'shim-audit.exe'
        foreach ($bin in $bins) {
            if (-not (Test-Path -LiteralPath (Join-Path $unpacked "$name\$bin") -PathType Leaf)) {
                Stop-Install "$archive has no $name\$bin"
            }
        }
        try {
            New-Item -ItemType Directory -Force -Path $installDir | Out-Null
        } catch {
            Stop-Install "cannot create ${installDir}: $($_.Exception.Message)"
        }
        foreach ($bin in $bins) {
            $dest = Join-Path $installDir $bin
            $new = Join-Path $installDir ".$bin.new"
            $old = Join-Path $installDir ".$bin.old"
            try {
                # Copy next to the target, then rename: a half-copied file never has the final
                # name. A running exe cannot be overwritten on Windows, but it can be renamed.
                Copy-Item -LiteralPath (Join-Path $unpacked "$name\$bin") -Destination $new -Force
                if (Test-Path -LiteralPath $old) { Remove-Item -LiteralPath $old -Force -ErrorAction SilentlyContinue }
                if (Test-Path -LiteralPath $dest) { Move-Item -LiteralPath $dest -Destination $old -Force }
                Move-Item -LiteralPath $new -Destination $dest
            } catch {
                Remove-Item -LiteralPath $new -Force -ErrorAction SilentlyContinue
                Stop-Install "cannot write ${dest}: $($_.Exception.Message)"
            }
        }
        $shim = Join-Path $installDir 'autogpt-shim.exe'
        $code, $version = Invoke-Native { & $shim --version }
        if ($code -ne 0 -or -not $version) { $version = $name }
        Say "installed $version into $installDir"

        # --- 5. the next step -----------------------------------------------------------------
        $userPath = [Environment]::GetEnvironmentVariable('Path', 'User')
        $onPath = @("$userPath;$env:Path" -split ';' | Where-Object { $_.TrimEnd('\') -ieq $installDir.TrimEnd('\') }).Count -gt 0
        if ($onPath) {
            $command = 'autogpt-shim'
        } else {
            $command = "& '$shim'"
            Say "$installDir is not on your PATH; to add it for your user:"
            Say "  [Environment]::SetEnvironmentVariable('Path', `"$installDir;`" + [Environment]::GetEnvironmentVariable('Path', 'User'), 'User')"
        }
        Say "next: log in with ``$command auth`` (docs: $name\README.md in the archive, or docs/daemon.md)"
    } finally {
        Remove-Item -LiteralPath $tmp -Recurse -Force -ErrorAction SilentlyContinue
    }
}

function Say([string]$Message) {
    Write-Output "autogpt-shim install: $Message"
}

# Stops the install: the message and hint go to stderr, the caller's catch ends the script.
function Stop-Install([string]$Message, [string]$Hint) {
    $text = "autogpt-shim install: error: $Message"
    if ($Hint) { $text += "`nhint: $Hint" }
    throw [System.InvalidOperationException]::new($text)
}

# Runs a native program: its exit code and its output (stderr too) as one trimmed string.
# Windows PowerShell turns a native program's stderr into errors, which 'Stop' would throw.
function Invoke-Native([scriptblock]$Run) {
    $saved = $ErrorActionPreference
    $ErrorActionPreference = 'Continue'
    try {
        $out = & $Run 2>&1 | ForEach-Object { "$_" } | Out-String
        return $LASTEXITCODE, $out.Trim()
    } finally {
        $ErrorActionPreference = $saved
    }
}

function Get-Download([string]$Url, [string]$Path) {
    try {
        Invoke-WebRequest -Uri $Url -OutFile $Path -UseBasicParsing
    } catch {
        Stop-Install "cannot download ${Url}: $($_.Exception.Message)"
    }
}

try {
    Install-AutogptShim
} catch {
    $text = $_.Exception.Message
    if ($_.Exception -isnot [System.InvalidOperationException] -or -not $text.StartsWith('autogpt-shim install: ')) {
        $text = "autogpt-shim install: error: $text"
    }
    [Console]::Error.WriteLine($text)
    [Console]::Error.WriteLine('autogpt-shim install: nothing was installed.')
    # `irm ... | iex` runs in the user's own session: end the script, not their shell.
    if ($PSCommandPath) { exit 1 }
}
