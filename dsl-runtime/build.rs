//! Records the compiler that builds the runtime (and so the experiment binary linking it), for
//! the provenance a run saves in `config.json`.

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let version = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map_or_else(|| "unknown".to_owned(), |v| v.trim().to_owned());
    println!("cargo:rustc-env=DSL_RUSTC_VERSION={version}");
    println!("cargo:rerun-if-env-changed=RUSTC");
}
