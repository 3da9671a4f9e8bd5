//! Records the target triple: `update` looks for the release archive named after it.

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    println!("cargo:rustc-env=SHIM_TARGET_TRIPLE={target}");
    println!("cargo:rerun-if-changed=build.rs");
}
