//! The corpus: experiments written the way users write them (`corpus/*.rs`: loaders with `?`,
//! batches of several fields, derived and hand-written types, hyperparameters, callbacks,
//! metrics of their own, `cli()`/`cli_then` in `main`), each mutated by single mistakes from the
//! one table below, and built by cargo as a user builds them. For every mistake caught at compile
//! time: cargo counts exactly one error (its JSON output, which editors list, holds one), no
//! warning, the first error points into the mistaken text, and no line names the runtime's
//! plumbing. `fail/` keeps reviewed `.stderr` files for a representative subset.
//!
//! `CORPUS=<substring>[,<substring>..]` checks only the cases whose name contains one;
//! `CORPUS_SHOW=1` prints every case's errors. The build of every case needs the feature
//! `corpus` (`.ci/run`); without it only the reviewed cases are compared with the generated
//! ones, and the builder's code is unused.
#![cfg_attr(not(feature = "corpus"), allow(dead_code, unused_imports))]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod cargo_check;

use cargo_check::{INTERNAL, Report, check, points_into};

/// One mistake, as an edit of an experiment's `training!` block.
enum Edit {
    /// The first `from` inside the value of `key` (its `key:` line included) becomes `to`;
    /// a `*` in `from` matches the shortest run up to the text after it, and a `*` in `to`
    /// puts that run back.
    Replace {
        key: &'static str,
        from: &'static str,
        to: &'static str,
    },
    /// The key and its value are gone.
    Remove(&'static str),
    /// A `key: value,` line for a key the experiment does not have.
    Add(&'static str),
    /// The key is given twice.
    Duplicate(&'static str),
    /// The first key is gone, where the second is there.
    RemoveBeside(&'static str, &'static str),
    /// The first `from` outside `training!` (the user's own types) becomes `to`.
    Source {
        from: &'static str,
        to: &'static str,
    },
    /// `Source`, where the error belongs at the first `used` inside `training!`: a function of
    /// the user's whose signature is wrong only for how the experiment uses it.
    SourceUsed {
        from: &'static str,
        to: &'static str,
        used: &'static str,
    },
    /// The `training!` block moved into the body of `main`: not a mistake, so the case must
    /// build without a diagnostic.
    InsideMain,
}

use Edit::*;

/// The mistakes: an id, the edit, and whether it is caught at compile time (else at start-up).
const MUTATIONS: &[(&str, Edit, bool)] = &[
    (
        "name_misspelt",
        Replace {
            key: "name",
            from: "name:",
            to: "nmae:",
        },
        true,
    ),
    ("name_missing", Remove("name"), true),
    (
        "model_misspelt",
        Replace {
            key: "model",
            from: "model:",
            to: "modle:",
        },
        true,
    ),
    (
        "model_without_initialiser",
        Replace {
            key: "model",
            from: " = *(",
            to: " *(",
        },
        true,
    ),
    (
        "model_argument_extra",
        Replace {
            key: "model",
            from: "device)",
            to: "device, 3)",
        },
        true,
    ),
    (
        "model_constructor_misspelt",
        Replace {
            key: "model",
            from: "::new(",
            to: "::neww(",
        },
        true,
    ),
    (
        "step_misspelt",
        Replace {
            key: "step",
            from: "step:",
            to: "stpe:",
        },
        true,
    ),
    (
        "step_batch_untyped",
        Replace {
            key: "step",
            from: "batch: *|",
            to: "batch|",
        },
        true,
    ),
    (
        "step_output_untyped",
        Replace {
            key: "step",
            from: "| -> * {",
            to: "| {",
        },
        true,
    ),
    (
        "step_returns_the_loss_alone",
        Replace {
            key: "step",
            from: "-> *,",
            to: "-> burn::tensor::Tensor<1> { let _ = (model, batch); burn::tensor::Tensor::zeros([1], &burn::tensor::Device::flex()) },",
        },
        true,
    ),
    (
        "step_question_mark",
        Replace {
            key: "step",
            from: "(batch) }",
            to: "(batch)? }",
        },
        true,
    ),
    (
        "step_method_misspelt",
        Replace {
            key: "step",
            from: "{ model.",
            to: "{ model.x_",
        },
        true,
    ),
    (
        "loader_misspelt",
        Replace {
            key: "loader",
            from: "loader:",
            to: "loaders:",
        },
        true,
    ),
    (
        "batch_size_zero",
        Replace {
            key: "loader",
            from: "batch_size: *,",
            to: "batch_size: 0,",
        },
        true,
    ),
    (
        "loader_key_misspelt",
        Replace {
            key: "loader",
            from: "batch_size:",
            to: "batchsize:",
        },
        true,
    ),
    (
        "workers_negative",
        Replace {
            key: "loader",
            from: "workers: *,",
            to: "workers: -1,",
        },
        true,
    ),
    (
        "batcher_of_another_batch",
        Replace {
            key: "loader",
            from: "batcher: *,",
            to: "batcher: String::new(),",
        },
        true,
    ),
    (
        "dataset_of_other_items",
        Replace {
            key: "loader",
            from: "valid: *,",
            to: "valid: burn::data::dataset::InMemDataset::new(vec![1_u8]),",
        },
        true,
    ),
    (
        "valid_split_missing",
        Replace {
            key: "loader",
            from: "valid: *,",
            to: "",
        },
        true,
    ),
    (
        "optimizer_misspelt",
        Replace {
            key: "optimizer",
            from: "optimizer:",
            to: "optimiser:",
        },
        true,
    ),
    (
        "optimizer_unknown",
        Replace {
            key: "optimizer",
            from: "optimizer: *(",
            to: "optimizer: adamx(",
        },
        true,
    ),
    (
        "optimizer_argument_unknown",
        Replace {
            key: "optimizer",
            from: "(lr",
            to: "(learning_rate",
        },
        true,
    ),
    (
        "optimizer_lr_negative",
        Replace {
            key: "optimizer",
            from: "lr = ",
            to: "lr = -",
        },
        true,
    ),
    (
        "epochs_zero",
        Replace {
            key: "epochs",
            from: "epochs: *,",
            to: "epochs: 0,",
        },
        true,
    ),
    (
        "epochs_fractional",
        Replace {
            key: "epochs",
            from: "epochs: *,",
            to: "epochs: 2.5,",
        },
        true,
    ),
    (
        "epochs_misspelt",
        Replace {
            key: "epochs",
            from: "epochs:",
            to: "epoch:",
        },
        true,
    ),
    ("epochs_missing", Remove("epochs"), true),
    ("epochs_twice", Duplicate("epochs"), true),
    (
        "metric_misspelt",
        Replace {
            key: "metrics",
            from: "valid.loss",
            to: "valid.los",
        },
        true,
    ),
    (
        "metric_split_misspelt",
        Replace {
            key: "metrics",
            from: "valid.loss",
            to: "vaild.loss",
        },
        true,
    ),
    (
        "metric_twice",
        Replace {
            key: "metrics",
            from: "train.loss",
            to: "train.loss, train.loss",
        },
        true,
    ),
    (
        "metric_the_output_cannot_feed",
        Replace {
            key: "metrics",
            from: "train.loss",
            to: "train.loss, valid.hamming",
        },
        true,
    ),
    (
        "metric_literal",
        Replace {
            key: "metrics",
            from: "train.loss",
            to: "train.loss, valid.metric(x = 3)",
        },
        true,
    ),
    (
        "best_of_unrecorded_metric",
        Replace {
            key: "checkpoint",
            from: "checkpoint: *,",
            to: "checkpoint: best(valid.cer),",
        },
        true,
    ),
    (
        "keep_last_zero",
        Replace {
            key: "checkpoint",
            from: "checkpoint: *,",
            to: "checkpoint: keep_last(0),",
        },
        true,
    ),
    (
        "policies_joined_with_and",
        Replace {
            key: "checkpoint",
            from: " | ",
            to: " & ",
        },
        true,
    ),
    ("callbacks_literal", Add("callbacks: [42],"), true),
    (
        "callback_literal",
        Replace {
            key: "callbacks",
            from: "callbacks: [*]",
            to: "callbacks: [42]",
        },
        true,
    ),
    (
        "early_stopping_unrecorded",
        Add("early_stopping: patience(3, valid.cer),"),
        true,
    ),
    (
        "plateau_positional",
        Add("lr_schedule: plateau(valid.loss, 0.5, 2),"),
        true,
    ),
    (
        "schedule_misspelt",
        Replace {
            key: "lr_schedule",
            from: "lr_schedule: *(",
            to: "lr_schedule: cosin(",
        },
        true,
    ),
    ("grad_clip_unknown", Add("grad_clip: clip(1.0),"), true),
    ("seed_negative", Add("seed: -1,"), true),
    ("device_unknown", Add("device: \"tpu\","), true),
    (
        "sweep_unknown_key",
        Add("sweep: { learning_rate: [1e-3] },"),
        true,
    ),
    (
        "sweep_value_of_another_type",
        Add("sweep: { batch_size: [0.5] },"),
        true,
    ),
    (
        "hparam_named_like_a_key",
        Add("hparams: { epochs: usize = 3 },"),
        true,
    ),
    (
        "hparam_default_of_another_type",
        Replace {
            key: "hparams",
            from: "= 16,",
            to: "= 0.5,",
        },
        true,
    ),
    (
        "hparam_misspelt_where_read",
        Replace {
            key: "model",
            from: "config.hidden",
            to: "config.hiden",
        },
        true,
    ),
    (
        "config_field_undeclared",
        Replace {
            key: "model",
            from: "(device)",
            to: "(device, config.width)",
        },
        true,
    ),
    ("unknown_key", Add("epoch_count: 3,"), true),
    (
        "augment_without_rng",
        Replace {
            key: "loader",
            from: "|mut signal, rng|",
            to: "|mut signal|",
        },
        true,
    ),
    (
        "resume_without_checkpoints",
        RemoveBeside("checkpoint", "resume"),
        true,
    ),
    (
        "init_from_unquoted",
        Replace {
            key: "init_from",
            from: "\"*\"",
            to: "pretrained",
        },
        true,
    ),
    // The user's derived batch with a field the derive cannot batch: its error alone, not one
    // more per use of the field in the step.
    (
        "batch_float_field_padded",
        Source {
            from: "    pub age: f32,",
            to: "    #[pad(0)]\n    pub age: f32,",
        },
        true,
    ),
    (
        "batch_array_field_padded",
        Source {
            from: "    pub measures: [f32; 4],",
            to: "    #[pad(0)]\n    pub measures: [f32; 4],",
        },
        true,
    ),
    (
        "output_field_without_role",
        Source {
            from: "    #[logits]\n",
            to: "",
        },
        true,
    ),
    // Module paths are only known once the model is built: a start-up error, listing them.
    (
        "freeze_path_misspelt",
        Replace {
            key: "freeze",
            from: "[encoder]",
            to: "[encodr]",
        },
        false,
    ),
    // A key given a value of the wrong form.
    (
        "name_a_string",
        Replace {
            key: "name",
            from: "name: *,",
            to: "name: \"*\",",
        },
        true,
    ),
    (
        "name_a_path",
        Replace {
            key: "name",
            from: "name: ",
            to: "name: crate::",
        },
        true,
    ),
    (
        "optimizer_a_number",
        Replace {
            key: "optimizer",
            from: "optimizer: *,",
            to: "optimizer: 0.01,",
        },
        true,
    ),
    (
        "optimizer_lr_positional",
        Replace {
            key: "optimizer",
            from: "(lr = ",
            to: "(",
        },
        true,
    ),
    (
        "schedule_a_number",
        Replace {
            key: "lr_schedule",
            from: "lr_schedule: *,",
            to: "lr_schedule: 0.5,",
        },
        true,
    ),
    (
        "schedule_argument_positional",
        Replace {
            key: "lr_schedule",
            from: "(min = ",
            to: "(",
        },
        true,
    ),
    (
        "epochs_a_string",
        Replace {
            key: "epochs",
            from: "epochs: *,",
            to: "epochs: \"*\",",
        },
        true,
    ),
    (
        "batch_size_a_call",
        Replace {
            key: "loader",
            from: "batch_size: *,",
            to: "batch_size: size(*),",
        },
        true,
    ),
    (
        "checkpoint_a_string",
        Replace {
            key: "checkpoint",
            from: "checkpoint: *,",
            to: "checkpoint: \"*\",",
        },
        true,
    ),
    (
        "metric_a_string",
        Replace {
            key: "metrics",
            from: "[train.loss",
            to: "[\"train.loss\"",
        },
        true,
    ),
    (
        "metrics_not_a_list",
        Replace {
            key: "metrics",
            from: "metrics: [*],",
            to: "metrics: *,",
        },
        true,
    ),
    (
        "device_unquoted",
        Replace {
            key: "device",
            from: "\"flex\"",
            to: "flex",
        },
        true,
    ),
    // One malformed entry of `hparams` among good ones.
    (
        "hparam_type_missing",
        Replace {
            key: "hparams",
            from: ": usize = ",
            to: " = ",
        },
        true,
    ),
    (
        "hparam_default_missing",
        Replace {
            key: "hparams",
            from: ": f64 = *,",
            to: ": f64,",
        },
        true,
    ),
    // A `#[derive(StepOutput)]` role on a field of the wrong tensor type.
    (
        "output_loss_role_on_the_predictions",
        Source {
            from: "    #[loss]\n    pub loss: Tensor<1>,\n    pub predicted: Tensor<2>,",
            to: "    pub loss: Tensor<1>,\n    #[loss]\n    pub predicted: Tensor<2>,",
        },
        true,
    ),
    (
        "output_logits_and_targets_swapped",
        Source {
            from: "    #[logits]\n    pub scores: Tensor<2>,\n    #[targets]\n    pub kinds: Tensor<1, Int>,",
            to: "    #[targets]\n    pub scores: Tensor<2>,\n    #[logits]\n    pub kinds: Tensor<1, Int>,",
        },
        true,
    ),
    // A metric function of the wrong signature.
    (
        "metric_function_by_value",
        SourceUsed {
            from: "(output: &",
            to: "(output: ",
            used: "Mean::",
        },
        true,
    ),
    // A model expression whose type cannot be inferred.
    (
        "model_built_by_collect",
        Replace {
            key: "model",
            from: " = *,",
            to: " = std::iter::empty().collect(),",
        },
        true,
    ),
    // Not a mistake: `training!` written inside `main` compiles like at module level.
    ("inside_main", InsideMain, false),
];

/// An experiment of the corpus.
struct Shape {
    name: String,
    text: String,
}

/// The byte range of each top-level key's `key: value,` inside `training! { .. }`: from its
/// first line (4 spaces of indentation) to the next key or the closing brace.
fn keys(text: &str) -> (BTreeMap<String, (usize, usize)>, usize) {
    let start = text.find("training! {").expect("a training! block");
    let end = start
        + text[start..]
            .find("\n}\n")
            .expect("a closing brace at column 0")
        + 1;
    let mut starts = Vec::new();
    let mut at = start;
    for line in text[start..end].split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("    ")
            && !rest.starts_with(' ')
            && !rest.starts_with("///")
            && let Some(colon) = rest.find(':')
            && rest[..colon]
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '_')
        {
            starts.push((rest[..colon].to_owned(), at));
        }
        at += line.len();
    }
    let mut ranges = BTreeMap::new();
    for (i, (key, from)) in starts.iter().enumerate() {
        let to = starts.get(i + 1).map_or(end, |(_, next)| *next);
        ranges.insert(key.clone(), (*from, to));
    }
    (ranges, end)
}

/// `from` found in `text`: its range and what its `*` matched (outside brackets: in
/// `valid: flowers(100, 125),` the `*` of `valid: *,` stops at the last comma).
fn find(text: &str, from: &str) -> Option<(usize, usize, String)> {
    match from.split_once('*') {
        None => text.find(from).map(|i| (i, i + from.len(), String::new())),
        Some((before, after)) => {
            let i = text.find(before)?;
            let rest = &text[i + before.len()..];
            let mut depth = 0_i32;
            let j = rest.char_indices().find_map(|(j, c)| {
                if depth == 0 && rest[j..].starts_with(after) {
                    return Some(j);
                }
                match c {
                    '(' | '[' | '{' => depth += 1,
                    ')' | ']' | '}' => depth -= 1,
                    _ => {}
                }
                None
            })?;
            let star = rest[..j].to_owned();
            Some((i, i + before.len() + j + after.len(), star))
        }
    }
}

/// The mutated program and the byte range of the mistake in it; `None` where the edit does not
/// apply to this experiment.
fn apply(shape: &Shape, edit: &Edit) -> Option<(String, (usize, usize))> {
    let text = &shape.text;
    let (keys, end) = keys(text);
    match edit {
        Replace { key, from, to } => {
            let &(start, stop) = keys.get(*key)?;
            let (i, j, star) = find(&text[start..stop], from)?;
            let to = to.replace('*', &star);
            let (i, j) = (start + i, start + j);
            let mutated = format!("{}{to}{}", &text[..i], &text[j..]);
            // Text removed from a value: the mistake is that value's.
            let mistake = if to.is_empty() {
                (start, stop - (j - i))
            } else {
                (i, i + to.len())
            };
            Some((mutated, mistake))
        }
        RemoveBeside(key, beside) if !keys.contains_key(*beside) => None,
        Remove(key) | RemoveBeside(key, _) => {
            let &(start, stop) = keys.get(*key)?;
            let mutated = format!("{}{}", &text[..start], &text[stop..]);
            let invocation = text.find("training! {").unwrap();
            Some((mutated, (invocation, end - (stop - start))))
        }
        Add(line) => {
            let key = line.split(':').next().unwrap();
            if keys.contains_key(key) {
                return None;
            }
            let line = format!("    {line}\n");
            let mutated = format!("{}{line}{}", &text[..end], &text[end..]);
            Some((mutated, (end + 4, end + line.len() - 1)))
        }
        Duplicate(key) => {
            let &(start, stop) = keys.get(*key)?;
            let copy = &text[start..stop];
            let mutated = format!("{}{copy}{}", &text[..stop], &text[stop..]);
            Some((mutated, (stop, stop + copy.len())))
        }
        InsideMain => {
            let start = text.find("training! {")?;
            let block = &text[start..end + 1];
            let rest = format!("{}{}", &text[..start], &text[end + 1..]);
            let head = "fn main() -> std::process::ExitCode {\n";
            let at = rest.find(head)? + head.len();
            let moved = format!("    {}\n", block.trim_end().replace('\n', "\n    "));
            let mutated = format!("{}{moved}{}", &rest[..at], &rest[at..]);
            Some((mutated, (at, at + moved.len())))
        }
        SourceUsed { from, to, used } => {
            let i = text.find(from)?;
            let mutated = format!("{}{to}{}", &text[..i], &text[i + from.len()..]);
            let start = mutated.find("training! {")?;
            let at = start + mutated[start..].find(used)?;
            let range = (at, at + used.len());
            Some((mutated, range))
        }
        Source { from, to } => {
            let i = text.find(from)?;
            let mutated = format!("{}{to}{}", &text[..i], &text[i + from.len()..]);
            // A line removed from an item: the mistake is the rest of that item.
            let end = if to.is_empty() {
                i + mutated[i..].find("\n}\n").unwrap_or(0)
            } else {
                i + to.len()
            };
            Some((mutated, (i, end)))
        }
    }
}

struct Case {
    name: String,
    file: PathBuf,
    text: String,
    mistake: Option<(usize, usize)>,
    caught: bool,
}

fn shapes() -> Vec<Shape> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut shapes: Vec<Shape> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .map(|p| Shape {
            name: p.file_stem().unwrap().to_str().unwrap().to_owned(),
            text: std::fs::read_to_string(&p).unwrap(),
        })
        .collect();
    shapes.sort_by(|a, b| a.name.cmp(&b.name));
    shapes
}

/// Every case: each experiment as written (no diagnostic at all), then with each mistake.
fn cases(dir: &Path, shapes: Vec<Shape>) -> Vec<Case> {
    let only = std::env::var("CORPUS").unwrap_or_default();
    let mut cases = Vec::new();
    for shape in shapes {
        let mut add = |id: &str, text: String, mistake, caught| {
            let name = format!("{}__{id}", shape.name);
            if only.split(',').any(|part| name.contains(part)) {
                cases.push(Case {
                    file: dir.join(format!("{name}.rs")),
                    name,
                    text,
                    mistake,
                    caught,
                });
            }
        };
        add("as_written", shape.text.clone(), None, false);
        for (id, edit, caught) in MUTATIONS {
            if let Some((text, range)) = apply(&shape, edit) {
                // Not a mistake: it must build without a diagnostic, as written.
                let mistake = (!matches!(edit, InsideMain)).then_some(range);
                add(id, text, mistake, *caught);
            }
        }
    }
    cases
}

/// A crate of one binary per case, built with the flags and target directory of trybuild's, so
/// that Burn and the runtime, checked once for `fail/`, are not checked again.
fn write_project(dir: &Path, cases: &[Case]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("cases")).unwrap();
    let workspace = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let burn = workspace
        .lines()
        .find(|l| l.starts_with("burn = "))
        .expect("the workspace's burn dependency");
    let mut manifest = format!(
        "[package]\nname = \"ui-tests-corpus\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         [workspace]\n\n[dependencies]\n{burn}\nburn-experiment = {{ path = {:?} }}\n",
        root.join("dsl-runtime")
    );
    for case in cases {
        std::fs::write(&case.file, &case.text).unwrap();
        manifest.push_str(&format!(
            "\n[[bin]]\nname = \"{}\"\npath = {:?}\n",
            case.name, case.file
        ));
    }
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
}

/// `fail/corpus/` holds a few cases with their reviewed `.stderr`, copied from the corpus: each
/// must still be what the corpus generates.
#[test]
fn the_reviewed_corpus_cases_are_the_generated_ones() {
    let reviewed = Path::new(env!("CARGO_MANIFEST_DIR")).join("fail/corpus");
    let generated = cases(Path::new("cases"), shapes());
    let mut count = 0;
    for entry in std::fs::read_dir(&reviewed).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let name = path.file_stem().unwrap().to_str().unwrap();
            let case = generated
                .iter()
                .find(|c| c.name == name)
                .unwrap_or_else(|| panic!("{name} is no longer a case of the corpus"));
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(
                text == case.text,
                "{name} differs from the corpus: copy it again"
            );
            count += 1;
        }
    }
    assert!(count >= 5, "{count} reviewed cases");
}

/// Built only with the feature `corpus` (`.ci/run` turns it on): its ~470 programs are most
/// of a `cargo test --workspace`'s time, which the README keeps under five minutes.
#[cfg(feature = "corpus")]
#[test]
fn every_mistake_in_users_code_is_one_error_at_its_token() {
    let target = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("target");
    let dir = target.join("tests/corpus");
    let built = shapes();
    let experiments = built.len();
    let cases = cases(&dir.join("cases"), built);
    write_project(&dir, &cases);
    let reports = check(&dir, &target.join("tests/trybuild"), &["--bins"]);
    let mut failures = Vec::new();
    let (mut mistakes, mut caught, mut one, mut as_printed, mut internal) = (0, 0, 0, 0, 0);
    let mut helped = 0;
    for case in &cases {
        let empty = Report::default();
        let report = reports.get(&case.name).unwrap_or(&empty);
        let said = |what: &str| format!("{}: {what}", case.name);
        for warning in &report.warnings {
            failures.push(said(&format!("a warning:\n{warning}")));
        }
        let Some(mistake) = case.mistake else {
            if !report.errors.is_empty() {
                failures.push(said("the experiment as written does not build"));
            }
            continue;
        };
        mistakes += 1;
        if report.errors.is_empty() {
            if case.caught {
                failures.push(said("not caught at compile time"));
            }
            continue;
        }
        caught += 1;
        if !case.caught {
            failures.push(said("now caught at compile time: mark it so"));
        }
        let rendered: Vec<&str> = report
            .errors
            .iter()
            .map(|e| e["rendered"].as_str().unwrap_or_default())
            .collect();
        if std::env::var_os("CORPUS_SHOW").is_some() {
            println!("== {}\n{}", case.name, rendered.join(""));
        }
        // What to do: a `help:` the message carries (ours do), or a suggestion rustc attaches.
        if rendered[0].contains("help:") {
            helped += 1;
        }
        // Cargo's terminal output shows each distinct error once; its count (and an editor's
        // list) has every copy.
        let mut printed = rendered.clone();
        printed.sort();
        printed.dedup();
        if printed.len() == rendered.len() {
            as_printed += 1;
        }
        if rendered.len() == 1 {
            one += 1;
        } else {
            failures.push(said(&format!(
                "{} errors in cargo's count:\n{}",
                rendered.len(),
                rendered.join("")
            )));
        }
        if !points_into(&report.errors[0], &case.text, mistake) {
            failures.push(said(&format!(
                "the first error is not at the mistake:\n{}",
                rendered[0]
            )));
        }
        let named: Vec<&&str> = INTERNAL
            .iter()
            .filter(|name| rendered.iter().any(|r| r.contains(*name)))
            .collect();
        if !named.is_empty() {
            internal += 1;
            failures.push(said(&format!("names {named:?}:\n{}", rendered.join(""))));
        }
    }
    println!(
        "| experiments | mistakes | caught at compile time | exactly one error | cargo count = printed | says what to do | naming internals |\n\
         |---|---|---|---|---|---|---|\n\
         | {experiments} | {mistakes} | {caught} | {one} | {as_printed} | {helped} | {internal} |"
    );
    assert!(
        failures.is_empty(),
        "{}\n\n{} failures",
        failures.join("\n\n"),
        failures.len()
    );
    if std::env::var("CORPUS").is_err() {
        // At least 30 mistakes in each experiment.
        for shape in shapes() {
            let prefix = format!("{}__", shape.name);
            let count = cases
                .iter()
                .filter(|c| c.mistake.is_some() && c.name.starts_with(&prefix))
                .count();
            assert!(count >= 30, "{}: only {count} mistakes", shape.name);
        }
    }
}

/// The README and the errors page give the corpus's size as it is: a number typed there drifts
/// as mistakes and experiments are added.
#[test]
fn the_docs_give_the_corpus_as_it_is() {
    let shapes = shapes();
    let experiments = shapes.len();
    // Each experiment as written and moved into `main` are cases too, not mistakes.
    let mistakes = cases(Path::new("cases"), shapes)
        .iter()
        .filter(|c| c.mistake.is_some())
        .count();
    const WORDS: [&str; 13] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve",
    ];
    let experiments = WORDS.get(experiments).copied().unwrap_or("many");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let said = format!("a corpus of {mistakes} mistakes in {experiments} experiments");
    assert!(readme.contains(&said), "the README should say: {said}");
    let errors = std::fs::read_to_string(root.join("docs/src/errors.md")).unwrap();
    assert!(
        errors.contains(&format!("builds {experiments} experiments"))
            && errors.contains(&format!("({mistakes} in all")),
        "docs/src/errors.md should give {experiments} experiments and {mistakes} mistakes"
    );
}
