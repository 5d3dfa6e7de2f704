//! The example's command line: training with its own metrics, hyperparameters, callback and
//! test split, then `--test-only`, `--predict` and `--export` on the saved run; hyperparameters
//! set with `--set`, swept with `--sweep`, and refused when a resume changes them.

use std::process::Command;

use burn::data::dataset::Dataset;

fn run(artifacts: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_custom_metric"))
        .arg("--artifacts")
        .arg(artifacts)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn trains_stops_tests_then_re_tests_predicts_and_exports_the_saved_run() {
    let dir = tempfile::tempdir().unwrap();
    let trained = run(dir.path(), &[]);
    let stderr = String::from_utf8_lossy(&trained.stderr);
    assert!(trained.status.success(), "{stderr}");
    assert!(
        stderr.contains("stopped by a callback: valid.accuracy"),
        "{stderr}"
    );
    let test_line = stderr
        .lines()
        .find(|l| l.starts_with("test (checkpoint of epoch "))
        .unwrap_or_else(|| panic!("no test line in {stderr}"))
        .to_owned();
    assert!(test_line.contains("test.confidence "), "{test_line}");
    let run_dir = dir.path().join("extended/run-1");
    let stdout = String::from_utf8_lossy(&trained.stdout);
    assert!(
        stdout.contains(&format!("of {}", run_dir.display())),
        "the code after training read the run just trained: {stdout}"
    );
    let csv = std::fs::read_to_string(run_dir.join("metrics.csv")).unwrap();
    assert!(csv.contains(",valid,confidence,"), "{csv}");
    // The recall from accumulated counts is Burn's macro-averaged recall, epoch by epoch (Burn
    // counts in f32, hence the tolerance).
    let valid = |metric: &str| -> Vec<f64> {
        csv.lines()
            .filter(|l| l.contains(&format!(",valid,{metric},")))
            .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
            .collect()
    };
    let (ours, burns) = (valid("macro_recall"), valid("recall"));
    assert_eq!(ours.len(), 5, "{csv}");
    assert_eq!(ours.len(), burns.len());
    for (ours, burns) in ours.iter().zip(&burns) {
        assert!((ours - burns).abs() < 1e-5, "{ours} vs Burn's {burns}");
    }
    assert_eq!(csv.matches(",test,").count(), 3, "{csv}");
    // The test split is part of the record: its data fingerprinted, its metrics listed.
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("config.json")).unwrap()).unwrap();
    let test_data = &config["provenance"]["data"]["test"];
    assert!(
        test_data["items"].as_u64().is_some_and(|n| n > 0),
        "{config}"
    );
    assert!(test_data["hash"].is_string(), "{config}");
    assert_eq!(
        config["metrics"]["test"].as_array().map(Vec::len),
        Some(3),
        "{config}"
    );
    let state = std::fs::read_dir(run_dir.join("checkpoint"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .unwrap();
    let state = std::fs::read_to_string(state).unwrap();
    assert!(
        state.contains("\"callbacks\""),
        "the step count is saved: {state}"
    );

    let again = run(dir.path(), &["--test-only"]);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&again.stdout).trim(), test_line);

    let predicted = run(dir.path(), &["--predict"]);
    assert!(predicted.status.success());
    let rows = std::fs::read_to_string(run_dir.join("predictions.csv")).unwrap();
    assert_eq!(
        rows.lines().next(),
        Some("index,predicted,target,p_0,p_1,p_2")
    );
    assert_eq!(rows.lines().count(), 37, "a header and the 36 test samples");
    // Each row joins with its input on `index`, the item's index in the test split.
    let test_split = seed::samples(120..156);
    for line in rows.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        let item = test_split.get(cells[0].parse().unwrap()).unwrap();
        assert_eq!(cells[2], item.class.to_string(), "{line}");
    }

    let file = dir.path().join("model.safetensors");
    let exported = run(dir.path(), &["--export", file.to_str().unwrap()]);
    assert!(exported.status.success());
    let bytes = std::fs::read(&file).unwrap();
    let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header = std::str::from_utf8(&bytes[8..8 + header_len]).unwrap();
    assert!(header.contains("\"model.fc1.weight\""), "{header}");

    // A second run: the code after training reads run-2, the one it trained.
    let second = run(dir.path(), &[]);
    let expected = format!("of {}", dir.path().join("extended/run-2").display());
    assert!(String::from_utf8_lossy(&second.stdout).contains(&expected));
    // A fast dev run writes nothing, so nothing is read after it.
    let smoke = run(dir.path(), &["--fast-dev-run"]);
    assert!(smoke.status.success());
    assert!(!String::from_utf8_lossy(&smoke.stdout).contains("best checkpoint"));
    // Its test line names the model it measured, not a checkpoint it never wrote.
    let said = String::from_utf8_lossy(&smoke.stderr);
    assert!(said.contains("test (model of epoch 1)"), "{said}");
    assert!(!said.contains("checkpoint of"), "{said}");

    let both = run(dir.path(), &["--test-only", "--predict"]);
    assert_eq!(both.status.code(), Some(2), "the flags exclude each other");
}

/// The `"shape":[..]` of `tensor` in a safetensors file's header.
fn shape_in(file: &std::path::Path, tensor: &str) -> String {
    let bytes = std::fs::read(file).unwrap();
    let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + header_len]).unwrap();
    header[tensor]["shape"].to_string()
}

fn config_of(run_dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(run_dir.join("config.json")).unwrap()).unwrap()
}

#[test]
fn hyperparameters_reach_the_model_and_the_callback_are_swept_and_guard_a_resume() {
    let dir = tempfile::tempdir().unwrap();
    let trained = run(dir.path(), &["--set", "hidden=32", "--set", "stop_at=60"]);
    let stderr = String::from_utf8_lossy(&trained.stderr);
    assert!(trained.status.success(), "{stderr}");
    // The callback's target is the hyperparameter (its message names it).
    assert!(
        stderr.contains("reached 60 after 6 steps"),
        "the callback read `stop_at`: {stderr}"
    );
    let run_dir = dir.path().join("extended/run-1");
    let hyper = &config_of(&run_dir)["hyperparameters"];
    assert_eq!(
        (hyper["hidden"].as_u64(), hyper["stop_at"].as_f64()),
        (Some(32), Some(60.0))
    );
    // TensorBoard's HPARAMS tab lists them (the session-start record names every key).
    let events = std::fs::read(run_dir.join("events.out.tfevents.run")).unwrap();
    for key in [&b"hidden"[..], b"stop_at"] {
        assert!(
            events.windows(key.len()).any(|w| w == key),
            "{key:?} in the event file"
        );
    }

    // `--verify` reruns it from its record, and names a hyperparameter that differs.
    let verified = run(dir.path(), &["--verify", run_dir.to_str().unwrap()]);
    assert!(
        verified.status.success(),
        "{}",
        String::from_utf8_lossy(&verified.stderr)
    );
    let changed = run(
        dir.path(),
        &["--verify", run_dir.to_str().unwrap(), "--set", "hidden=16"],
    );
    let said = String::from_utf8_lossy(&changed.stderr);
    assert_eq!(changed.status.code(), Some(1), "{said}");
    assert!(
        said.contains("setting `hyperparameters.hidden`: saved 32, now 16"),
        "{said}"
    );

    // The saved run is rebuilt with its own width, without repeating `--set`.
    let file = dir.path().join("wide.safetensors");
    let exported = run(dir.path(), &["--export", file.to_str().unwrap()]);
    assert!(
        exported.status.success(),
        "{}",
        String::from_utf8_lossy(&exported.stderr)
    );
    assert_eq!(shape_in(&file, "model.fc1.weight"), "[4,32]");
    assert!(run(dir.path(), &["--predict"]).status.success());
    // Those weights do not fit the default width: the error names the first parameter.
    let into_narrow = run(dir.path(), &["--init-from", file.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&into_narrow.stderr);
    assert!(!into_narrow.status.success());
    assert!(
        said.contains("`model.fc1.weight` has shape [4, 32] in the file, and [4, 16] in the model (2 more parameters differ)"),
        "{said}"
    );

    // A resume with another width would mix two experiments: refused, naming the key.
    let resumed = run(
        dir.path(),
        &[
            "--resume",
            "latest",
            "--set",
            "hidden=8",
            "--set",
            "stop_at=60",
        ],
    );
    let said = String::from_utf8_lossy(&resumed.stderr);
    assert!(!resumed.status.success(), "{said}");
    assert!(
        said.contains("`hyperparameters.hidden`: saved 32, now 8"),
        "{said}"
    );
    assert!(!said.contains("stop_at"), "{said}");

    // A misspelt key is named with the one meant, before any trial trains.
    let misspelt = run(dir.path(), &["--sweep", "hiden=8,24"]);
    let said = String::from_utf8_lossy(&misspelt.stderr);
    assert_eq!(misspelt.status.code(), Some(2), "{said}");
    assert!(
        said.contains("unknown config key `hiden`; did you mean `hidden`?"),
        "{said}"
    );

    // A sweep over the width: one run per value, each built with its own.
    let swept = run(dir.path(), &["--sweep", "hidden=8,24", "--epochs", "1"]);
    let said = String::from_utf8_lossy(&swept.stderr);
    assert!(swept.status.success(), "{said}");
    let mut widths: Vec<u64> = (2..=3)
        .map(|n| {
            let run_dir = dir.path().join(format!("extended/run-{n}"));
            config_of(&run_dir)["hyperparameters"]["hidden"]
                .as_u64()
                .unwrap()
        })
        .collect();
    widths.sort();
    assert_eq!(widths, [8, 24]);
    for n in 2..=3 {
        let file = dir.path().join(format!("run-{n}.safetensors"));
        let run_id = format!("{n}");
        let exported = run(
            dir.path(),
            &["--run", &run_id, "--export", file.to_str().unwrap()],
        );
        assert!(
            exported.status.success(),
            "{}",
            String::from_utf8_lossy(&exported.stderr)
        );
        let hidden =
            config_of(&dir.path().join(format!("extended/run-{n}")))["hyperparameters"]["hidden"]
                .clone();
        assert_eq!(shape_in(&file, "model.fc1.weight"), format!("[4,{hidden}]"));
    }
}
