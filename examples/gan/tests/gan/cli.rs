//! The GAN's command line: each optimizer's settings are config values, a name that is not an
//! optimizer is refused, and `--verify` reruns a two-optimizer run bit for bit.

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gan"))
        .args(args)
        .output()
        .expect("the example starts")
}

/// One quiet epoch in `artifacts`, with `flags` added.
fn one_epoch(artifacts: &str, flags: &[&str]) -> Output {
    let mut args = vec!["--quiet", "--epochs", "1", "--artifacts", artifacts];
    args.extend_from_slice(flags);
    run(&args)
}

/// The config a run of `dir` recorded, by run number.
fn config(dir: &std::path::Path, run: usize) -> serde_json::Value {
    let path = dir.join(format!("ring_gan/run-{run}/config.json"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn each_optimizer_s_rate_is_a_config_value() {
    let dir = tempfile::tempdir().unwrap();
    let artifacts = dir.path().to_str().unwrap();
    let out = one_epoch(artifacts, &["--set", "optimizers.generator.lr=0.004"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let config = config(dir.path(), 1);
    let optimizers = &config["hyperparameters"]["optimizers"];
    assert_eq!(optimizers["generator"]["lr"], 0.004);
    assert_eq!(optimizers["discriminator"]["lr"], 0.002);
    assert_eq!(optimizers["generator"]["on"][0], "generator");

    let out = one_epoch(artifacts, &["--set", "optimizers.critic.lr=0.1"]);
    assert!(!out.status.success());
    let said = stderr(&out);
    assert!(said.contains("critic"), "{said}");
}

#[test]
fn verify_reruns_a_two_optimizer_run_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let artifacts = dir.path().to_str().unwrap();
    let out = one_epoch(artifacts, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run_dir = dir.path().join("ring_gan/run-1");
    let out = run(&["--verify", run_dir.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    // 32 steps (each with both losses), 4 epoch values.
    assert!(
        said.contains("32 steps and 4 epoch values, bit-identical"),
        "{said}"
    );
    let out = run(&[
        "--verify",
        run_dir.to_str().unwrap(),
        "--quiet",
        "--set",
        "optimizers.generator.lr=0.004",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let said = stderr(&out);
    assert!(said.contains("not reproduced"), "{said}");
}

#[test]
fn a_sweep_of_one_optimizer_s_rate_trains_a_trial_at_each() {
    let dir = tempfile::tempdir().unwrap();
    let artifacts = dir.path().to_str().unwrap();
    let out = one_epoch(
        artifacts,
        &[
            "--sweep",
            "optimizers.generator.lr=0.001,0.004",
            "--rank-by",
            "valid.generator.loss",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    // Each trial is a run of the experiment.
    let mut rates = Vec::new();
    for run in 1..=2 {
        let config = config(dir.path(), run);
        let optimizers = &config["hyperparameters"]["optimizers"];
        assert_eq!(optimizers["discriminator"]["lr"], 0.002);
        rates.push(optimizers["generator"]["lr"].as_f64().unwrap());
    }
    rates.sort_by(f64::total_cmp);
    assert_eq!(rates, [0.001, 0.004]);
}

#[test]
fn a_sweep_of_several_optimizers_asks_which_metric_ranks_it() {
    // Without `best(..)` there is no `valid.loss` to rank a GAN's trials by, and its first
    // validation loss is one player's: the sweep asks rather than guesses.
    let dir = tempfile::tempdir().unwrap();
    let artifacts = dir.path().to_str().unwrap();
    let out = one_epoch(
        artifacts,
        &["--sweep", "optimizers.generator.lr=0.001,0.004"],
    );
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains(
            "has neither: name the metric to rank by, e.g. `--rank-by valid.discriminator.loss`"
        ) && said.contains("valid.generator.loss"),
        "{said}"
    );
    assert!(
        !dir.path().join("ring_gan/run-1").exists(),
        "nothing trained"
    );
}

#[test]
fn the_command_line_offers_only_the_rates_it_takes() {
    // Each optimizer has its own rate: `--help` does not list `--lr`, and `--lr` or
    // `--set lr=` name the rates there are (not "did you mean `lora`?").
    let help = String::from_utf8_lossy(&run(&["--help"]).stdout).into_owned();
    assert!(
        help.contains("--epochs") && !help.contains("--lr"),
        "{help}"
    );
    for args in [&["--lr", "0.1"][..], &["--set", "lr=0.1"]] {
        let out = run(args);
        let said = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{said}");
        assert!(
            said.contains("with several optimizers each has its own rate: set `optimizers.discriminator.lr` or `optimizers.generator.lr`")
                && !said.contains("lora"),
            "{said}"
        );
    }
}
