//! Rules that span keys or values, one function per rule, each reporting at the user's token.

use proc_macro2::{Ident, Span};

use burn_experiment_vocabulary::bounds::{self, Bound};
use burn_experiment_vocabulary::sweep::{self, Values};

use crate::ast::*;
use crate::catalog::{self, MetricArg, SPLITS};
use crate::errors::{Errors, closest};

pub fn validate(exp: &Experiment, errors: &mut Errors) {
    required_keys(exp, errors);
    positive_counts(exp, errors);
    learning_rate(exp, errors);
    optimizer_arguments(exp, errors);
    several_optimizers(exp, errors);
    let recorded = metric_list(exp, errors);
    checkpoint_policies(exp, &recorded, errors);
    early_stopping(exp, &recorded, errors);
    if let Some(Schedule::Plateau { metric, .. }) = &exp.lr_schedule {
        must_be_recorded("`plateau`", metric, &recorded, errors);
    }
    schedule_values(exp, errors);
    burn_schedule_alone(exp, errors);
    after_step_hooks(exp, errors);
    hparam_fields(exp, errors);
    sweep_axes(exp, &recorded, errors);
    search_space(exp, &recorded, errors);
    resume_needs_checkpoints(exp, errors);
    devices_fit_the_strategy(exp, errors);
    our_loop_only(exp, errors);
    data_parallel_steps(exp, errors);
    fine_tuning(exp, errors);
    augment_arity(exp, errors);
    callbacks_are_values(exp, errors);
    config_fields_read(exp, errors);
    if let Some(step) = &exp.step
        && let Some(span) = step_question_mark(step)
    {
        err(
            errors,
            span,
            "a step cannot fail: this `?` has no `Result` to return to",
            "do fallible work where it may fail, in the `loader` or `model` expressions (they take `?`), or handle the error here, e.g. `.expect(\"why it cannot fail\")`",
        );
    }
}

/// The first `?` of the step's own body (not of a closure or item inside it), which rustc would
/// report against "this function", the whole `training!` invocation.
pub fn step_question_mark(step: &Step) -> Option<Span> {
    use syn::visit::Visit;
    #[derive(Default)]
    struct FirstTry(Option<Span>);
    impl<'a> Visit<'a> for FirstTry {
        fn visit_expr_try(&mut self, node: &'a syn::ExprTry) {
            self.0.get_or_insert(node.question_token.span);
            syn::visit::visit_expr_try(self, node);
        }
        // Closures, async blocks and items have their own return type.
        fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
        fn visit_expr_async(&mut self, _: &'a syn::ExprAsync) {}
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut first = FirstTry::default();
    first.visit_expr(&step.body);
    first.0
}

/// Every expression of the user's, the step's body included.
fn user_expressions(exp: &Experiment) -> impl Iterator<Item = &syn::Expr> {
    let model = exp.model.iter().filter_map(|m| m.init.as_ref());
    let step = exp
        .step
        .iter()
        .chain(exp.steps.iter().flatten().map(|s| &s.step))
        .map(|s| &s.body);
    let loader = exp.loader.iter().flat_map(|l| {
        [&l.train, &l.valid, &l.test, &l.batcher, &l.augment]
            .into_iter()
            .flatten()
    });
    let optimizer = exp.optimizer.iter().filter_map(|o| match o {
        Optimizer::Expr(e) => Some(e),
        Optimizer::Named { .. } => None,
    });
    let metrics = exp
        .metrics
        .iter()
        .flatten()
        .filter_map(|m| m.custom.as_deref());
    let callbacks = exp.callbacks.iter().flatten();
    model
        .chain(step)
        .chain(loader)
        .chain(optimizer)
        .chain(metrics)
        .chain(callbacks)
}

/// Whether `expr` reads a hyperparameter declared without its type or default (reported where
/// it is declared): such an expression is not type-checked against its stand-in type.
pub fn reads_broken_hparam(exp: &Experiment, expr: &syn::Expr) -> bool {
    config_reads(expr)
        .iter()
        .any(|field| exp.hparam(&field.to_string()).is_some_and(|h| h.broken))
}

/// The fields `expr` reads of `config` (none where it binds a `config` of its own).
fn config_reads(expr: &syn::Expr) -> Vec<&Ident> {
    use syn::visit::Visit;
    #[derive(Default)]
    struct Reads<'a> {
        fields: Vec<&'a Ident>,
        shadowed: bool,
    }
    impl<'a> Visit<'a> for Reads<'a> {
        fn visit_expr_field(&mut self, node: &'a syn::ExprField) {
            if let (syn::Expr::Path(base), syn::Member::Named(field)) = (&*node.base, &node.member)
                && base.path.is_ident("config")
            {
                self.fields.push(field);
            }
            syn::visit::visit_expr_field(self, node);
        }
        fn visit_pat_ident(&mut self, node: &'a syn::PatIdent) {
            self.shadowed |= node.ident == "config";
            syn::visit::visit_pat_ident(self, node);
        }
    }
    let mut reads = Reads::default();
    reads.visit_expr(expr);
    if reads.shadowed {
        return Vec::new();
    }
    reads.fields
}

/// Each `config.<name>` in `expr` whose name is neither a hyperparameter of `exp` nor a
/// built-in key; none where the expression binds a `config` of its own.
pub fn unknown_config_fields<'a>(exp: &Experiment, expr: &'a syn::Expr) -> Vec<&'a Ident> {
    config_reads(expr)
        .into_iter()
        .filter(|field| {
            let name = field.to_string();
            !catalog::CONFIG_KEYS.contains(&name.as_str()) && exp.hparam(&name).is_none()
        })
        .collect()
}

/// `config.<name>` where the config has no such field: said in the words of `hparams`, where
/// rustc would list the first five built-in fields.
fn config_fields_read(exp: &Experiment, errors: &mut Errors) {
    // `hparams` given but malformed: which fields it declares is not known.
    if exp.malformed("hparams") {
        return;
    }
    let own = hparam_names(exp);
    let own: Vec<&str> = own.iter().map(String::as_str).collect();
    for expr in user_expressions(exp) {
        for field in unknown_config_fields(exp, expr) {
            let name = field.to_string();
            let fix = match closest(&name, &own) {
                Some(close) => format!("did you mean `{close}`?"),
                None => format!(
                    "declare it as a hyperparameter of the experiment: `hparams: {{ {name}: usize = 3 }}` (any type, with its default)"
                ),
            };
            err(
                errors,
                field.span(),
                &format!("the config has no `{name}`"),
                &fix,
            );
        }
    }
}

/// A literal in `callbacks` is no callback: said here, where rustc would suggest implementing
/// `Callback` for `&str` or `{integer}`.
fn callbacks_are_values(exp: &Experiment, errors: &mut Errors) {
    for callback in exp.callbacks.iter().flatten() {
        if let syn::Expr::Lit(literal) = callback {
            err(
                errors,
                syn::spanned::Spanned::span(literal),
                "this is a literal, not a callback",
                "give a value of your type that implements `Callback`, e.g. `callbacks: [StopAt { accuracy: 90.0 }]`; its hooks (`epoch_end`, `step_end`, ..) all default to doing nothing",
            );
        }
    }
}

/// `augment` takes the item and the random number generator: a closure with another number of
/// parameters would otherwise get rustc's "expected closure that takes 2 arguments", which does
/// not say what the second one is.
fn augment_arity(exp: &Experiment, errors: &mut Errors) {
    let Some(syn::Expr::Closure(closure)) = exp.loader.as_ref().and_then(|l| l.augment.as_ref())
    else {
        return;
    };
    if closure.inputs.len() != 2 {
        let span = syn::spanned::Spanned::span(&closure.inputs);
        let span = if closure.inputs.is_empty() {
            closure.or1_token.span
        } else {
            span
        };
        err(
            errors,
            span,
            &format!(
                "`augment` takes the item and a random number generator, this closure takes {}",
                match closure.inputs.len() {
                    1 => "only the item".to_owned(),
                    n => format!("{n} parameters"),
                }
            ),
            "write `|item, rng| ..`; draw random choices from `rng` (a seeded `StdRng`), or name it `_rng` when the transform uses none",
        );
    }
}

/// Why hyperparameter `i` of `all` cannot be a field of the config.
pub enum HparamClash {
    /// It is named like one of the config's built-in keys.
    BuiltIn,
    /// An earlier one has its name.
    Twice,
}

/// The one rule of which hyperparameters become config fields: the validator reports the
/// others, and the stand-in config after an error leaves them out.
pub fn hparam_clash(all: &[Hparam], i: usize) -> Option<HparamClash> {
    let name = all[i].name.to_string();
    if catalog::CONFIG_KEYS.contains(&name.as_str()) {
        Some(HparamClash::BuiltIn)
    } else if all[..i].iter().any(|h| h.name == all[i].name) {
        Some(HparamClash::Twice)
    } else {
        None
    }
}

/// The names of the experiment's hyperparameters.
fn hparam_names(exp: &Experiment) -> Vec<String> {
    exp.hparams().iter().map(|h| h.name.to_string()).collect()
}

/// A hyperparameter is a new field of the config: not one of its built-in keys, given once.
fn hparam_fields(exp: &Experiment, errors: &mut Errors) {
    let hparams = exp.hparams();
    for (i, hparam) in hparams.iter().enumerate() {
        let name = hparam.name.to_string();
        match hparam_clash(hparams, i) {
            Some(HparamClash::BuiltIn) => err(
                errors,
                hparam.name.span(),
                &format!("`{name}` is already a key of the config"),
                &format!(
                    "give your hyperparameter another name, e.g. `my_{name}`; the built-in `{name}` is set with `--set {name}=..` as it is"
                ),
            ),
            Some(HparamClash::Twice) => err(
                errors,
                hparam.name.span(),
                &format!("hyperparameter `{name}` is declared twice"),
                "declare each hyperparameter once; remove one of the two",
            ),
            None => {}
        }
    }
}

/// Each swept key is a config key a sweep can vary, listed once, with at least one value of
/// its type; the trials need a metric to be ranked by.
fn sweep_axes(exp: &Experiment, recorded: &[MetricRef], errors: &mut Errors) {
    let Some(axes) = &exp.sweep else {
        return;
    };
    for (i, axis) in axes.iter().enumerate() {
        let key = axis.name();
        let Ok(kind) = varied_key(exp, (&axis.key, &axis.path), &SWEEP, errors) else {
            continue;
        };
        if axes[..i].iter().any(|a| a.name() == key) {
            err(
                errors,
                axis.key.span(),
                &format!("`{key}` is swept twice"),
                "list all its values once: `key: [a, b, c]`",
            );
        }
        if axis.values.is_empty() {
            err(
                errors,
                axis.span,
                &format!("`{key}` lists no value"),
                &format!(
                    "give it at least one, e.g. `{key}: [{}]`",
                    kind.map_or_else(|| own_default(exp, &key), |k| k.example().to_owned())
                ),
            );
        }
        let Some(kind) = kind else {
            continue;
        };
        for value in &axis.values {
            if !fits(kind, value) {
                err(
                    errors,
                    value.span(),
                    &format!("`{key}` takes {}", kind.describe()),
                    &format!("write e.g. `{key}: [{}]`", kind.example()),
                );
            }
        }
    }
    let watched = exp
        .checkpoint
        .iter()
        .flatten()
        .any(|p| matches!(p, Policy::Best(_)))
        || recorded.iter().any(MetricRef::is_valid_loss);
    if !watched && let Some(first) = axes.first() {
        // With several optimizers there is no `valid.loss` to add: which player's metric
        // ranks the trials is the user's choice.
        let help = match (&exp.steps, recorded.iter().find(|m| m.split == "valid")) {
            (Some(_), Some(metric)) => format!(
                "say which recorded metric ranks them: `checkpoint: best(valid.{})`",
                metric.key()
            ),
            (Some(_), None) => "record a step's validation metric (e.g. `valid.<step>.loss`) and rank by it: `checkpoint: best(valid.<step>.loss)`".to_owned(),
            (None, _) => "add `valid.loss` to `metrics`, or `checkpoint: best(valid.<metric>)`".to_owned(),
        };
        err(
            errors,
            first.key.span(),
            "a sweep ranks its trials by the metric `best(..)` watches, else `valid.loss`, and this experiment records neither",
            &help,
        );
    }
}

/// A search draws keys a sweep could vary, once each, from distributions that fit the key's
/// type and bounds, towards a recorded objective, with a whole budget of trials.
fn search_space(exp: &Experiment, recorded: &[MetricRef], errors: &mut Errors) {
    use burn_experiment_vocabulary::search::{self, Holds};
    let Some(search) = &exp.search else {
        return;
    };
    if let Some(first) = exp.sweep.iter().flatten().next() {
        err(
            errors,
            first.key.span(),
            "an experiment sweeps or searches, not both",
            "keep `search` (its `space` can draw this key with `choice([..])`) or `sweep`",
        );
    }
    let given = |entry: &str| search.given.iter().any(|g| g == entry);
    if !given("space") || search.space_empty {
        err(
            errors,
            search.span,
            "a search needs a space to draw trials from",
            "add e.g. `space: { lr: log_uniform(1e-4, 1e-1) }`",
        );
    }
    match &search.objective {
        Some((direction, metric)) => {
            must_be_recorded("the objective", metric, recorded, errors);
            objective_direction(direction, metric, errors);
        }
        None if given("objective") => {}
        None => {
            let example = match recorded.iter().find(|m| m.split == "valid") {
                Some(metric) => format!("valid.{}", metric.key()),
                None => "valid.loss".to_owned(),
            };
            err(
                errors,
                search.span,
                "a search needs an objective: the recorded metric it optimizes, and which way",
                &format!("add e.g. `objective: min({example})`"),
            );
        }
    }
    for (name, number) in [("trials", &search.trials), ("seed", &search.seed)] {
        if let Some(number) = number
            && (!number.is_int || (name == "trials" && number.value < 1.0))
        {
            let what = match name {
                "trials" => "a whole number from 1",
                _ => "a whole number",
            };
            err(
                errors,
                number.span,
                &format!("`{name}` of a search is {what}"),
                &format!(
                    "write e.g. `{name}: {}`",
                    if name == "trials" { 30 } else { 0 }
                ),
            );
        }
    }
    for (i, param) in search.space.iter().enumerate() {
        let key = param.name();
        let Ok(kind) = varied_key(exp, (&param.key, &param.path), &SEARCH, errors) else {
            continue;
        };
        if search.space[..i].iter().any(|p| p.name() == key) {
            err(
                errors,
                param.key.span(),
                &format!("`{key}` is searched twice"),
                "draw each key from one distribution",
            );
            continue;
        }
        let holds = match (kind, exp.hparam(&key)) {
            (Some(Values::Number(bound)), _) => Holds::of_bound(bound),
            (Some(_), _) => Holds::Other,
            (None, Some(hparam)) => holds_of(&hparam.ty),
            (None, None) => continue,
        };
        if param.dist == "choice" {
            match (param.values.is_empty(), kind) {
                (true, _) => err(
                    errors,
                    param.span,
                    &format!("`{key}` chooses from no value"),
                    &format!(
                        "list at least two, e.g. `{key}: choice([{}])`",
                        kind.map_or_else(|| own_default(exp, &key), |k| k.example().to_owned())
                    ),
                ),
                (false, Some(kind)) => {
                    for value in &param.values {
                        if !fits(kind, value) {
                            err(
                                errors,
                                value.span(),
                                &format!("`{key}` takes {}", kind.describe()),
                                &format!("write e.g. `{key}: choice([{}])`", kind.example()),
                            );
                        }
                    }
                }
                // An own hyperparameter's values are checked against its type by rustc.
                (false, None) => {}
            }
            continue;
        }
        let [low, high] = [&param.bounds[0], &param.bounds[1]];
        let bound = kind.and_then(|k| match k {
            Values::Number(bound) => Some(bound),
            _ => None,
        });
        if let Err((what, fix)) = search::check(
            &key,
            &param.dist.to_string(),
            low.value,
            high.value,
            holds,
            bound,
        ) {
            // A distribution of the wrong kind is the distribution's mistake; bad bounds are
            // the bounds'.
            let at = match what.contains("` is ") {
                true => param.dist.span(),
                false => param.span,
            };
            err(errors, at, &what, &fix);
        }
    }
}

/// What an own hyperparameter of type `ty` holds.
fn holds_of(ty: &syn::Type) -> burn_experiment_vocabulary::search::Holds {
    use burn_experiment_vocabulary::search::Holds;
    let syn::Type::Path(path) = ty else {
        return Holds::Other;
    };
    match path.path.get_ident().map(ToString::to_string).as_deref() {
        Some("f32" | "f64") => Holds::Float,
        Some("u8" | "u16" | "u32" | "u64" | "usize" | "i8" | "i16" | "i32" | "i64" | "isize") => {
            Holds::Whole
        }
        _ => Holds::Other,
    }
}

/// A hyperparameter's default as written, for an example of its values.
fn own_default(exp: &Experiment, key: &str) -> String {
    let default = exp.hparam(key).map(|h| &h.default);
    quote::quote!(#default).to_string()
}

fn fits(kind: Values, value: &syn::Lit) -> bool {
    let number = |value: &syn::Lit| match value {
        syn::Lit::Int(i) => i.base10_parse::<f64>().ok(),
        syn::Lit::Float(f) => f.base10_parse::<f64>().ok(),
        _ => None,
    };
    match kind {
        // A whole bound takes integer literals only (`16`, not `16.0`).
        Values::Number(bound @ Bound::Whole { .. }) => {
            matches!(value, syn::Lit::Int(_)) && number(value).is_some_and(|v| bound.admits(v))
        }
        Values::Number(bound) => number(value).is_some_and(|v| bound.admits(v)),
        Values::Bool => matches!(value, syn::Lit::Bool(_)),
        Values::Text => matches!(value, syn::Lit::Str(_)),
    }
}

/// `freeze` paths are non-empty, `unfreeze` is an epoch and has something to unfreeze,
/// `init_from` names a file. Whether the paths exist is known only at run time, from the model.
fn fine_tuning(exp: &Experiment, errors: &mut Errors) {
    for (path, span) in exp.freeze.iter().flatten() {
        module_path(path, *span, errors);
    }
    if let Some(n) = &exp.unfreeze {
        if !n.is_constant() && (!n.is_int || !bounds::of("unfreeze").admits(n.value)) {
            err(
                errors,
                n,
                "`unfreeze` is the epoch the frozen paths train again from: a whole number of at least 1",
                "write e.g. `unfreeze: 3`",
            );
        } else if exp.freeze.is_none() && !exp.malformed("freeze") {
            err(
                errors,
                n,
                "`unfreeze` has nothing to unfreeze",
                "add `freeze: [..]` with the parts of the model to keep frozen until then",
            );
        }
    }
    for (path, span, lr) in exp.groups.iter().flatten() {
        module_path(path, *span, errors);
        if lr.value < 0.0 || lr.value.is_nan() {
            err(
                errors,
                lr,
                &format!(
                    "a group's learning rate must be 0 or more, not {}",
                    lr.value
                ),
                "write e.g. `lr(1e-4)`, or `lr(0.0)` to hold the group still",
            );
        }
    }
    if let Some(lora) = &exp.lora {
        match &lora.rank {
            Some(rank) if !rank.is_int || rank.value < 1.0 => err(
                errors,
                rank,
                "the LoRA rank is a whole number of at least 1",
                "write e.g. `rank: 4`",
            ),
            None => err(
                errors,
                lora.span,
                "`lora` needs a rank",
                "write `lora: { rank: 4, alpha: 8, on: [..] }`",
            ),
            _ => {}
        }
        if let Some(alpha) = &lora.alpha
            && (alpha.value <= 0.0 || alpha.value.is_nan())
        {
            err(
                errors,
                alpha,
                "the LoRA alpha must be positive",
                "write e.g. `alpha: 8` (adapters add alpha / rank · a @ b)",
            );
        }
        if lora.on.is_empty() {
            err(
                errors,
                lora.span,
                "`lora` adapts nothing",
                "name the layers: `on: [fc1, fc2]`",
            );
        }
    }
    if let Some(decay) = &exp.ema
        && !decay.is_constant()
        && !bounds::of("ema").admits(decay.value)
    {
        err(
            errors,
            decay,
            &format!("the `ema` decay must be in (0, 1), not {}", decay.value),
            "write e.g. `ema: 0.999` (each step keeps 99.9 % of the average)",
        );
    }
    if let Some(device) = &exp.device {
        device_name(device, errors);
    }
    if let Some(path) = &exp.init_from
        && path.value().is_empty()
    {
        err(
            errors,
            path.span(),
            "`init_from` needs a file",
            "write e.g. `init_from: \"pretrained.safetensors\"`",
        );
    }
}

/// The device name's spelling; whether its backend was built in is known only at run time.
fn device_name(device: &syn::LitStr, errors: &mut Errors) {
    if let Err(message) = burn_experiment_vocabulary::device::split(&device.value()) {
        err(
            errors,
            device.span(),
            &message,
            &format!("write {}", burn_experiment_vocabulary::device::SPELLINGS),
        );
    }
}

/// A module path is dot-separated names, none of them empty; whether the model has it is known
/// only at run time.
fn module_path(path: &str, span: Span, errors: &mut Errors) {
    if path.is_empty() || path.split('.').any(str::is_empty) {
        err(
            errors,
            span,
            &format!("`{path}` is not a module path"),
            "write a field of the model, e.g. `fc1` or `\"layers.0\"`",
        );
    }
}

/// A data-parallel step already sums one batch per rank: the run equals one process with
/// `grad_accumulation` set to the number of ranks, so the two keys together have no meaning.
/// Mixed precision is not implemented on the ranks' exchange yet.
fn data_parallel_steps(exp: &Experiment, errors: &mut Errors) {
    if let (Some(_), Some(precision)) = (&exp.data_parallel, exp.low_precision()) {
        err(
            errors,
            precision.span(),
            "`precision` is not supported with `data_parallel` yet",
            "remove `precision` to train data-parallel in f32, or remove `data_parallel`",
        );
    }
    if let (Some(_), Some(accumulation)) = (&exp.data_parallel, &exp.grad_accumulation)
        && (accumulation.value > 1.0 || accumulation.is_constant())
    {
        err(
            errors,
            accumulation.span,
            "`grad_accumulation` cannot be combined with `data_parallel`: each optimizer step already sums one batch per process",
            "remove `grad_accumulation` and launch more processes (`mpirun -n N` steps on N batches)",
        );
    }
    if let (Some(_), Some(Clip::ParamNorm(max))) = (&exp.data_parallel, &exp.grad_clip) {
        err(
            errors,
            max,
            "`param_norm` needs each parameter's whole gradient, which `data_parallel` holds in slices across processes",
            "use `grad_clip: norm(..)` (one global norm, exact across processes) or `value(..)`",
        );
    }
}

/// Burn's Learner has no hook that can stop a run or save state in its checkpoints, nor one
/// that averages weights after each step, and its checkpoints carry no history to find the
/// best one by: an experiment that may run on it can have no callbacks, test split or `ema`.
fn our_loop_only(exp: &Experiment, errors: &mut Errors) {
    if !exp.has_burn_engine() {
        return;
    }
    let span = syn::spanned::Spanned::span;
    let loader = exp.loader.as_ref();
    for feature in burn_experiment_vocabulary::engine::OURS_ONLY {
        let at = match feature.key {
            "callbacks" => exp.callbacks.iter().flatten().next().map(span),
            "at_epoch_end" => exp.at_epoch_end.as_deref().map(span),
            "after_step" => match &exp.after_step {
                Some(AfterStep::All(hook)) => Some(span(hook)),
                Some(AfterStep::Per(hooks)) => hooks.first().map(|(name, _)| name.span()),
                None => None,
            },
            "test" => loader.and_then(|l| l.test.as_ref()).map(span),
            "augment" => loader.and_then(|l| l.augment.as_ref()).map(span),
            "ema" => exp.ema.as_ref().map(|n| n.span),
            "data_parallel" => exp.data_parallel.as_ref().map(Ident::span),
            "lora" => exp.lora.as_ref().map(|l| l.span),
            "init_from" => exp.init_from.as_ref().map(syn::LitStr::span),
            "freeze" => exp.freeze.iter().flatten().next().map(|(_, span)| *span),
            "lr_schedule" => match &exp.lr_schedule {
                Some(Schedule::Plateau { factor, .. }) => Some(factor.span),
                _ => None,
            },
            "gradient_checkpointing" => exp
                .gradient_checkpointing
                .as_ref()
                .filter(|b| b.value)
                .map(|b| b.span),
            "precision" => exp.low_precision().map(Ident::span),
            other => unreachable!("`{other}` of OURS_ONLY has no span here"),
        };
        if let Some(at) = at {
            let key = match feature.key {
                "lr_schedule" => "`lr_schedule: plateau(..)`".to_owned(),
                key => format!("`{key}`"),
            };
            err(
                errors,
                at,
                &format!(
                    "{} this crate's fit loop, and this experiment can run on Burn's engine (it has an `engine`, `strategy` or `devices` key)",
                    feature.needs
                ),
                &format!("remove those keys to train on our loop, or remove {key}"),
            );
        }
    }
}

/// `multi` and `ddp` need two devices or more; `single` needs one; counts are whole.
fn devices_fit_the_strategy(exp: &Experiment, errors: &mut Errors) {
    count(errors, "devices", &exp.devices);
    let devices = exp.devices.as_ref().map_or(1, Number::as_usize);
    match &exp.strategy {
        Some(s) if s != "single" && devices < 2 => err(
            errors,
            s.span(),
            &format!("`{s}` needs at least two devices, and this experiment has {devices}"),
            "add `devices: 2` (or more), or use `strategy: single`",
        ),
        Some(s) if s == "single" && devices > 1 => err(
            errors,
            exp.devices.as_ref().map_or(s.span(), |n| n.span),
            &format!("`single` runs on one device, not {devices}"),
            "use `strategy: multi` (or `ddp` on CUDA), or `devices: 1`",
        ),
        _ => {}
    }
}

/// Resuming reads checkpoints, so the run must write them; epochs are numbered from 1.
fn resume_needs_checkpoints(exp: &Experiment, errors: &mut Errors) {
    let Some(resume) = &exp.resume else { return };
    let span = match resume {
        ResumeFrom::Latest(ident) => ident.span(),
        ResumeFrom::Epoch(n) => {
            if !n.is_int || n.value < 1.0 {
                err(
                    errors,
                    n,
                    "epochs are numbered from 1",
                    "write e.g. `resume: epoch(3)`",
                );
            }
            n.span
        }
    };
    let writes =
        matches!(&exp.checkpoint, Some(p) if !p.iter().any(|p| matches!(p, Policy::None(_))));
    // A `checkpoint` given but malformed is that key's error alone.
    if !writes && !exp.malformed("checkpoint") {
        err(
            errors,
            span,
            "`resume` needs checkpoints, but this experiment writes none",
            "add e.g. `checkpoint: keep_last(2)`",
        );
    }
}

fn err(errors: &mut Errors, at: impl At, what: &str, fix: &str) {
    errors.push(at.error(format!("{what}\nhelp: {fix}")));
}

/// Where an error points: a token, or a number from its sign to its last digit.
trait At {
    fn error(&self, message: String) -> syn::Error;
}

impl At for Span {
    fn error(&self, message: String) -> syn::Error {
        syn::Error::new(*self, message)
    }
}

impl At for &Number {
    fn error(&self, message: String) -> syn::Error {
        // A span from one token to another without `Span::join` (unstable): syn keeps the
        // first and last spans of what it is given.
        let ends = [self.span, self.end].map(|span| {
            let mut punct = proc_macro2::Punct::new('-', proc_macro2::Spacing::Alone);
            punct.set_span(span);
            proc_macro2::TokenTree::Punct(punct)
        });
        syn::Error::new_spanned(
            ends.into_iter().collect::<proc_macro2::TokenStream>(),
            message,
        )
    }
}

/// `name`, `model`, `step`, `loader`, `optimizer` and `epochs` are required, and so are the
/// loader's `train`, `valid`, `batcher` and `batch_size`.
fn required_keys(exp: &Experiment, errors: &mut Errors) {
    let missing = [
        ("name", exp.name.is_none(), "name: MyExperiment"),
        (
            "model",
            exp.model.is_none(),
            "model: Mlp = Mlp::new(device)",
        ),
        (
            "step",
            exp.step.is_none() && exp.steps.is_none() && !exp.malformed("steps"),
            "step: |model, batch: Batch| -> ClassificationOutput { .. }",
        ),
        (
            "loader",
            exp.loader.is_none(),
            "loader: { train: .., valid: .., batcher: .., batch_size: 32 }",
        ),
        (
            "optimizer",
            exp.optimizer.is_none() && exp.optimizers.is_none() && !exp.malformed("optimizers"),
            "optimizer: adam(lr = 1e-3)",
        ),
        ("epochs", exp.epochs.is_none(), "epochs: 10"),
    ];
    for (key, absent, example) in missing {
        if absent && !exp.given.iter().any(|k| k == key) {
            err(
                errors,
                exp.span,
                &format!("missing required key `{key}`"),
                &format!("add `{example}`"),
            );
        }
    }
    if let Some(loader) = &exp.loader {
        let missing = [
            ("train", loader.train.is_none(), "train: my_dataset()"),
            ("valid", loader.valid.is_none(), "valid: my_dataset()"),
            ("batcher", loader.batcher.is_none(), "batcher: MyBatcher"),
            ("batch_size", loader.batch_size.is_none(), "batch_size: 32"),
        ];
        for (key, absent, example) in missing {
            if absent && !loader.given.iter().any(|k| k == key) {
                err(
                    errors,
                    loader.span,
                    &format!("`loader` is missing `{key}`"),
                    &format!("add `{example}`"),
                );
            }
        }
    }
}

/// A count within its bound (`burn_experiment_vocabulary::bounds`), written as a whole number.
///
/// A constant's value is rustc's: the runtime checks it against the same bound at start-up.
fn count(errors: &mut Errors, key: &str, n: &Option<Number>) {
    let Some(n) = n.as_ref().filter(|n| !n.is_constant()) else {
        return;
    };
    let bound = bounds::of(key);
    if !n.is_int || !bound.admits(n.value) {
        let example = match bound {
            Bound::Whole { min, .. } => min.max(1),
            _ => 1,
        };
        err(
            errors,
            n,
            &format!("`{key}` must be {}", bound.describe()),
            &format!("write e.g. `{key}: {example}`"),
        );
    }
}

/// Epochs, batch size and accumulation are at least 1; seeds and worker counts are whole.
fn positive_counts(exp: &Experiment, errors: &mut Errors) {
    count(errors, "epochs", &exp.epochs);
    count(errors, "grad_accumulation", &exp.grad_accumulation);
    count(errors, "seed", &exp.seed);
    if let Some(loader) = &exp.loader {
        count(errors, "batch_size", &loader.batch_size);
        count(errors, "workers", &loader.workers);
        count(errors, "shuffle", &loader.shuffle);
    }
    if let Some(Clip::Norm(n) | Clip::ParamNorm(n) | Clip::Value(n)) = &exp.grad_clip
        && !n.is_constant()
        && !bounds::of("grad_clip").admits(n.value)
    {
        err(
            errors,
            n,
            "gradient clipping needs a positive bound",
            "write e.g. `grad_clip: norm(1.0)`",
        );
    }
}

/// Exactly one learning rate: in `sgd/adam/adamw(lr = ..)`, or as `lr:` beside an optimizer
/// expression; and it is positive. None beside Burn's scheduler, which sets the rate.
fn learning_rate(exp: &Experiment, errors: &mut Errors) {
    // A rejected optimizer's error is the one (a quoted `optimizer: "adam"` is read, unquoted,
    // only for the names it declares).
    if exp.malformed("optimizer") {
        return;
    }
    let mut schedule = exp.lr_schedule.as_ref();
    while let Some(Schedule::WarmUp { then, .. }) = schedule {
        schedule = Some(then);
    }
    if let Some(Schedule::Burn(_)) = schedule
        && exp.burn_schedule().is_none()
    {
        // Inside a warm-up: that error is the one (`burn_schedule_alone`).
        return;
    }
    if exp.burn_schedule().is_some() {
        let named = match &exp.optimizer {
            Some(Optimizer::Named { lr, .. }) => lr.as_ref(),
            _ => None,
        };
        for lr in named.into_iter().chain(&exp.lr) {
            err(
                errors,
                lr,
                "the learning rate is set by Burn's scheduler in `lr_schedule`",
                "remove `lr`: the scheduler gives every step's rate, as with Burn's `Learner`",
            );
        }
        return;
    }
    let lr = match (&exp.optimizer, &exp.lr) {
        (
            Some(Optimizer::Named {
                lr: Some(_), name, ..
            }),
            Some(top),
        ) => {
            err(
                errors,
                top,
                "the learning rate is given twice",
                &format!("keep `{name}(lr = ..)` and remove the `lr` key"),
            );
            None
        }
        // An unknown argument may be the learning rate misspelt: that error alone.
        (
            Some(Optimizer::Named {
                lr: None,
                name,
                args,
            }),
            None,
        ) if args.iter().all(|(arg, _)| {
            burn_experiment_vocabulary::optimizer::named(&name.to_string())
                .is_none_or(|spec| spec.arg(&arg.to_string()).is_some())
        }) =>
        {
            err(
                errors,
                name.span(),
                &format!("`{name}` needs a learning rate"),
                &format!("write `{name}(lr = 1e-3)`"),
            );
            None
        }
        (Some(Optimizer::Expr(expr)), None) => {
            errors.push(syn::Error::new_spanned(
                expr,
                "an optimizer expression needs a learning rate beside it\nhelp: add the key `lr: 1e-3` (or use `sgd(lr = ..)`, `adam(lr = ..)`, `adamw(lr = ..)`)",
            ));
            None
        }
        (Some(Optimizer::Named { lr, .. }), None) => lr.as_ref(),
        (_, top) => top.as_ref(),
    };
    if let Some(lr) = lr
        && !lr.is_constant()
        && !bounds::of("lr").admits(lr.value)
    {
        err(
            errors,
            lr,
            &format!("the learning rate must be positive, not {}", lr.value),
            "write e.g. `lr = 1e-3`",
        );
    }
}

/// Each optimizer accepts only its own arguments, each within its range.
fn optimizer_arguments(exp: &Experiment, errors: &mut Errors) {
    let named = exp.optimizers.iter().flatten().map(|o| &o.optimizer);
    for optimizer in exp.optimizer.iter().chain(named) {
        arguments_in_range(optimizer, errors);
    }
}

/// Each argument of a named optimizer is one of its own, inside its range.
fn arguments_in_range(optimizer: &Optimizer, errors: &mut Errors) {
    let Optimizer::Named { name, args, .. } = optimizer else {
        return;
    };
    let spec = burn_experiment_vocabulary::optimizer::named(&name.to_string())
        .expect("parsed names are known");
    for (arg, value) in args {
        match spec.arg(&arg.to_string()) {
            None => err(
                errors,
                arg.span(),
                &format!("`{name}` has no argument `{arg}`"),
                &crate::parse::optimizer_synonym(arg, spec).unwrap_or_else(|| {
                    format!("its arguments are: lr, {}", spec.arg_names().join(", "))
                }),
            ),
            Some(known) if !value.is_constant() && !known.range.contains(value.value) => err(
                errors,
                value,
                &format!(
                    "`{}` must be {}, not {}",
                    known.name,
                    known.range.describe(),
                    value.value
                ),
                &format!("write e.g. `{}`", example(known.name)),
            ),
            Some(_) => {}
        }
    }
}

/// A value inside the range of optimizer argument `name`, for hints.
fn example(name: &str) -> &'static str {
    match name {
        "momentum" => "momentum = 0.9",
        "beta_1" => "beta_1 = 0.9",
        "beta_2" => "beta_2 = 0.999",
        "epsilon" => "epsilon = 1e-8",
        "alpha" => "alpha = 0.99",
        "lr_decay" => "lr_decay = 0",
        _ => "weight_decay = 1e-4",
    }
}

/// Splits and metric names are known, arguments present where needed, no metric twice.
/// Returns the metrics that passed, as recorded by the run.
fn metric_list(exp: &Experiment, errors: &mut Errors) -> Vec<MetricRef> {
    let splits = splits(exp);
    let mut recorded: Vec<MetricRef> = Vec::new();
    for metric in exp.metrics.iter().flatten() {
        if metric_step(exp, metric, errors) && check_metric_ref(metric, &splits, errors) {
            if recorded.iter().any(|m| m.same_metric(metric)) {
                err(
                    errors,
                    metric.name.span(),
                    &format!("`{}.{}` is listed twice", metric.split, metric.key()),
                    "remove one of the two",
                );
            } else {
                recorded.push(metric.clone());
            }
        } else if let Some(meant) = meant_metric(metric, &splits)
            && !recorded.iter().any(|m| m.same_metric(&meant))
        {
            // Counted as recorded, so `best(..)` or `plateau(..)` naming what was meant is not
            // a second error for the same slip.
            recorded.push(meant);
        }
    }
    if exp.metrics.is_none() {
        recorded = match exp.malformed("metrics") {
            // What a malformed `metrics` records is not known, and its error is the one: the
            // metrics other keys watch count as recorded.
            true => watched_metrics(exp),
            false => default_metrics(exp),
        };
    }
    recorded
}

/// A search that minimizes a metric better high (or maximizes a loss) ranks its worst trial
/// best: an error at the direction, not a silent study.
fn objective_direction(direction: &Ident, metric: &MetricRef, errors: &mut Errors) {
    if metric.custom.is_some() || metric.step.is_some() {
        return;
    }
    let Some(higher) =
        burn_experiment_vocabulary::metrics::higher_is_better(&metric.name.to_string())
    else {
        return;
    };
    let maximize = direction == "max";
    if maximize != higher {
        let (better, right) = if higher {
            ("high", "max")
        } else {
            ("low", "min")
        };
        err(
            errors,
            direction.span(),
            &format!(
                "`{direction}({}.{})` would rank the worst trial best: {} is better {better}",
                metric.split, metric.name, metric.name
            ),
            &format!(
                "write `objective: {right}({}.{})`",
                metric.split, metric.name
            ),
        );
    }
}

/// The metrics `best(..)`, `early_stopping`, `plateau` and a search's objective name.
fn watched_metrics(exp: &Experiment) -> Vec<MetricRef> {
    let best = exp.checkpoint.iter().flatten().filter_map(|p| match p {
        Policy::Best(metric) => Some(metric.clone()),
        _ => None,
    });
    let stop = exp.early_stopping.iter().map(|rule| rule.metric.clone());
    let plateau = match &exp.lr_schedule {
        Some(Schedule::Plateau { metric, .. }) => Some(metric.clone()),
        _ => None,
    };
    let objective = exp
        .search
        .iter()
        .filter_map(|search| Some(search.objective.as_ref()?.1.clone()));
    best.chain(stop).chain(plateau).chain(objective).collect()
}

/// The metric a rejected `split.metric` most likely meant: its split and name, each the
/// closest valid one.
fn meant_metric(metric: &MetricRef, splits: &[&str]) -> Option<MetricRef> {
    let split = metric.split.to_string();
    let split = if splits.contains(&split.as_str()) {
        split
    } else {
        closest(&split, splits)?.to_owned()
    };
    let name = metric.name.to_string();
    let names: Vec<&str> = catalog::METRICS.iter().map(|m| m.name).collect();
    let name = if metric.custom.is_some() || names.contains(&name.as_str()) {
        name
    } else {
        closest(&name, &names)?.to_owned()
    };
    // `valid.accuracy(2)` meant `valid.accuracy`, which `best(valid.accuracy)` then finds.
    let arg = match catalog::metric(&name).map(|m| m.arg) {
        Some(MetricArg::None) => None,
        _ => metric.arg.clone(),
    };
    Some(MetricRef {
        split: Ident::new(&split, metric.split.span()),
        name: Ident::new(&name, metric.name.span()),
        arg,
        ..metric.clone()
    })
}

/// The splits metrics can be recorded on: `test` only with a `loader: { test: .. }`.
fn splits(exp: &Experiment) -> Vec<&'static str> {
    // Without a loader that could be read, whether it has a test split is not known: its own
    // error says what is wrong, and `test.*` adds none.
    let has_test = exp.loader.as_ref().is_none_or(|l| l.test.is_some());
    SPLITS
        .iter()
        .copied()
        .filter(|s| *s != "test" || has_test)
        .collect()
}

/// The metrics recorded when `metrics` is absent: `train.loss` and `valid.loss`, or each
/// step's loss in a several-optimizer experiment.
pub fn default_metrics(exp: &Experiment) -> Vec<MetricRef> {
    let steps: Vec<Option<Ident>> = match &exp.steps {
        Some(steps) => steps.iter().map(|s| Some(s.name.clone())).collect(),
        None => vec![None],
    };
    // No token of the user's names them: with several steps they sit at the steps, where a
    // step output that cannot be measured is reported.
    let span = match &exp.steps {
        Some(_) => exp.steps_span,
        None => Span::call_site(),
    };
    ["train", "valid"]
        .iter()
        .flat_map(|split| {
            steps.iter().map(move |step| MetricRef {
                split: syn::Ident::new(split, span),
                step: step.clone(),
                name: syn::Ident::new("loss", span),
                arg: None,
                custom: None,
            })
        })
        .collect()
}

/// One `split.metric(arg)` or `split.metric(name = expr)`: known split, known metric (or a
/// name of the user's own that no catalogue metric has), right argument.
fn check_metric_ref(metric: &MetricRef, splits: &[&str], errors: &mut Errors) -> bool {
    let split = metric.split.to_string();
    let mut ok = true;
    if !splits.contains(&split.as_str()) {
        let fix = if split == "test" {
            "add a test split to the loader: `loader: { .., test: my_test_dataset() }`".to_owned()
        } else {
            format!(
                "use {}",
                splits
                    .iter()
                    .map(|s| format!("`{s}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        err(
            errors,
            metric.split.span(),
            &format!("unknown split `{split}`"),
            &fix,
        );
        ok = false;
    }
    let name = metric.name.to_string();
    if let Some(expr) = &metric.custom {
        if name == "metric" {
            err(
                errors,
                syn::spanned::Spanned::span(expr),
                &format!("name your metric: write `{split}.metric(my_name = <metric>)`"),
                "the name is its column in metrics.csv and what `best(..)` and `patience(..)` refer to",
            );
            ok = false;
        } else if let syn::Expr::Lit(literal) = &**expr {
            err(
                errors,
                syn::spanned::Spanned::span(literal),
                "this is a literal, not a metric",
                &format!(
                    "give a value of a Burn metric type, e.g. `{split}.metric({name} = MyMetric::new())`"
                ),
            );
            ok = false;
        } else if catalog::metric(&name).is_some() {
            err(
                errors,
                metric.name.span(),
                &format!("`{name}` is the name of a built-in metric"),
                &format!(
                    "give your metric another name, e.g. `{split}.metric(my_{name} = ..)`, or use `{split}.{name}`"
                ),
            );
            ok = false;
        }
        return ok;
    }
    let names = catalog::metric_names();
    match catalog::metric(&name).map(|m| m.arg) {
        None => {
            let all = catalog::METRICS
                .iter()
                .map(|m| format!("{} ({})", m.name, m.outputs))
                .collect::<Vec<_>>()
                .join(", ");
            let synonym = burn_experiment_vocabulary::synonyms::find(
                burn_experiment_vocabulary::synonyms::METRICS,
                &name,
            );
            let hint = match (synonym, closest(&name, &names)) {
                (Some(synonym), _) => synonym.help(),
                (None, Some(k)) => format!("did you mean `{k}`?"),
                (None, None) => format!(
                    "the metrics (and the outputs that feed them) are: {all}; for any other Burn metric write `{split}.metric(name = MyMetric::new())`"
                ),
            };
            err(
                errors,
                metric.name.span(),
                &format!("unknown metric `{name}`"),
                &hint,
            );
            ok = false;
        }
        Some(MetricArg::Count | MetricArg::Positive) => match &metric.arg {
            None => {
                err(
                    errors,
                    metric.name.span(),
                    &format!("`{name}` needs an argument"),
                    &format!(
                        "write `{split}.{name}({})`",
                        if name == "top_k" { "5" } else { "0.5" }
                    ),
                );
                ok = false;
            }
            Some(arg) if name == "top_k" && (!arg.is_int || arg.value < 1.0) => {
                err(
                    errors,
                    arg,
                    "`top_k` needs a whole number k of at least 1",
                    "write e.g. `valid.top_k(5)`",
                );
                ok = false;
            }
            Some(arg) if arg.value <= 0.0 => {
                err(
                    errors,
                    arg,
                    &format!("`{name}` needs a positive argument"),
                    "write e.g. `valid.fbeta(0.5)`",
                );
                ok = false;
            }
            Some(_) => {}
        },
        Some(MetricArg::None) => {
            if let Some(arg) = &metric.arg {
                err(
                    errors,
                    arg,
                    &format!("`{name}` takes no argument"),
                    &format!("write `{split}.{name}`"),
                );
                ok = false;
            }
        }
    }
    ok
}

/// A metric named by `best(..)` or `patience(..)` must be recorded on that split, a split
/// measured every epoch; the user's own metrics are named by their name alone.
fn must_be_recorded(what: &str, metric: &MetricRef, recorded: &[MetricRef], errors: &mut Errors) {
    let key = format!("{}.{}", metric.split, metric.key());
    if metric.custom.is_some() {
        err(
            errors,
            metric.name.span(),
            &format!("{what} names a metric by its name alone"),
            &format!("define it in `metrics` and write `{key}` here"),
        );
        return;
    }
    if metric.split == "test" {
        err(
            errors,
            metric.split.span(),
            &format!("{what} cannot watch the test split: it is measured once, after training"),
            &format!("watch a validation metric, e.g. `valid.{}`", metric.key()),
        );
        return;
    }
    if recorded.iter().any(|m| m.same_metric(metric)) {
        return;
    }
    let own = recorded
        .iter()
        .any(|m| m.custom.is_some() && m.name == metric.name && metric.arg.is_none());
    // A slip in the name of a metric the experiment records (its own among them) is named
    // after what it records, not after the catalogue.
    let name = metric.name.to_string();
    if !own && catalog::metric(&name).is_none() {
        let keys: Vec<String> = recorded
            .iter()
            .filter(|m| m.split == metric.split)
            .map(MetricRef::key)
            .collect();
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        if let Some(meant) = closest(&metric.key(), &keys) {
            err(
                errors,
                metric.name.span(),
                &format!("{what} uses `{key}`, which is not recorded"),
                &format!("did you mean `{}.{meant}`?", metric.split),
            );
            return;
        }
    }
    if !own && !check_metric_ref(metric, &["train", "valid"], errors) {
        return;
    }
    // With several optimizers a metric is a step's: `valid.loss` does not exist to add.
    let help = match recorded.iter().find(|m| {
        metric.step.is_none()
            && m.step.is_some()
            && m.split == metric.split
            && m.name == metric.name
    }) {
        Some(step_metric) => format!(
            "with several optimizers a metric is a step's: did you mean `{}.{}`?",
            step_metric.split,
            step_metric.key()
        ),
        None => format!("add `{key}` to `metrics`"),
    };
    err(
        errors,
        metric.name.span(),
        &format!("{what} uses `{key}`, which is not recorded"),
        &help,
    );
}

/// `keep_last(n ≥ 1)`, `every(k ≥ 1)`, `best(recorded metric)`, and `none` only alone.
fn checkpoint_policies(exp: &Experiment, recorded: &[MetricRef], errors: &mut Errors) {
    let Some(policies) = &exp.checkpoint else {
        return;
    };
    for policy in policies {
        match policy {
            Policy::KeepLast(n)
                if !n.is_constant() && (!n.is_int || !bounds::of("keep_last").admits(n.value)) =>
            {
                err(
                    errors,
                    n,
                    "`keep_last` must keep at least 1 checkpoint",
                    "write `keep_last(1)` or more, or `checkpoint: none`",
                );
            }
            Policy::Every(n)
                if !n.is_constant() && (!n.is_int || !bounds::of("every").admits(n.value)) =>
            {
                err(
                    errors,
                    n,
                    "`every` needs a period of at least 1 epoch",
                    "write e.g. `every(5)`",
                );
            }
            Policy::Best(metric) => must_be_recorded("`best`", metric, recorded, errors),
            Policy::None(ident) if policies.len() > 1 => {
                err(
                    errors,
                    ident.span(),
                    "`none` cannot be combined with other policies",
                    "remove `none`, or keep it alone",
                );
            }
            _ => {}
        }
    }
}

fn early_stopping(exp: &Experiment, recorded: &[MetricRef], errors: &mut Errors) {
    let Some(rule) = &exp.early_stopping else {
        return;
    };
    if !rule.patience.is_constant()
        && (!rule.patience.is_int || !bounds::of("patience").admits(rule.patience.value))
    {
        err(
            errors,
            &rule.patience,
            "patience must be a whole number of at least 1 epoch",
            "write e.g. `patience(5, valid.loss)`",
        );
    }
    if let Some(delta) = &rule.min_delta
        && !delta.is_constant()
        && delta.value < 0.0
    {
        err(
            errors,
            delta,
            "`min_delta` cannot be negative",
            "use 0 or more",
        );
    }
    must_be_recorded("early stopping", &rule.metric, recorded, errors);
}

/// A hook named after an optimizer is for an experiment with several, and names one of them.
fn after_step_hooks(exp: &Experiment, errors: &mut Errors) {
    let Some(AfterStep::Per(hooks)) = &exp.after_step else {
        return;
    };
    let names: Vec<String> = exp
        .steps
        .iter()
        .flatten()
        .map(|s| s.name.to_string())
        .collect();
    for (name, _) in hooks {
        if names.is_empty() {
            err(
                errors,
                name.span(),
                "a hook named after an optimizer is for several optimizers; this experiment has one",
                "write `after_step: |model| ..`: it runs after every optimizer step",
            );
            return;
        }
        if !names.contains(&name.to_string()) {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let fix = match crate::errors::closest(&name.to_string(), &names) {
                Some(close) => format!("did you mean `{close}`?"),
                None => format!("the steps are {}", names.join(", ")),
            };
            err(
                errors,
                name.span(),
                &format!("no step is taken by an optimizer named `{name}`"),
                &fix,
            );
        }
    }
}

/// Burn's scheduler sets one rate for the whole model: nothing else may set a base rate to
/// scale, and a warm-up of ours cannot lead into it.
fn burn_schedule_alone(exp: &Experiment, errors: &mut Errors) {
    if let Some(expr) = exp.burn_schedule() {
        if let Some((_, span, _)) = exp.groups.as_ref().and_then(|g| g.first()) {
            err(
                errors,
                *span,
                "`groups` scales a base rate, and Burn's scheduler in `lr_schedule` sets the rate itself",
                "use a named schedule with `lr` (`lr_schedule: cosine(min = 0.0)`), or remove `groups`",
            );
        }
        if exp.optimizers.is_some() || exp.steps.is_some() {
            errors.push(syn::Error::new_spanned(
                expr,
                "Burn's scheduler gives one rate, and each of several optimizers has its own\nhelp: use a named schedule, which scales each optimizer's `lr`",
            ));
        }
    }
    let mut next = exp.lr_schedule.as_ref();
    while let Some(Schedule::WarmUp { then, .. }) = next {
        if let Schedule::Burn(expr) = &**then {
            errors.push(syn::Error::new_spanned(
                expr,
                "a warm-up leads into one of the named schedules; Burn's scheduler sets the rate itself\nhelp: write the warm-up inside it: Burn's `SequentialLrSchedulerConfig` (or `ComposedLrSchedulerConfig`) with a `LinearLrSchedulerConfig`",
            ));
        }
        next = Some(then);
    }
}

fn schedule_values(exp: &Experiment, errors: &mut Errors) {
    let mut next = exp.lr_schedule.as_ref();
    while let Some(schedule) = next {
        next = None;
        match schedule {
            Schedule::Exponential { gamma } | Schedule::Step { gamma, .. }
                if !(gamma.is_constant() || gamma.value > 0.0 && gamma.value <= 1.0) =>
            {
                err(
                    errors,
                    gamma,
                    "`gamma` must be in (0, 1]",
                    "write e.g. `gamma = 0.9`",
                );
            }
            Schedule::Step { every, epochs, .. }
                if !every.is_constant() && (!every.is_int || every.value < 1.0) =>
            {
                let unit = if *epochs { "epochs" } else { "steps" };
                err(
                    errors,
                    every,
                    &format!("`every_{unit}` must be a whole number of at least 1"),
                    &format!("write e.g. `step(every_{unit} = 3, gamma = 0.5)`"),
                );
            }
            Schedule::Cosine { min } if !min.is_constant() && min.value < 0.0 => {
                err(
                    errors,
                    min,
                    "`min` cannot be negative",
                    "write e.g. `cosine(min = 1e-5)`",
                );
            }
            Schedule::Linear { final_lr } if !final_lr.is_constant() && final_lr.value < 0.0 => {
                err(
                    errors,
                    final_lr,
                    "`final` cannot be negative",
                    "write e.g. `linear(final = 1e-5)`",
                );
            }
            Schedule::Plateau {
                factor, patience, ..
            } => {
                if !(factor.is_constant() || factor.value > 0.0 && factor.value < 1.0) {
                    err(
                        errors,
                        factor,
                        "`factor` must be in (0, 1)",
                        "write e.g. `factor = 0.5`",
                    );
                }
                if !patience.is_constant() && (!patience.is_int || patience.value < 0.0) {
                    err(
                        errors,
                        patience,
                        "`patience` is a whole number of epochs, 0 or more",
                        "write e.g. `patience = 2`",
                    );
                }
                if exp.groups.as_ref().is_some_and(|g| !g.is_empty()) {
                    err(
                        errors,
                        factor,
                        "`plateau` scales one learning rate and cannot be combined with `groups`",
                        "remove `groups`, or use a schedule fixed in advance",
                    );
                } else if exp.optimizers.is_some() {
                    err(
                        errors,
                        factor,
                        "`plateau` scales one learning rate, and each of the several optimizers has its own",
                        "use a schedule fixed in advance (`cosine(..)`, `step(..)`, `linear(..)`), which each optimizer follows at its own rate",
                    );
                }
            }
            Schedule::WarmUp { steps, then } => {
                if matches!(**then, Schedule::Plateau { .. }) {
                    err(
                        errors,
                        steps,
                        "`plateau` cannot follow `warm_up`: it decides the rate from whole epochs",
                        "use `lr_schedule: plateau(..)` alone",
                    );
                }
                if !steps.is_constant() && (!steps.is_int || steps.value < 1.0) {
                    err(
                        errors,
                        steps,
                        "`steps` must be a whole number of at least 1",
                        "write e.g. `warm_up(steps = 100)`",
                    );
                }
                next = Some(then);
            }
            _ => {}
        }
    }
}

/// `optimizers` and `steps` go together and replace `optimizer` and `step`: each optimizer
/// named once, with its own `lr`, taken by exactly one step; each step named after an
/// optimizer, once, running every n ≥ 1 batches; and no key the several-optimizer loop does
/// not support yet.
fn several_optimizers(exp: &Experiment, errors: &mut Errors) {
    let (Some(optimizers), Some(steps)) = (&exp.optimizers, &exp.steps) else {
        let (key, needs, example) = match (&exp.optimizers, &exp.steps) {
            (Some(o), None) => (
                o.first().map(|o| o.name.span()),
                "steps",
                "steps: [critic: |model, batch: Batch| -> Output { .. }, ..]",
            ),
            (None, Some(s)) => (
                s.first().map(|s| s.name.span()),
                "optimizers",
                "optimizers: { critic: adam(lr = 1e-3) on [critic], .. }",
            ),
            _ => return,
        };
        // The other key given but malformed: its own error is the one.
        if let Some(span) = key
            && !exp.malformed(needs)
        {
            err(
                errors,
                span,
                &format!("several optimizers need `{needs}` too"),
                &format!("add `{example}`"),
            );
        }
        return;
    };
    for (single, several, span) in [
        (
            "step",
            "steps",
            exp.step
                .as_ref()
                .map(|s| syn::spanned::Spanned::span(&s.output_ty)),
        ),
        (
            "optimizer",
            "optimizers",
            exp.optimizer.as_ref().map(optimizer_span),
        ),
    ] {
        if let Some(span) = span {
            err(
                errors,
                span,
                &format!("`{single}` and `{several}` are two forms of one key"),
                &format!(
                    "with several optimizers, remove `{single}` and give each step in `steps`"
                ),
            );
        }
    }
    let names: Vec<String> = optimizers.iter().map(|o| o.name.to_string()).collect();
    // A step naming no optimizer most likely misspells the one it leaves unused: that step's
    // error alone, with its suggestion.
    let misnamed = steps.iter().any(|s| !names.iter().any(|n| s.name == n));
    for (i, named) in optimizers.iter().enumerate() {
        let name = &names[i];
        if names[..i].contains(name) {
            err(
                errors,
                named.name.span(),
                &format!("the optimizer `{name}` is declared twice"),
                "give each optimizer its own name (its step and metrics use it)",
            );
        } else if !misnamed && !steps.iter().any(|s| s.name == name) {
            err(
                errors,
                named.name.span(),
                &format!("no step uses the optimizer `{name}`"),
                &format!(
                    "add `{name}: |model, batch: Batch| -> Output {{ .. }}` to `steps`, or remove it"
                ),
            );
        }
        match &named.optimizer {
            Optimizer::Named { lr: None, name: kind, .. } => err(
                errors,
                kind.span(),
                &format!("`{kind}` needs a learning rate"),
                &format!("write `{name}: {kind}(lr = 1e-3) on [..]`"),
            ),
            Optimizer::Expr(expr) => errors.push(syn::Error::new_spanned(
                expr,
                "an optimizer of `optimizers` is named, with its settings\nhelp: write e.g. `adam(lr = 1e-3, beta_1 = 0.5) on [..]`",
            )),
            Optimizer::Named { .. } => {}
        }
        if named.on.is_empty() {
            err(
                errors,
                named.name.span(),
                &format!("`{name}` owns no parameters"),
                "list the module paths whose parameters it moves: `on [generator]`",
            );
        }
    }
    let mut taken: Vec<String> = Vec::new();
    for step in steps {
        let name = step.name.to_string();
        if taken.contains(&name) {
            err(
                errors,
                step.name.span(),
                &format!("two steps use the optimizer `{name}`"),
                "each optimizer takes one step per batch: merge the two into one step",
            );
        } else if !names.contains(&name) {
            let known: Vec<&str> = names.iter().map(String::as_str).collect();
            let fix = match closest(&name, &known) {
                Some(meant) => format!(
                    "did you mean `{meant}`? the optimizers are {}",
                    known.join(", ")
                ),
                None => format!("the optimizers are {}", known.join(", ")),
            };
            err(
                errors,
                step.name.span(),
                &format!("no optimizer is named `{name}`"),
                &fix,
            );
        }
        taken.push(name);
        if let Some(every) = &step.every
            && (!every.is_int || every.value < 1.0)
        {
            err(
                errors,
                every,
                "`every` is a whole number of batches, at least 1",
                "write e.g. `every = 5`",
            );
        }
        if let (Some(first), Some(every)) = (&step.first, &step.every)
            && (!first.is_int || first.value < 1.0 || first.value > every.value)
        {
            err(
                errors,
                first,
                &format!(
                    "`first` is the batch the step first runs at, from 1 to its period {}",
                    every.value
                ),
                "write e.g. `first = 1` (the first batch of the period)",
            );
        }
        if let Some(span) = step_question_mark(&step.step) {
            err(
                errors,
                span,
                "a step cannot fail: this `?` has no `Result` to return to",
                "do fallible work where it may fail, in the `loader` or `model` expressions (they take `?`), or handle the error here, e.g. `.expect(\"why it cannot fail\")`",
            );
        }
    }
    let unsupported = [
        (
            "grad_accumulation",
            exp.grad_accumulation.as_ref().map(|n| n.span),
        ),
        ("data_parallel", exp.data_parallel.as_ref().map(Ident::span)),
        ("engine", exp.engine.as_ref().map(Ident::span)),
        ("strategy", exp.strategy.as_ref().map(Ident::span)),
        ("devices", exp.devices.as_ref().map(|n| n.span)),
        (
            "groups",
            exp.groups.as_ref().and_then(|g| g.first()).map(|g| g.1),
        ),
        ("lora", exp.lora.as_ref().map(|l| l.span)),
        ("lr", exp.lr.as_ref().map(|n| n.span)),
    ];
    for (key, span) in unsupported {
        if let Some(span) = span {
            err(
                errors,
                span,
                &format!("`{key}` is not supported with several optimizers yet"),
                "remove it, or train with one `optimizer` and one `step`",
            );
        }
    }
    for axis in exp
        .sweep
        .iter()
        .flatten()
        .filter(|a| a.key == "lr" && a.path.is_empty())
    {
        let first = &optimizers[0].name;
        err(
            errors,
            axis.key.span(),
            "with several optimizers each has its own rate",
            &format!("sweep one of them: `optimizers.{first}.lr: [..]`"),
        );
    }
}

/// The span an error about the whole `optimizer` value points at.
fn optimizer_span(optimizer: &Optimizer) -> Span {
    match optimizer {
        Optimizer::Named { name, .. } => name.span(),
        Optimizer::Expr(expr) => syn::spanned::Spanned::span(expr),
    }
}

/// A metric names a step exactly when the experiment has several: `train.critic.loss`
/// measures the output of the step `critic`. `false` after reporting a mistake.
fn metric_step(exp: &Experiment, metric: &MetricRef, errors: &mut Errors) -> bool {
    let split = &metric.split;
    match (&exp.steps, &metric.step) {
        (None, None) => true,
        // `steps` given but malformed: which steps there are is not known.
        (None, Some(_)) if exp.malformed("steps") => true,
        (None, Some(step)) => {
            err(
                errors,
                step.span(),
                &format!(
                    "`{split}.{step}.{}` names a step, but the experiment has one",
                    metric.metric_key()
                ),
                &format!("write `{split}.{}`", metric.metric_key()),
            );
            false
        }
        (Some(steps), None) => {
            let named: Vec<String> = steps
                .iter()
                .map(|s| format!("`{split}.{}.{}`", s.name, metric.metric_key()))
                .collect();
            err(
                errors,
                metric.name.span(),
                "with several steps, a metric names the step whose output it measures",
                &format!("write {}", named.join(" or ")),
            );
            false
        }
        (Some(steps), Some(step)) => {
            let known: Vec<String> = steps.iter().map(|s| s.name.to_string()).collect();
            if known.iter().any(|k| step == k) {
                return true;
            }
            // A step misnamed (`discriminatorx`, naming no optimizer) is that step's error; the
            // metrics of the optimizer it meant are not a second one.
            let optimizers: Vec<String> = exp
                .optimizers
                .iter()
                .flatten()
                .map(|o| o.name.to_string())
                .collect();
            let optimizers: Vec<&str> = optimizers.iter().map(String::as_str).collect();
            let meant_by_a_misnamed_step = known.iter().any(|k| {
                !optimizers.contains(&k.as_str())
                    && closest(k, &optimizers).is_some_and(|meant| step == meant)
            });
            if meant_by_a_misnamed_step {
                return true;
            }
            let known: Vec<&str> = known.iter().map(String::as_str).collect();
            let fix = match closest(&step.to_string(), &known) {
                Some(meant) => format!("did you mean `{split}.{meant}.{}`?", metric.metric_key()),
                None => format!("the steps are {}", known.join(", ")),
            };
            err(
                errors,
                step.span(),
                &format!("no step is named `{step}`"),
                &fix,
            );
            false
        }
    }
}

/// How messages word a sweep or a search.
struct Varies {
    /// "swept".
    done: &'static str,
    /// "sweeps".
    does: &'static str,
    /// "sweep".
    doing: &'static str,
    /// What the list of keys is: "a sweep varies one of".
    lists: &'static str,
}

const SWEEP: Varies = Varies {
    done: "swept",
    does: "sweeps",
    doing: "sweep",
    lists: "a sweep varies one of",
};
const SEARCH: Varies = Varies {
    done: "searched",
    does: "searches",
    doing: "search",
    lists: "a search draws one of",
};

/// What a swept or searched key (`key` and the rest of a dotted one) holds: the kind of a
/// built-in key's values (an optimizer's rate is a rate), `None` for an own hyperparameter
/// (whose values rustc checks against its type). `Err` after reporting a key that cannot be
/// varied.
fn varied_key(
    exp: &Experiment,
    (key, path): (&Ident, &[Ident]),
    varies: &Varies,
    errors: &mut Errors,
) -> Result<Option<Values>, ()> {
    if !path.is_empty() {
        return match optimizer_rate(exp, (key, path), varies, errors) {
            true => Ok(sweep::values("lr")),
            false => Err(()),
        };
    }
    let name = key.to_string();
    if name == "lr" && exp.burn_schedule().is_some() {
        err(
            errors,
            key.span(),
            "this experiment has no `lr`: Burn's scheduler in `lr_schedule` sets the rate",
            "vary a hyperparameter of yours (`hparams: { peak: f64 = 1e-2 }`) and build the scheduler from it (`config.peak`), or use a named schedule with `lr`",
        );
        return Err(());
    }
    if let Some(kind) = sweep::values(&name) {
        return Ok(Some(kind));
    }
    let own = hparam_names(exp);
    if own.contains(&name) {
        return Ok(None);
    }
    let keys: Vec<&str> = sweep::SWEEPABLE
        .iter()
        .copied()
        .chain(own.iter().map(String::as_str))
        .collect();
    let synonym = burn_experiment_vocabulary::synonyms::find(
        burn_experiment_vocabulary::synonyms::KEYS,
        &name,
    );
    let fix = match (synonym, closest(&name, &keys)) {
        (Some(synonym), _) => synonym.help(),
        (None, Some(close)) => format!("did you mean `{close}`?"),
        (None, None) => format!("{}: {}", varies.lists, keys.join(", ")),
    };
    err(
        errors,
        key.span(),
        &format!("`{name}` cannot be {}", varies.done),
        &fix,
    );
    Err(())
}

/// A dotted key is an optimizer's rate, `optimizers.<name>.lr`, of an optimizer the experiment
/// declares. `false` after reporting another.
fn optimizer_rate(
    exp: &Experiment,
    (key, path): (&Ident, &[Ident]),
    varies: &Varies,
    errors: &mut Errors,
) -> bool {
    let Varies {
        done, does, doing, ..
    } = varies;
    let names: Vec<String> = exp
        .optimizers
        .iter()
        .flatten()
        .map(|o| o.name.to_string())
        .collect();
    let (span, fix) = match path {
        [name, rate] if key == "optimizers" && rate == "lr" => {
            if names.iter().any(|n| name == n) {
                return true;
            }
            let known: Vec<&str> = names.iter().map(String::as_str).collect();
            let fix = match closest(&name.to_string(), &known) {
                Some(meant) => format!("did you mean `optimizers.{meant}.lr`?"),
                None if known.is_empty() => {
                    format!("only an experiment with `optimizers` {does} one's rate: {doing} `lr`")
                }
                None => format!("the optimizers are {}", known.join(", ")),
            };
            (name.span(), fix)
        }
        _ => (
            key.span(),
            format!("a dotted {doing} key is an optimizer's rate: `optimizers.<name>.lr`"),
        ),
    };
    err(
        errors,
        span,
        &format!("`{}` cannot be {done}", dotted(key, path)),
        &fix,
    );
    false
}
