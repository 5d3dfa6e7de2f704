//! The top-level keys of `training!`: what the parser accepts, and the keys table of the crate
//! docs (`dsl-runtime/src/keys.md` and the book's `reference/keys.md`, generated from this table
//! and checked by a test).

/// One key of `training!`.
pub struct Key {
    /// As written in `training!`.
    pub name: &'static str,
    /// `yes`, `no`, or when it is required.
    pub required: &'static str,
    /// What the value looks like, in Markdown.
    pub form: &'static str,
    /// What an absent key means, in Markdown.
    pub default: &'static str,
    /// The key with a value, as an error's help writes it.
    pub example: &'static str,
}

/// Every key, in the order the docs list them.
pub const KEYS: &[Key] = &[
    Key {
        name: "name",
        required: "yes",
        form: "a type name, optionally with a visibility (`pub Resumable`); the run directory is its snake_case. Declares `Name` (the entry points), `NameConfig` and `NameModel`; an item of your own named `NameConfig` or `NameModel` (Burn's `TrainingConfig` beside `name: Training`) keeps its name, and ours are then `ConfigOf<Name>`, `ModelOf<Name>`. Names from `__` are reserved",
        default: "private items",
        example: "name: MyExperiment",
    },
    Key {
        name: "model",
        required: "yes",
        form: "`Type = expression`; `device` in the expression is the CPU device (`flex`, autodiff): the model is drawn there and then moved to the run's device, so a seed gives the same initial weights on every backend; `config` is the run's config",
        default: "",
        example: "model: Mlp = Mlp::new(device)",
    },
    Key {
        name: "step",
        required: "yes, or `steps`",
        form: "`|model, batch: Batch| -> Output { .. }`; `Output` is a Burn output (`ClassificationOutput`, `RegressionOutput`, ...)",
        default: "",
        example: "step: |model, batch: Batch| -> ClassificationOutput { model.forward(batch) }",
    },
    Key {
        name: "loader",
        required: "yes",
        form: "`{ train, valid, test, batcher, batch_size, shuffle, workers }`: Burn datasets of the batcher's items, a Burn batcher whose output is the step's batch; `shuffle` is a seed (`shuffle: 7`); `batch_size`, `workers` and `shuffle` take a constant of yours too (`batch_size: BATCH`); `test` is measured once after training, on the checkpoint of the first `best(..)` (else the last model), not with `engine`/`strategy`/`devices`; `augment: |item, rng| -> item` transforms training items only, `rng` (a [`rand`] `StdRng`) seeded from the `shuffle` seed (0 without one), the epoch and the item's position in it",
        default: "`test`, `augment`: none; `shuffle`: dataset order; `workers`: 0",
        example: "loader: { train: my_dataset(), valid: my_dataset(), batcher: MyBatcher, batch_size: 32 }",
    },
    Key {
        name: "optimizer",
        required: "yes, or `optimizers`",
        form: "`sgd(lr, momentum, weight_decay)`, `adam(lr, beta_1, beta_2, epsilon, weight_decay)`, `adamw(..)` (also `beta1`/`beta2`), `rmsprop(lr, alpha, momentum, epsilon, weight_decay)`, `adagrad(lr, lr_decay, epsilon, weight_decay)`, `lion(lr, beta_1, beta_2, weight_decay)`, `lamb(lr, beta_1, beta_2, epsilon, weight_decay)`, or an expression giving a `ModuleOptimizer` (then `lr` is required); an argument may be a constant of yours (`sgd(lr = LR)`), its range then checked at start-up; momentum, alpha and betas in [0, 1), epsilon > 0, weight decay and lr decay ≥ 0",
        default: "Burn's defaults for unnamed arguments",
        example: "optimizer: adam(lr = 1e-3)",
    },
    Key {
        name: "optimizers",
        required: "with `steps`",
        form: "`{ name: optimizer(lr = ..) on [module paths], .. }`: several optimizers, each a named optimizer of `optimizer`'s list with its `lr`, owning the parameters under its paths (checked at start-up: none owned twice, and none owned by no optimizer unless frozen for the whole run, since it would never train); the run's `lr_schedule` shapes each rate, `grad_clip` clips each step's own gradients; not with `grad_accumulation`, `data_parallel`, Burn's engine, `groups` or `lora`",
        default: "",
        example: "optimizers: { critic: adam(lr = 2e-3) on [critic], generator: adam(lr = 1e-3) on [generator] }",
    },
    Key {
        name: "steps",
        required: "with `optimizers`",
        form: "`[name: |model, batch: Batch| -> Output { .. }, name(every = n): .., ..]`: per batch, in this order, each step named after the optimizer that takes it, on the weights the steps before it moved; `every = n` runs it at global steps n, 2n, …, `every_in_epoch = n` counts each epoch's batches instead, and `first = k` (1 to n) is the batch it first runs at (`every_in_epoch = 5, first = 1` is Burn's wgan order, `iteration % 5 == 0`); its metrics are `split.name.metric` (`train.critic.loss`)",
        default: "`every = 1`",
        example: "steps: [critic: |model, batch: Batch| -> CriticOutput { model.critic_step(batch) }, generator: |model, batch: Batch| -> GeneratorOutput { model.generator_step(batch) }]",
    },
    Key {
        name: "lr",
        required: "with an optimizer expression",
        form: "number, or a constant of yours (`LR`), its range checked at start-up",
        default: "",
        example: "lr: 1e-3",
    },
    Key {
        name: "lr_schedule",
        required: "no",
        form: "`constant`, `cosine(min)`, `linear(final)`, `exponential(gamma)`, `step(every_epochs = n, gamma)` or `step(every_steps = n, gamma)` (the unit is part of the name: PyTorch's `StepLR` counts epochs, Burn's `StepLrScheduler` steps), `warm_up(steps, then = <schedule>)`, spanning the whole run; or `plateau(split.metric, factor = 0.1, patience = 10)`: the rate times `factor` whenever the recorded metric has not improved for more than `patience` epochs; each argument a number or a constant of yours (`gamma = GAMMA`), its range then checked at start-up. Or any of Burn's scheduler configs as an expression (`NoamLrSchedulerConfig::new(1e-2).with_warmup_steps(4000)`, `ComposedLrSchedulerConfig::new().cosine(..).linear(..)`, a function of yours): it sets every step's rate as in Burn's `Learner`, so there is no `lr` (nor `--lr`, `groups`, several optimizers or a sweep of `lr`)",
        default: "`constant`",
        example: "lr_schedule: cosine(min = 1e-5)",
    },
    Key {
        name: "epochs",
        required: "yes",
        form: "whole number ≥ 1, or a constant of yours (`EPOCHS`, `2 * EPOCHS`), its range checked at start-up",
        default: "",
        example: "epochs: 10",
    },
    Key {
        name: "metrics",
        required: "no",
        form: "`[split.metric, ..]`, split `train`/`valid`/`test` (with `loader: { test: .. }`), metric {metrics}, or your own as `split.metric(name = expr)`, recorded as `name`: `metric::Mean::higher_is_better(f)` (a per-batch value and weight from `f(&output)`, averaged over the epoch), `metric::Epoch::higher_is_better(state)` (a [`metric::EpochMetric`], one value per epoch), or any numeric Burn metric",
        default: "`[train.loss, valid.loss]`",
        example: "metrics: [train.loss, valid.loss, valid.accuracy]",
    },
    Key {
        name: "callbacks",
        required: "no",
        form: "`[expr, ..]`: values implementing [`Callback`] (hooks at run, epoch and step, may stop the run, may save state in checkpoints); not with `engine`/`strategy`/`devices`",
        default: "none",
        example: "callbacks: [MyCallback::default()]",
    },
    Key {
        name: "after_step",
        required: "no",
        form: "`|model| expr`: a function of your model to your model, run after every optimizer step on the stepped weights (weight clipping: Burn's wgan clips its critic after each of its steps), before `ema` follows; with several optimizers `{ critic: |model| .., .. }` runs each after that optimizer's steps alone; it captures nothing (constants are fine); not with `engine`/`strategy`/`devices`",
        default: "none",
        example: "after_step: |model| model.clip_weights(0.01)",
    },
    Key {
        name: "at_epoch_end",
        required: "no",
        form: "`|model, at| expr`: a function of your model (as validation sees it: the moving average with `ema`) and `at` (`at.epoch`, `at.run_dir`), run at each epoch's end after validation and before the checkpoint, by the process that writes the run directory: samples, images, anything written there; it returns `()` or a `Result` whose error stops the run; it captures nothing (constants are fine); not with `engine`/`strategy`/`devices`",
        default: "none",
        example: "at_epoch_end: |model, at| model.save_samples(at.run_dir.join(format!(\"samples-{}.png\", at.epoch)))",
    },
    Key {
        name: "checkpoint",
        required: "no",
        form: "`keep_last(n) | best(split.metric) | every(k)` (joined with `|`) or `none`: files in `<run dir>/checkpoint` after every epoch; `n` and `k` a number or a constant of yours",
        default: "`none`",
        example: "checkpoint: keep_last(2) | best(valid.loss)",
    },
    Key {
        name: "strategy",
        required: "no",
        form: r#"`single`, `multi` or `ddp` (Burn's execution strategies; see the book's "Sweeps and clusters" page, "Scaling out")"#,
        default: "`single`",
        example: "strategy: ddp",
    },
    Key {
        name: "devices",
        required: "no",
        form: "whole number ≥ 1; more than one runs on Burn's engine",
        default: "1",
        example: "devices: 2",
    },
    Key {
        name: "data_parallel",
        required: "no",
        form: "`mpi`: launched by `mpirun -n N` (or `srun`), the N processes train one run, each optimizer step summing one batch per process, bit-identical to one process with `grad_accumulation: N`; alone, the binary trains as without the key. Needs the `mpi` feature of `burn-experiment` to run under a launcher",
        default: "none",
        example: "data_parallel: mpi",
    },
    Key {
        name: "engine",
        required: "no",
        form: "`ours` or `burn` (Burn's `SupervisedTraining`, also on one device)",
        default: "`ours`",
        example: "engine: burn",
    },
    Key {
        name: "resume",
        required: "no",
        form: "`latest` or `epoch(n)` of the newest run (or the config's `run`); needs `checkpoint`",
        default: "a fresh run in a new `run-<N>` directory; earlier runs are kept",
        example: "resume: latest",
    },
    Key {
        name: "early_stopping",
        required: "no",
        form: "`patience(n, split.metric)` or `patience(n, split.metric, min_delta = x)`; `n` and `x` a number or a constant of yours",
        default: "none",
        example: "early_stopping: patience(3, valid.loss)",
    },
    Key {
        name: "grad_accumulation",
        required: "no",
        form: "whole number ≥ 1 (Burn's `GradientsAccumulator`), or a constant of yours",
        default: "none",
        example: "grad_accumulation: 4",
    },
    Key {
        name: "grad_clip",
        required: "no",
        form: "`norm(max)`: one global L2 norm over all parameters (PyTorch's `clip_grad_norm_`); `param_norm(max)`: each parameter's gradient to its own L2 norm (Burn's `GradientClippingConfig::Norm`, not with `data_parallel`); `value(max)`: Burn's per-element clamp; `max` a number or a constant of yours",
        default: "none",
        example: "grad_clip: norm(1.0)",
    },
    Key {
        name: "seed",
        required: "no",
        form: "seeds the CPU's RNG, which draws the model's initial weights; then each training step's random numbers (dropout) come from a stream of the seed, the epoch and the batch's position, so a resumed run, a run with workers and every rank of `data_parallel` draw the same (`data_parallel` without a seed uses 0); a number or a constant of yours",
        default: "none",
        example: "seed: 42",
    },
    Key {
        name: "artifacts",
        required: "no",
        form: "string: root folder of run directories",
        default: r#"`"artifacts"`"#,
        example: r#"artifacts: "artifacts""#,
    },
    Key {
        name: "init_from",
        required: "no",
        form: "string: a `.safetensors` file (e.g. from `--export`) or a run's `checkpoint/model-N.bpk` whose weights a fresh run starts from; every parameter must be there with its shape. Unlike `resume`, nothing else carries over (optimizer, schedule, epochs, history)",
        default: "none",
        example: r#"init_from: "pretrained.safetensors""#,
    },
    Key {
        name: "freeze",
        required: "no",
        form: r#"`[fc1, encoder.layer, "layers.0"]`: module paths of the model whose parameters are not trained (Burn's `freeze_group`); a path naming no parameter is a start-up error listing them"#,
        default: "none",
        example: "freeze: [encoder]",
    },
    Key {
        name: "unfreeze",
        required: "no",
        form: "the epoch (≥ 1) from which the `freeze` paths train again, or a constant of yours",
        default: "frozen for the run",
        example: "unfreeze: 3",
    },
    Key {
        name: "groups",
        required: "no",
        form: "`{ fc1: lr(1e-4), .. }`: module paths at their own base rate, following the run's schedule scaled (Burn's per-group `ModuleLrScheduler`); `lr(0.0)` holds a group still",
        default: "none",
        example: "groups: { head: lr(1e-3) }",
    },
    Key {
        name: "lora",
        required: "no",
        form: "`{ rank: 4, alpha: 8, on: [fc1, fc2] }`: Burn's LoRA adapters on the 2-D weights under `on`; every base parameter is frozen",
        default: "none; alpha defaults to the rank",
        example: "lora: { rank: 4, alpha: 8, on: [fc1] }",
    },
    Key {
        name: "ema",
        required: "no",
        form: "decay in (0, 1), or a constant of yours: a moving average of the weights after each optimizer step, which validation, `best(..)`, `load_best`, export and the test split use; kept in every checkpoint; `ema: 0.999 on [generator]` averages those module paths only, the others following the trained weights",
        default: "none; every parameter",
        example: "ema: 0.999 on [generator]",
    },
    Key {
        name: "gradient_checkpointing",
        required: "no",
        form: "`true`: Burn's balanced gradient checkpointing (activations recomputed in the backward pass)",
        default: "`false`",
        example: "gradient_checkpointing: true",
    },
    Key {
        name: "precision",
        required: "no",
        form: "`f32`, `bf16`, or `f16` (with dynamic loss scaling): the float type of each step's forward and backward passes and of validation; the weights the optimizer steps, its state, checkpoints and `--export` stay f32; the batch's float tensors are cast (`#[derive(Batch)]` batches, or a batch implementing `CastFloats`); with `steps`, each optimizer's step runs in it; not with `data_parallel` or Burn's engine",
        default: "`f32`",
        example: "precision: bf16",
    },
    Key {
        name: "device",
        required: "no",
        form: r#"`"flex"`, `"cpu"`, `"ndarray"`, `"cuda"`, `"cuda:N"`, `"wgpu"`, `"wgpu:N"`: the device `cli()` trains on (`--device` overrides); each backend but `flex` needs its cargo feature of `burn-experiment` (`cuda`, `wgpu`, `cpu`, `ndarray`), else start-up fails naming the feature"#,
        default: r#"`"flex"`"#,
        example: r#"device: "cuda:0""#,
    },
    Key {
        name: "hparams",
        required: "no",
        form: r#"`{ /// doc\n hidden: usize = 64, dropout: f64 = 0.1 }`: the experiment's own hyperparameters, typed fields of `<Name>Config` that every expression reads as `config.hidden` (as it reads `config.epochs`); set with `--set`/`--config`, swept, saved in `config.json`, checked on resume; a saved run's model is rebuilt with the values it recorded"#,
        default: "none",
        example: "hparams: { hidden: usize = 64, dropout: f64 = 0.1 }",
    },
    Key {
        name: "sweep",
        required: "no",
        form: "`{ lr: [1e-3, 1e-2], batch_size: [16, 32], .. }`: a grid over {sweepable} and the `hparams` (with several optimizers, each one's rate: `optimizers.<name>.lr`), each value checked against the key's type; `cli()` then trains every combination as its own run and ranks them by the metric `best(..)` watches, else `valid.loss` (one must be recorded)",
        default: "no sweep",
        example: "sweep: { lr: [1e-3, 1e-2] }",
    },
    Key {
        name: "search",
        required: "no",
        form: "`{ space: { lr: log_uniform(1e-4, 1e-1), batch_size: choice([16, 32]), .. }, trials: 30, objective: min(valid.loss), sampler: tpe, prune: median, seed: 0 }`: a study over {sweepable} and the `hparams`, each drawn from `log_uniform(low, high)`, `uniform(low, high)` (floats), `int(low, high)` (whole numbers) or `choice([..])`, checked against the key's type and bounds; `objective` (required) is `min(..)` or `max(..)` of a recorded metric; `sampler` is `tpe` (default) or `random`, `prune` `none` (default), `median` or `asha`; `cli()` trains each trial as its own run in `<artifacts>/<name>/study-<hash>/` and writes `study.md`, `study.csv` and `study.svg`; the same command resumes a killed study",
        default: "no search",
        example: "search: { space: { lr: log_uniform(1e-4, 1e-1) }, trials: 30, objective: min(valid.loss) }",
    },
];

/// The key names, in order.
pub fn names() -> Vec<&'static str> {
    KEYS.iter().map(|k| k.name).collect()
}

/// The example of key `name`, as an error's help writes it.
pub fn example(name: &str) -> Option<&'static str> {
    KEYS.iter().find(|k| k.name == name).map(|k| k.example)
}

/// The keys as a Markdown table (a `|` inside a cell escaped; `{sweepable}` in a form is the
/// list of [`crate::sweep::SWEEPABLE`], `{metrics}` that of [`crate::metrics::METRICS`]).
pub fn markdown_table() -> String {
    let metrics = crate::metrics::METRICS
        .iter()
        .map(|m| match m.arg {
            crate::metrics::MetricArg::None => format!("`{}`", m.name),
            crate::metrics::MetricArg::Count => format!("`{}(k)`", m.name),
            crate::metrics::MetricArg::Positive => format!("`{}(beta)`", m.name),
        })
        .collect::<Vec<_>>()
        .join(", ");
    let sweepable = crate::sweep::names()
        .iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut table =
        String::from("| key | required | form | default |\n|-----|----------|------|---------|\n");
    for key in KEYS {
        let cell = |text: &str| {
            text.replace('|', "\\|")
                .replace("{sweepable}", &sweepable)
                .replace("{metrics}", &metrics)
        };
        table.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            key.name,
            key.required,
            cell(key.form),
            cell(key.default)
        ));
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The crate docs of `dsl-runtime` include `keys.md`, and the book's keys page holds the
    /// same table under its heading (a file readable on its own, not an include); both are
    /// written from [`KEYS`]. After a change of the table, `DSL_WRITE_DOCS=1 cargo test -p
    /// dsl-vocabulary` writes them again.
    #[test]
    fn the_keys_tables_of_the_docs_are_this_one() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let table = markdown_table();
        let page = format!(
            "# Keys of `training!`\n\n\
             Generated from `burn-experiment-vocabulary` (the table the macro parses with); `cargo test -p\n\
             dsl-vocabulary` fails when this page and the vocabulary differ.\n\n{table}"
        );
        for (path, text) in [
            (format!("{root}/dsl-runtime/src/keys.md"), &table),
            (format!("{root}/docs/src/reference/keys.md"), &page),
        ] {
            if std::env::var_os("DSL_WRITE_DOCS").is_some() {
                std::fs::write(&path, text).unwrap();
            }
            let written = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                written == *text,
                "{path} is not the vocabulary's table: run `DSL_WRITE_DOCS=1 cargo test -p burn-experiment-vocabulary`"
            );
        }
    }

    #[test]
    fn every_key_is_named_once() {
        let mut names = names();
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count);
    }
}
