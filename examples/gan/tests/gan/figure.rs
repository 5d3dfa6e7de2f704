//! The GAN example's stated figures: after its 20 epochs the generated points reach all eight
//! modes, nearly all of them near the ring, and its figure is the book's.

use std::process::Command;

#[test]
fn the_generator_covers_every_mode_and_the_figure_is_the_books() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gan"))
        .arg("--artifacts")
        .arg(dir.path())
        .arg("--quiet")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("generated points:"))
        .expect("the coverage line");
    assert!(line.contains("8 of 8 modes reached"), "{line}");
    let near: f64 = line
        .split(", ")
        .nth(1)
        .and_then(|part| part.split(" %").next())
        .and_then(|n| n.parse().ok())
        .expect("a percentage");
    assert!(near >= 90.0, "{line}");
    let figure = std::fs::read(dir.path().join("ring_gan/run-1/samples.svg")).unwrap();
    let shown = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/src/figures/gan-ring.svg"
    ))
    .unwrap();
    assert!(
        figure == shown,
        "the book's GAN figure is not this run's samples.svg: copy it to docs/src/figures/gan-ring.svg"
    );
}
