//! Parser and validator on token streams, without a compiler in the loop.

use proc_macro2::TokenStream;
use quote::quote;

use crate::errors::Errors;
use crate::{parse, validate};

/// A parsed experiment that must have no error.
pub(crate) fn experiment(tokens: TokenStream) -> crate::ast::Experiment {
    let mut errors = Errors::new();
    let exp = parse::parse(tokens, &mut errors);
    assert!(errors.into_messages().is_empty());
    exp
}

fn messages(tokens: TokenStream) -> Vec<String> {
    let mut errors = Errors::new();
    let exp = parse::parse(tokens, &mut errors);
    validate::validate(&exp, &mut errors);
    errors.into_messages()
}

fn minimal(extra: TokenStream) -> TokenStream {
    quote! {
        name: Seed,
        model: Mlp = Mlp::new(3, device),
        step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
        loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, batch_size: 16 },
        optimizer: sgd(lr = 0.1),
        epochs: 3,
        #extra
    }
}

#[test]
fn a_minimal_experiment_has_no_error() {
    assert_eq!(messages(minimal(quote!())), Vec::<String>::new());
}

#[test]
fn a_full_experiment_has_no_error() {
    let full = minimal(quote! {
        lr_schedule: warm_up(steps = 2, then = linear(final = 1e-4)),
        metrics: [train.loss, valid.loss, valid.accuracy, valid.top_k(2), valid.fbeta(0.5)],
        checkpoint: keep_last(2) | best(valid.loss) | every(5),
        early_stopping: patience(5, valid.loss, min_delta = 0.01),
        grad_accumulation: 2,
        grad_clip: norm(1.0),
        seed: 42,
        artifacts: "runs",
    });
    assert_eq!(messages(full), Vec::<String>::new());
}

#[test]
fn errors_are_collected_not_first_fail() {
    let msgs = messages(minimal(quote! {
        epoch: 3,
        metrics: [valid.acuracy, test.loss],
        checkpoint: keep_last(0),
    }));
    assert_eq!(msgs.len(), 4, "{msgs:#?}");
    assert!(
        msgs[0].starts_with("unknown key `epoch`\nhelp: did you mean `epochs`?"),
        "{msgs:#?}"
    );
    assert!(
        msgs.iter()
            .any(|m| m.contains("unknown metric `acuracy`")
                && m.contains("did you mean `accuracy`?"))
    );
    assert!(msgs.iter().any(|m| m.contains("unknown split `test`")));
    assert!(
        msgs.iter()
            .any(|m| m.contains("`keep_last` must keep at least 1"))
    );
}

#[test]
fn a_value_left_half_read_is_its_own_keys_error_alone() {
    // A group stopped in the middle (positional arguments where names are expected): the
    // other keys, the loader's nested ones included, still parse and are checked.
    for extra in [
        quote!(lr_schedule: plateau(valid.loss, 2.0, 3),),
        quote!(early_stopping: patience(5 valid.loss),),
        quote!(checkpoint: keep_last(2, 3) | best(valid.loss),),
    ] {
        let msgs = messages(minimal(extra.clone()));
        assert_eq!(msgs.len(), 1, "{extra}: {msgs:#?}");
        assert!(!msgs[0].contains("missing"), "{extra}: {msgs:#?}");
    }
    let msgs = messages(quote! {
        name: Seed,
        model: Mlp = Mlp::new(3, device),
        step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
        loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, batch_size: 16, augment: |(x) },
        optimizer: sgd(lr = 0.1),
        lr_schedule: plateau(valid.loss, 2.0, 3),
        epoch: 3,
    });
    assert_eq!(msgs.len(), 3, "{msgs:#?}");
    assert!(
        msgs.iter()
            .any(|m| m.contains("`plateau` names its arguments")),
        "{msgs:#?}"
    );
    assert!(
        msgs.iter().any(|m| m.starts_with("unknown key `epoch`")),
        "{msgs:#?}"
    );
}

#[test]
fn a_misspelt_watched_metric_is_matched_against_the_recorded_ones() {
    let msgs = messages(minimal(quote! {
        metrics: [valid.loss, valid.metric(macro_recall = MacroRecall::new())],
        checkpoint: best(valid.macro_recal),
        early_stopping: patience(3, valid.macro_recal),
    }));
    assert_eq!(msgs.len(), 2, "{msgs:#?}");
    for msg in &msgs {
        assert!(
            msg.contains("did you mean `valid.macro_recall`?"),
            "{msgs:#?}"
        );
        assert!(!msg.contains("metric(name"), "{msgs:#?}");
    }
}

#[test]
fn a_question_mark_in_the_step_is_reported_but_not_one_in_a_closure_inside_it() {
    let step = |body: TokenStream| {
        quote! {
            name: Seed,
            model: Mlp = Mlp::new(3, device),
            step: |model, batch: Batch| -> ClassificationOutput { #body },
            loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, batch_size: 16 },
            optimizer: sgd(lr = 0.1),
            epochs: 3,
        }
    };
    let msgs = messages(step(quote!(model.forward_classification(check(batch)?))));
    assert_eq!(msgs.len(), 1, "{msgs:#?}");
    assert!(msgs[0].starts_with("a step cannot fail"), "{msgs:#?}");
    let inner = quote! {
        let scale = |x: Option<f32>| -> Option<f32> { Some(x? * 2.0) };
        model.forward_classification(batch)
    };
    assert_eq!(messages(step(inner)), Vec::<String>::new());
}

#[test]
fn missing_and_duplicate_keys() {
    let msgs = messages(quote! {
        name: Seed,
        name: Other,
        loader: { train: a(), batch_size: 0 },
    });
    let expected = [
        "duplicate key `name`",
        "missing required key `model`",
        "missing required key `step`",
        "missing required key `optimizer`",
        "missing required key `epochs`",
        "`loader` is missing `valid`",
        "`loader` is missing `batcher`",
        "`batch_size` must be a whole number from 1 to 4294967295",
    ];
    assert_eq!(msgs.len(), expected.len(), "{msgs:#?}");
    for e in expected {
        assert!(
            msgs.iter().any(|m| m.starts_with(e)),
            "{e} not in {msgs:#?}"
        );
    }
}

#[test]
fn metrics_named_by_best_and_patience_must_be_recorded() {
    let msgs = messages(minimal(quote! {
        metrics: [train.loss, valid.loss],
        checkpoint: best(valid.f1),
        early_stopping: patience(3, valid.accuracy),
    }));
    assert_eq!(msgs.len(), 2, "{msgs:#?}");
    assert!(msgs[0].contains(
        "`best` uses `valid.f1`, which is not recorded\nhelp: add `valid.f1` to `metrics`"
    ));
    assert!(msgs[1].contains("early stopping uses `valid.accuracy`"));
}

#[test]
fn optimizers_and_schedules_are_checked_by_name_and_value() {
    let msgs = messages(quote! {
        name: Seed,
        model: Mlp = Mlp::new(3, device),
        step: |model, batch: Batch| -> Out { model.f(batch) },
        loader: { train: a(), valid: b(), batcher: B, batch_size: 16 },
        optimizer: adamm(lr = 0.1),
        lr_schedule: cosinus(min = 0.0),
        epochs: 0,
    });
    assert_eq!(msgs.len(), 3, "{msgs:#?}");
    assert!(msgs[0].starts_with(
        "unknown optimizer `adamm`\nhelp: use one of sgd, adam, adamw, rmsprop, adagrad, lion, lamb"
    ));
    assert!(msgs[1].starts_with("unknown learning-rate schedule `cosinus`"));
    assert!(msgs[2].starts_with("`epochs` must be a whole number from 1 to 4294967295"));

    let msgs = messages(quote! {
        name: Seed,
        model: Mlp = Mlp::new(3, device),
        step: |model, batch: Batch| -> Out { model.f(batch) },
        loader: { train: a(), valid: b(), batcher: B, batch_size: 16 },
        optimizer: sgd(lr = -0.1, nesterov = 1),
        epochs: 1,
    });
    assert_eq!(msgs.len(), 2, "{msgs:#?}");
    assert!(
        msgs.iter()
            .any(|m| m.starts_with("the learning rate must be positive, not -0.1"))
    );
    assert!(
        msgs.iter()
            .any(|m| m.starts_with("`sgd` has no argument `nesterov`"))
    );
}

#[test]
fn an_optimizer_expression_takes_its_rate_from_the_lr_key() {
    let with_expr = |lr: TokenStream| {
        messages(quote! {
            name: Seed,
            model: Mlp = Mlp::new(3, device),
            step: |model, batch: Batch| -> Out { model.f(batch) },
            loader: { train: a(), valid: b(), batcher: B, batch_size: 16 },
            optimizer: AdamConfig::new().init(),
            epochs: 1,
            #lr
        })
    };
    assert_eq!(with_expr(quote!(lr: 1e-3,)), Vec::<String>::new());
    let msgs = with_expr(quote!());
    assert_eq!(msgs.len(), 1);
    assert!(msgs[0].starts_with("an optimizer expression needs a learning rate beside it"));
}

#[test]
fn run_directories_are_snake_case() {
    assert_eq!(crate::expand::snake_case("ThreeClass"), "three_class");
    assert_eq!(crate::expand::snake_case("Wine"), "wine");
}

#[test]
fn expansion_time_of_the_largest_pass_case() {
    // The `ui-tests/pass/training/full.rs` invocation: every key. Timed, not asserted on time (timings
    // belong in benchmarks); asserted to expand without error.
    let full = minimal(quote! {
        lr_schedule: warm_up(steps = 2, then = linear(final = 1e-4)),
        metrics: [
            train.loss, train.lr, valid.loss, valid.accuracy, valid.top_k(2), valid.precision,
            valid.recall, valid.f1, valid.fbeta(0.5), valid.auroc, valid.perplexity,
        ],
        checkpoint: keep_last(2) | best(valid.loss) | every(5),
        early_stopping: patience(3, valid.accuracy, min_delta = 0.5),
        grad_accumulation: 2,
        grad_clip: norm(1.0),
        seed: 42,
        artifacts: "runs",
        resume: latest,
    });
    let mut times: Vec<std::time::Duration> = (0..50)
        .map(|_| {
            let start = std::time::Instant::now();
            let out = crate::expand_training(full.clone());
            assert!(!out.to_string().contains("compile_error"), "{out}");
            start.elapsed()
        })
        .collect();
    times.sort();
    println!(
        "expansion of the full case: median {:?}",
        times[times.len() / 2]
    );
}

#[test]
fn optimizer_arguments_are_checked_against_their_ranges() {
    let with = |optimizer: TokenStream| {
        messages(quote! {
            name: Seed,
            model: Mlp = Mlp::new(3, device),
            step: |model, batch: Batch| -> Out { model.f(batch) },
            loader: { train: a(), valid: b(), batcher: B, batch_size: 16 },
            optimizer: #optimizer,
            epochs: 1,
        })
    };
    assert_eq!(
        with(quote!(adam(
            lr = 1e-3,
            beta_1 = 0.8,
            beta_2 = 0.99,
            epsilon = 1e-8
        ))),
        Vec::<String>::new()
    );
    // The spelling of Adam's papers is accepted for the config's `beta_1`.
    assert_eq!(
        with(quote!(adamw(lr = 1e-3, beta1 = 0.8))),
        Vec::<String>::new()
    );
    let msgs = with(quote!(adam(
        lr = 1e-3,
        beta_2 = 1.0,
        epsilon = 0.0,
        weight_decay = -1.0
    )));
    assert_eq!(msgs.len(), 3, "{msgs:#?}");
    assert!(
        msgs[0].starts_with("`beta_2` must be in [0, 1), not 1"),
        "{msgs:#?}"
    );
    assert!(
        msgs[1].starts_with("`epsilon` must be positive, not 0"),
        "{msgs:#?}"
    );
    assert!(
        msgs[2].starts_with("`weight_decay` must be 0 or more, not -1"),
        "{msgs:#?}"
    );
    let msgs = with(quote!(sgd(lr = 0.1, momentum = 1.0)));
    assert!(
        msgs[0].starts_with("`momentum` must be in [0, 1), not 1"),
        "{msgs:#?}"
    );
}

#[test]
fn common_slips_get_a_hint_in_their_own_words() {
    let msgs = messages(minimal(
        quote!(checkpoint: best(valid.loss) & keep_last(2),),
    ));
    assert_eq!(msgs.len(), 1, "{msgs:#?}");
    assert!(
        msgs[0].contains("checkpoint policies combine with `|`"),
        "{msgs:#?}"
    );

    let msgs = messages(quote! {
        name: Seed,
        model: Mlp = Mlp::new(3, device),
        step: |model, batch: Batch| -> Out { model.f(batch) },
        loader: { train: a(), valid: b(), batcher: B, batch_size: 16, shuffle: true },
        optimizer: sgd(lr = 0.1),
        epochs: 1,
    });
    assert_eq!(msgs.len(), 1, "{msgs:#?}");
    assert!(
        msgs[0].starts_with("`shuffle` takes a seed, not a switch"),
        "{msgs:#?}"
    );
}

#[test]
fn a_rejected_invocation_still_declares_what_user_code_calls() {
    let mut errors = Errors::new();
    let exp = parse::parse(minimal(quote!(epochs: 0,)), &mut errors);
    validate::validate(&exp, &mut errors);
    assert!(errors.finish().is_some());
    let dummy = crate::expand::dummy(&exp).to_string();
    for item in [
        "struct Seed",
        "struct __SeedConfig",
        "SeedConfig",
        "struct __SeedModel",
        "SeedModel",
        "fn cli",
        "fn fit",
        "fn with_options",
        "fn load_best",
        "fn evaluate",
    ] {
        assert!(dummy.contains(item), "the dummy lacks `{item}`: {dummy}");
    }
}

#[test]
fn config_fields_are_checked_unless_the_expression_binds_its_own_config() {
    let own = messages(quote! {
        name: Own,
        hparams: { hidden: usize = 8 },
        model: Mlp = { let config = MlpConfig::new(); Mlp::new(config.width, device) },
        step: |model, batch: Batch| -> ClassificationOutput { model.forward(batch, config.hidden) },
        loader: { train: samples(0..config.items), valid: v(config.epochs), batcher: B, batch_size: 2 },
        optimizer: sgd(lr = 0.1),
        epochs: 1,
        callbacks: [Stop { at: config.stop }],
    });
    assert_eq!(
        own,
        [
            "the config has no `items`\nhelp: declare it as a hyperparameter of the experiment: `hparams: { items: usize = 3 }` (any type, with its default)",
            "the config has no `stop`\nhelp: declare it as a hyperparameter of the experiment: `hparams: { stop: usize = 3 }` (any type, with its default)",
        ]
    );
}

#[test]
fn every_feature_of_our_loop_alone_is_refused_beside_an_engine_key() {
    let msgs = messages(quote! {
        name: Both,
        model: Mlp = Mlp::new(device),
        step: |model, batch: Batch| -> ClassificationOutput { model.forward(batch) },
        loader: {
            train: a(), valid: b(), test: c(), augment: |item, rng| item, batcher: B, batch_size: 2,
        },
        optimizer: sgd(lr = 0.1),
        lr_schedule: plateau(valid.loss, factor = 0.5, patience = 1),
        epochs: 1,
        metrics: [valid.loss],
        callbacks: [Stop],
        after_step: |model| model,
        at_epoch_end: |model, at| (),
        ema: 0.9,
        lora: { rank: 2, on: [fc1] },
        init_from: "w.safetensors",
        freeze: [fc1],
        gradient_checkpointing: true,
        precision: bf16,
        data_parallel: mpi,
        engine: burn,
    });
    let refused: Vec<&String> = msgs
        .iter()
        .filter(|m| m.contains("this crate's fit loop"))
        .collect();
    assert_eq!(
        refused.len(),
        burn_experiment_vocabulary::engine::OURS_ONLY.len(),
        "{msgs:#?}"
    );
}

/// A value of the wrong form is one error, and what it meant is still read: nothing else
/// (`best(..)` of a metric in the list, the experiment's name) is reported after it.
#[test]
fn values_of_the_wrong_form_are_one_error_each_and_recovered() {
    let cases: [(TokenStream, &str); 7] = [
        (
            quote!(metrics: train.loss, valid.loss, checkpoint: best(valid.loss),),
            "`metrics` is a list in square brackets",
        ),
        (
            quote!(metrics: ["train.loss", valid.loss], checkpoint: best(valid.loss),),
            "a metric is written without quotes",
        ),
        (
            quote!(checkpoint: "keep_last(2)",),
            "`checkpoint` is written without quotes",
        ),
        (quote!(lr_schedule: cosine(1e-5),), "this one is `min`"),
        (
            quote!(lr_schedule: 0.5,),
            "`lr_schedule` is not written this way",
        ),
        (
            quote!(hparams: { width = 8, depth: usize = 2 }, sweep: { width: [1, 2] },),
            "`width` needs its type and default value",
        ),
        (
            quote!(grad_clip: norm,),
            "`grad_clip` is not written this way",
        ),
    ];
    for (extra, expected) in cases {
        let text = extra.to_string();
        let msgs = messages(minimal(extra));
        assert_eq!(msgs.len(), 1, "{text}: {msgs:#?}");
        assert!(msgs[0].contains(expected), "{text}: {msgs:#?}");
    }
    let msgs = messages(quote! {
        name: "Seed",
        model: Mlp = Mlp::new(3, device),
        step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
        loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, batch_size: 16 },
        optimizer: adam(1e-3),
        epochs: 3,
    });
    assert_eq!(msgs.len(), 2, "{msgs:#?}");
    assert!(msgs[0].contains("`name` is the name of the type it declares, written without quotes"));
    assert!(msgs[1].contains("the arguments of `adam` are named: this one is `lr`"));
}

/// The words of other trainers get ours, one error each, and the entry's neighbours are kept.
#[test]
fn other_trainers_words_are_answered_with_ours() {
    let base = |loader: TokenStream, optimizer: TokenStream, extra: TokenStream| {
        quote! {
            name: Seed,
            model: Mlp = Mlp::new(3, device),
            step: |model, batch: Batch| -> ClassificationOutput { model.forward_classification(batch) },
            loader: { train: samples(0..96), valid: samples(96..120), batcher: SampleBatcher, #loader },
            optimizer: #optimizer,
            #extra
        }
    };
    let sgd = quote!(sgd(lr = 0.1));
    let cases: [(TokenStream, &str); 7] = [
        (
            base(
                quote!(batch_size: 16, num_workers: 2),
                sgd.clone(),
                quote!(epochs: 3,),
            ),
            "`num_workers` is PyTorch's word; ours is `workers`",
        ),
        (
            base(quote!(batch_size: 16), sgd.clone(), quote!(max_epochs: 3,)),
            "`max_epochs` is Lightning's word; ours is `epochs`",
        ),
        (
            base(
                quote!(batch_size: 16),
                sgd.clone(),
                quote!(epochs: 3, accumulate_grad_batches: 2,),
            ),
            "ours is `grad_accumulation`",
        ),
        (
            base(
                quote!(batch_size: 16),
                quote!(adam(lr = 1e-3, betas = (0.5, 0.9))),
                quote!(epochs: 3,),
            ),
            "`adam` has no argument `betas`\nhelp: `betas` is PyTorch's word; ours are `beta_1` and `beta_2`: two arguments",
        ),
        (
            base(
                quote!(batch_size: 16),
                quote!(adam(lr = 1e-3, amsgrad = true)),
                quote!(epochs: 3,),
            ),
            "Burn's `AdamConfig` has one",
        ),
        (
            base(
                quote!(batch_size: 16),
                quote!(adam(lr = 1e-3, eps = 1e-8)),
                quote!(epochs: 3,),
            ),
            "`eps` is PyTorch's word; ours is `epsilon`",
        ),
        (
            base(
                quote!(batch_size: 16),
                sgd.clone(),
                quote!(epochs: 3, metrics: [valid.loss, valid.f1_score],),
            ),
            "`f1_score` is scikit-learn's word; ours is `f1`",
        ),
    ];
    for (tokens, expected) in cases {
        let text = tokens.to_string();
        let msgs = messages(tokens);
        assert_eq!(msgs.len(), 1, "{text}: {msgs:#?}");
        assert!(msgs[0].contains(expected), "{text}: {msgs:#?}");
    }
}

/// `optimizer: { .. }` meant as `optimizers`, `step: [..]` meant as `steps`: one error at the
/// key, and the names they declare stay declared (no error at the steps or metrics that use
/// them).
#[test]
fn a_key_misspelt_into_its_neighbour_is_one_error_and_its_names_stay() {
    let gan = |optimizers: TokenStream, steps: TokenStream| {
        quote! {
            name: Gan,
            model: Gan = Gan::new(device),
            #optimizers,
            #steps,
            loader: { train: ring(0..256), valid: ring(256..320), batcher: SampleBatcher, batch_size: 64 },
            epochs: 3,
            metrics: [train.d.loss, train.g.loss, valid.g.loss],
        }
    };
    let map = quote!({ d: adam(lr = 1e-3) on [discriminator], g: adam(lr = 1e-3) on [generator] });
    let list = quote!([
        d: |model, batch: SampleBatch| -> GanLoss { model.discriminator_step(batch) },
        g: |model, batch: SampleBatch| -> GanLoss { model.generator_step(batch) },
    ]);
    assert_eq!(
        messages(gan(quote!(optimizers: #map), quote!(steps: #list))),
        Vec::<String>::new()
    );
    let cases = [
        (
            gan(quote!(optimizer: #map), quote!(steps: #list)),
            "`optimizer` holds one optimizer; this is a map of several, which is `optimizers`",
        ),
        (
            gan(quote!(optimizers: #map), quote!(step: #list)),
            "`step` is one step; this is a list of several, which is `steps`",
        ),
        // A malformed entry is one error, and its step or optimizer stays declared.
        (
            gan(
                quote!(optimizers: #map),
                quote!(steps: [
                    d: |model, batch: SampleBatch| -> GanLoss { model.discriminator_step(batch) },
                    g(every: 2): |model, batch: SampleBatch| -> GanLoss { model.generator_step(batch) },
                ]),
            ),
            "`every` is given with `=`",
        ),
        (
            gan(
                quote!(optimizers: { d: adam(lr = 1e-3) on discriminator, g: adam(lr = 1e-3) on [generator] }),
                quote!(steps: #list),
            ),
            "the paths an optimizer owns are a list in brackets\nhelp: write `on [discriminator]`",
        ),
        (
            gan(
                quote!(optimizers: { d: adam(lr = 1e-3, betas = (0.5, 0.9)) on [discriminator], g: adam(lr = 1e-3) on [generator] }),
                quote!(steps: #list),
            ),
            "`adam` has no argument `betas`",
        ),
    ];
    for (tokens, expected) in cases {
        let msgs = messages(tokens);
        assert_eq!(msgs.len(), 1, "{msgs:#?}");
        assert!(msgs[0].starts_with(expected), "{msgs:#?}");
    }
    // A watched metric of a several-optimizer experiment is a step's: the help names one.
    let best = gan(
        quote!(optimizers: #map),
        quote!(steps: #list, checkpoint: best(valid.loss)),
    );
    let msgs = messages(best);
    assert_eq!(msgs.len(), 1, "{msgs:#?}");
    assert!(
        msgs[0]
            .contains("with several optimizers a metric is a step's: did you mean `valid.g.loss`?"),
        "{msgs:#?}"
    );
    // `plateau` with several optimizers says why, without naming `groups` there are none of.
    let plateau = gan(
        quote!(optimizers: #map),
        quote!(steps: #list, lr_schedule: plateau(valid.g.loss, factor = 0.5)),
    );
    let msgs = messages(plateau);
    assert_eq!(msgs.len(), 1, "{msgs:#?}");
    assert!(
        msgs[0].contains("each of the several optimizers has its own")
            && !msgs[0].contains("groups"),
        "{msgs:#?}"
    );
    // A malformed `freeze` path is its own error: `unfreeze` still has a `freeze`.
    let frozen = messages(minimal(quote!(freeze: [blocks[0], head], unfreeze: 2,)));
    assert_eq!(frozen.len(), 1, "{frozen:#?}");
    assert!(frozen[0].contains("write `\"blocks.0\"`"), "{frozen:#?}");
    // A block is still an optimizer expression.
    let block = minimal(quote!()).to_string().replace(
        "optimizer : sgd (lr = 0.1)",
        "optimizer : { let config = AdamConfig :: new () ; config . init () } , lr : 0.1",
    );
    assert!(block.contains("AdamConfig"), "{block}");
    let msgs = messages(block.parse().unwrap());
    assert!(msgs.is_empty(), "{msgs:#?}");
}

/// A metric's argument written with its name, or not a number, is one error that says how;
/// an argument a metric does not take keeps the metric recorded for `best(..)`.
#[test]
fn a_metric_argument_is_one_error_with_its_form() {
    let cases: [(TokenStream, &str); 3] = [
        (
            quote!(metrics: [valid.loss, valid.top_k(k = 2)],),
            "a metric's argument is written alone, without its name\nhelp: write `valid.top_k(2)`",
        ),
        (
            quote!(metrics: [valid.loss, valid.top_k("2")],),
            "a metric's argument is a number",
        ),
        (
            quote!(metrics: [valid.loss, valid.accuracy(2)], checkpoint: best(valid.accuracy),),
            "`accuracy` takes no argument\nhelp: write `valid.accuracy`",
        ),
    ];
    for (extra, expected) in cases {
        let text = extra.to_string();
        let msgs = messages(minimal(extra));
        assert_eq!(msgs.len(), 1, "{text}: {msgs:#?}");
        assert!(msgs[0].starts_with(expected), "{text}: {msgs:#?}");
    }
}

/// Every list and map key reads entry by entry through one combinator: a malformed entry is
/// one error at its tokens, a missing comma before an entry that reads is one error, and the
/// entries around them stay, so what they declare adds no second error.
#[test]
fn every_list_key_keeps_the_entries_around_a_malformed_one() {
    let cases = [
        // `best(valid.accuracy)` still finds the metric after the malformed one.
        (
            quote!(metrics: [train.loss, valid.3, valid.accuracy], checkpoint: best(valid.accuracy),),
            "",
        ),
        (
            quote!(metrics: [train.loss valid.accuracy], checkpoint: best(valid.accuracy),),
            "a `,` is missing before the next entry",
        ),
        (
            quote!(groups: { fc1: rate(1e-4), fc2: lr(1e-3) },),
            "unknown group setting `rate`",
        ),
        (
            quote!(groups: { fc1: lr(1e-4) fc2: lr(1e-3) },),
            "a `,` is missing before the next entry",
        ),
        (
            quote!(sweep: { lr: [1e-3, 1e-2], 3: [1], batch_size: [8, 16] },),
            "",
        ),
        (
            quote!(sweep: { lr: [1e-3, 1e-2] batch_size: [8, 16] },),
            "a `,` is missing before the next entry",
        ),
        (quote!(callbacks: [Logger::new(),, Timer],), "two commas"),
        (
            quote!(callbacks: [Logger::new(), 3 +, Timer],),
            "a callback is an expression",
        ),
        (quote!(freeze: [fc1, blocks[0], fc2], unfreeze: 2,), ""),
    ];
    for (extra, first) in cases {
        let msgs = messages(minimal(extra.clone()));
        assert_eq!(msgs.len(), 1, "{extra}: {msgs:#?}");
        assert!(msgs[0].starts_with(first), "{extra}: {msgs:#?}");
        assert!(msgs[0].contains("\nhelp: "), "{extra}: {msgs:#?}");
    }
}

/// Every schedule another trainer's word maps to is one of ours.
#[test]
fn foreign_schedules_map_to_ours() {
    for ours in burn_experiment_vocabulary::synonyms::SCHEDULES
        .iter()
        .flat_map(burn_experiment_vocabulary::synonyms::Synonym::words)
    {
        assert!(crate::parse::SCHEDULES.contains(&ours), "{ours}");
    }
}
