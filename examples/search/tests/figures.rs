//! The book's figures of the search page (`docs/src/guide/search.md`), measured on the plane
//! fit: 30-trial studies on five seeds. TPE against random search, each best against the
//! optimum (the best of 60 trials spread over the rate's best region); pruning (median rule and
//! ASHA) against the same random study unpruned: its share of the epochs, and whether it keeps
//! the best trial. Prints the tables; `.ci/run` runs it (`--features figures`).
#![cfg(feature = "figures")]

use std::process::Command;

use folder::{records, study_dir};
use serde_json::Value;

mod folder;

const BIN: &str = env!("CARGO_BIN_EXE_search");
const SEEDS: u64 = 5;

/// What a finished study found.
#[derive(Debug)]
struct Found {
    /// The best complete trial and its best validation loss.
    best: (u64, f64),
    /// Epochs trained by all trials.
    epochs: usize,
}

fn study(flags: &[String]) -> Found {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(flags)
        .arg("--quiet")
        .arg("--artifacts")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{flags:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let records = records(&study_dir(tmp.path()));
    let best_of = |r: &Value| -> f64 {
        r["curve"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p[1].as_f64())
            .fold(f64::INFINITY, f64::min)
    };
    let best = records
        .iter()
        .filter(|r| r["state"] == "complete")
        .map(|r| (r["trial"].as_u64().unwrap(), best_of(r)))
        .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
        .unwrap();
    let epochs = records
        .iter()
        .map(|r| r["curve"].as_array().unwrap().len())
        .sum();
    Found { best, epochs }
}

/// Runs `flags` of each seed, two studies at a time (each is a process, one trial at a time).
fn per_seed(flags: impl Fn(u64) -> Vec<String> + Sync) -> Vec<Found> {
    let flags = &flags;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..SEEDS)
            .collect::<Vec<_>>()
            .chunks(2)
            .map(|pair| {
                let pair = pair.to_vec();
                scope.spawn(move || {
                    pair.into_iter()
                        .map(|seed| study(&flags(seed)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

fn args(text: &str, seed: u64) -> Vec<String> {
    let mut args: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
    args.extend(["--search-seed".to_owned(), seed.to_string()]);
    args
}

#[test]
fn tpe_finds_the_optimum_and_pruning_keeps_the_best_trial_for_less() {
    let optimum = study(&args(
        "--search lr=uniform(0.38,0.46) --sampler random --trials 60 --prune none",
        0,
    ))
    .best
    .1;
    let tpe = per_seed(|seed| args("--sampler tpe --prune none", seed));
    let random = per_seed(|seed| args("--sampler random --prune none", seed));
    println!("optimum of valid.loss (60 trials over lr 0.38 to 0.46): {optimum}\n");
    println!(
        "| seed | TPE best | random best | TPE within 10 % | TPE better |\n|---|---|---|---|---|"
    );
    let (mut within, mut better) = (0, 0);
    for seed in 0..SEEDS as usize {
        let (t, r) = (tpe[seed].best.1, random[seed].best.1);
        let close = t <= optimum * 1.10;
        within += usize::from(close);
        better += usize::from(t < r);
        println!(
            "| {seed} | {t:.6} | {r:.6} | {} | {} |",
            yes(close),
            yes(t < r)
        );
    }
    println!(
        "\nTPE within 10 % of the optimum on {within} of {SEEDS} seeds; better than random on {better}\n"
    );
    assert!(
        within >= 4,
        "TPE within 10 % of the optimum on {within} of {SEEDS} seeds"
    );
    assert!(
        better >= 4,
        "TPE better than random on {better} of {SEEDS} seeds"
    );

    println!(
        "| seed | pruner | epochs of unpruned | share | best trial (unpruned) | same best |\n|---|---|---|---|---|---|"
    );
    let mut shares = Vec::new();
    for pruner in ["median", "asha"] {
        let pruned = per_seed(|seed| args(&format!("--sampler random --prune {pruner}"), seed));
        let mut same = 0;
        let mut total = 0.0;
        for seed in 0..SEEDS as usize {
            let share = pruned[seed].epochs as f64 / random[seed].epochs as f64;
            let kept = pruned[seed].best.0 == random[seed].best.0;
            same += usize::from(kept);
            total += share;
            println!(
                "| {seed} | {pruner} | {} of {} | {:.0} % | {} ({}) | {} |",
                pruned[seed].epochs,
                random[seed].epochs,
                100.0 * share,
                pruned[seed].best.0,
                random[seed].best.0,
                yes(kept)
            );
        }
        let mean = total / SEEDS as f64;
        println!(
            "\n{pruner}: {:.0} % of the epochs on average, the same best trial on {same} of {SEEDS} seeds\n",
            100.0 * mean
        );
        // A pruned study's best trial must be the unpruned one's: pruning never stops the
        // best trial of these studies.
        assert_eq!(same, SEEDS as usize, "{pruner} pruned the best trial");
        shares.push((pruner, mean));
    }
    let asha = shares.iter().find(|(p, _)| *p == "asha").unwrap().1;
    assert!(
        asha <= 0.5,
        "ASHA trained {:.0} % of the epochs",
        100.0 * asha
    );
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}
