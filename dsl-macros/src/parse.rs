//! Tokens to [`Experiment`]. A value that does not parse is reported and skipped, so one build
//! shows every mistake; only a token stream with no `key: value` shape at all stops early.

use proc_macro2::{Span, TokenStream};
use syn::ext::IdentExt;
use syn::parse::discouraged::Speculative;
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, Ident, LitStr, Pat, ReturnType, Token, braced, bracketed, parenthesized,
};

use burn_experiment_vocabulary::keys;

use crate::ast::*;
use crate::errors::{Errors, closest};

/// Keys of `loader: { .. }`.
pub const LOADER_KEYS: &[&str] = &[
    "train",
    "valid",
    "test",
    "augment",
    "batcher",
    "batch_size",
    "shuffle",
    "workers",
];

pub const SCHEDULES: &[&str] = &[
    "constant",
    "cosine",
    "linear",
    "exponential",
    "step",
    "warm_up",
    "plateau",
];

/// Parses an invocation, collecting every error into `errors`.
pub fn parse(tokens: TokenStream, errors: &mut Errors) -> Experiment {
    let parser = |input: ParseStream| -> syn::Result<Experiment> {
        let mut exp = Experiment {
            docs: input.call(Attribute::parse_outer)?,
            span: Span::call_site(),
            ..Experiment::default()
        };
        exp.given = entries(input, &keys::names(), errors, |key, input, errors| {
            let read = top_level(&mut exp, key, input, errors);
            if read.is_err() {
                exp.rejected.push(key.to_string());
            }
            read
        })?;
        Ok(exp)
    };
    match parser.parse2(tokens) {
        Ok(exp) => exp,
        Err(err) => {
            errors.push(err);
            Experiment::default()
        }
    }
}

/// Whether `input` starts with `{ name: .. }`, a map of named entries (not a block, whose
/// first tokens cannot be `name:`).
fn is_named_map(input: ParseStream) -> bool {
    use proc_macro2::{Delimiter, Spacing, TokenTree};
    let Ok(TokenTree::Group(group)) = input.fork().parse::<TokenTree>() else {
        return false;
    };
    let mut inside = group.stream().into_iter();
    group.delimiter() == Delimiter::Brace
        && matches!(inside.next(), Some(TokenTree::Ident(_)))
        && matches!(inside.next(), Some(TokenTree::Punct(p)) if p.as_char() == ':' && p.spacing() == Spacing::Alone)
}

/// Parses `key: value, ...`, calling `value` for each known key; reports unknown and duplicate
/// keys and skips their values.
fn entries(
    input: ParseStream,
    known: &[&str],
    errors: &mut Errors,
    mut value: impl FnMut(&Ident, ParseStream, &mut Errors) -> syn::Result<()>,
) -> syn::Result<Vec<String>> {
    let mut seen: Vec<String> = Vec::new();
    // Keys a misspelt key most likely meant: not reported again as missing.
    let mut meant: Vec<String> = Vec::new();
    while !input.is_empty() {
        if let Some(comma) = extra_comma(input) {
            errors.push(comma);
            continue;
        }
        let key: Ident = input.parse()?;
        if !input.peek(Token![:]) || input.peek(Token![::]) {
            errors.push(syn::Error::new(
                key.span(),
                format!("`{key}` is not followed by `:`\nhelp: keys are written `key: value,`"),
            ));
            skip_to_next_key(input);
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
            continue;
        }
        input.parse::<Token![:]>()?;
        let name = key.to_string();
        let outcome = if !known.contains(&name.as_str()) {
            // Another trainer's word for one of our keys is read as ours, like a typo; a near
            // miss of one of ours not yet given is a typo first (`mode` meant `model`, though
            // it is also Lightning's word).
            let synonym = [
                burn_experiment_vocabulary::synonyms::KEYS,
                burn_experiment_vocabulary::synonyms::SEARCH,
            ]
            .into_iter()
            .filter_map(|table| burn_experiment_vocabulary::synonyms::find(table, &name))
            .find(|s| s.ours.is_none_or(|ours| known.contains(&ours)))
            .or_else(|| {
                burn_experiment_vocabulary::synonyms::find(
                    burn_experiment_vocabulary::synonyms::KEYS,
                    &name,
                )
            });
            let typo =
                closest(&name, known).filter(|k| synonym.is_none() || !seen.iter().any(|s| s == k));
            let synonym = synonym.filter(|_| typo.is_none());
            let ours = synonym
                .and_then(|s| s.ours)
                .and_then(|ours| known.iter().copied().find(|k| *k == ours));
            let hint = match synonym.map(|_| ours).unwrap_or(typo) {
                Some(k) => {
                    meant.push(k.to_owned());
                    // Read the value as the key it most likely meant, its mistakes unreported:
                    // its expressions are then type-checked (their imports stay used).
                    if !seen.iter().any(|s| s == k) {
                        let mut ignored = Errors::new();
                        let as_meant = Ident::new(k, key.span());
                        let fork = input.fork();
                        let read = isolated(&fork, &as_meant, |fork| {
                            value(&as_meant, fork, &mut ignored)
                        })
                        .is_ok()
                            && (fork.is_empty() || fork.peek(Token![,]));
                        if ignored.finish().is_none() && read {
                            input.advance_to(&fork);
                        }
                    }
                    match synonym {
                        Some(synonym) => synonym.help(),
                        None => format!("did you mean `{k}`?"),
                    }
                }
                None => match synonym {
                    Some(synonym) => synonym.help(),
                    None => format!("the keys are: {}", known.join(", ")),
                },
            };
            Err(syn::Error::new(
                key.span(),
                format!("unknown key `{name}`\nhelp: {hint}"),
            ))
        } else if seen.contains(&name) {
            Err(syn::Error::new(
                key.span(),
                format!("duplicate key `{name}`\nhelp: give each key once; remove one of the two"),
            ))
        } else {
            seen.push(name);
            isolated(input, &key, |input| value(&key, input, errors))
        };
        if let Err(err) = outcome {
            errors.push(with_form(&key.to_string(), err));
            if !input.is_empty() && !at_next_key(input) {
                skip_value(input);
            }
        } else if !input.is_empty() && !input.peek(Token![,]) && at_a_key(input) {
            // `train: a valid: b`: the comma between two entries is missing; the next one is
            // read as it is.
            errors.push(input.error(format!(
                "a `,` is missing after the value of `{key}`\nhelp: end the value with `,`"
            )));
            continue;
        } else if !input.is_empty() && !input.peek(Token![,]) {
            let help = if key == "checkpoint"
                && (input.peek(Token![&]) || input.peek(Token![+]) || input.peek(Token![||]))
            {
                "checkpoint policies combine with `|`: write e.g. `keep_last(2) | best(valid.loss)`"
            } else {
                "end the value with `,`"
            };
            errors.push(input.error(format!(
                "unexpected tokens after the value of `{key}`\nhelp: {help}"
            )));
            skip_to_comma(input);
        }
        if !input.is_empty() {
            input.parse::<Token![,]>()?;
        }
    }
    meant.extend(seen);
    Ok(meant)
}

/// Runs `parse` on the rest of `input` in a parse buffer of its own, then moves `input` past
/// what it read. syn records a group left half-read (`plateau(valid.loss, 2.0, 3)` stops at
/// `2.0`) in a cell that the whole invocation shares, and that would make the invocation fail
/// as a whole, every other key lost; in a buffer of its own the mistake stays this key's.
fn isolated(
    input: ParseStream,
    key: &Ident,
    parse: impl FnOnce(ParseStream) -> syn::Result<()>,
) -> syn::Result<()> {
    let rest: TokenStream = input.fork().parse()?;
    let total = rest.clone().into_iter().count();
    let scope = rest
        .clone()
        .into_iter()
        .last()
        .map_or(key.span(), |tt| tt.span());
    let read = |stream: ParseStream| -> syn::Result<usize> {
        parse(stream)?;
        let left: TokenStream = stream.parse()?;
        Ok(total - left.into_iter().count())
    };
    let read = read.__parse_scoped(scope, rest)?;
    input.step(|cursor| {
        let mut at = *cursor;
        for _ in 0..read {
            at = at.token_tree().map_or(at, |(_, next)| next);
        }
        Ok(((), at))
    })
}

/// syn's own words for a value of the wrong form ("expected identifier") do not say what the
/// key takes: they get the key's example. A message of ours (with its `help:`) stays.
fn with_form(key: &str, err: syn::Error) -> syn::Error {
    let message = err.to_string();
    match keys::example(key) {
        Some(example) if !message.contains("\nhelp:") => syn::Error::new(
            err.span(),
            format!("`{key}` is not written this way ({message})\nhelp: write it like `{example}`"),
        ),
        _ => err,
    }
}

/// Moves past a rejected value: a whole expression where it is one (a closure's `|a, b|`
/// holds commas), else up to the next key (a value that is a list without its brackets holds
/// commas too).
fn skip_value(input: ParseStream) {
    let fork = input.fork();
    if fork.parse::<Expr>().is_ok() && at_next_key(&fork) {
        input.advance_to(&fork);
        return;
    }
    skip_to_next_key(input);
}

/// At a `key:` (after its doc comments), where a comma was expected before it.
fn at_a_key(input: ParseStream) -> bool {
    let fork = input.fork();
    let _ = fork.call(Attribute::parse_outer);
    fork.peek(Ident) && fork.peek2(Token![:]) && !fork.peek2(Token![::])
}

/// At the end, or at the comma before the next `key:` (a doc comment may come between).
fn at_next_key(input: ParseStream) -> bool {
    if input.is_empty() {
        return true;
    }
    let fork = input.fork();
    fork.parse::<Token![,]>().is_ok()
        && (fork.is_empty() || {
            let _ = fork.call(Attribute::parse_outer);
            fork.peek(Ident) && fork.peek2(Token![:]) && !fork.peek2(Token![::])
        })
}

/// Moves up to the comma before the next `key:`, or to the end.
fn skip_to_next_key(input: ParseStream) {
    while !at_next_key(input) {
        if input
            .step(|cursor| Ok(((), cursor.token_tree().map_or(*cursor, |(_, next)| next))))
            .is_err()
        {
            return;
        }
    }
}

fn skip_to_comma(input: ParseStream) {
    let _ = input.step(|cursor| {
        let mut rest = *cursor;
        while let Some((tt, next)) = rest.token_tree() {
            if let proc_macro2::TokenTree::Punct(p) = &tt
                && p.as_char() == ','
            {
                return Ok(((), rest));
            }
            rest = next;
        }
        Ok(((), rest))
    });
}

fn top_level(
    exp: &mut Experiment,
    key: &Ident,
    input: ParseStream,
    errors: &mut Errors,
) -> syn::Result<()> {
    if UNQUOTED.contains(&key.to_string().as_str())
        && input.peek(LitStr)
        && quoted_value(exp, key, input, errors)?
    {
        return Ok(());
    }
    // A key misspelt into its neighbour, with the neighbour's form (`optimizer: { d: .. }`,
    // `step: [g: ..]`): one error at the key, and the value read as the key meant, so the
    // names it declares stay declared for every later check.
    if key == "optimizer" && is_named_map(input) {
        let misspelt = syn::Error::new(
            key.span(),
            "`optimizer` holds one optimizer; this is a map of several, which is `optimizers`\nhelp: write `optimizers: { name: adam(lr = 1e-3) on [path], .. }`",
        );
        let mut inner = Errors::new();
        let read = optimizers(input, &mut inner)?;
        exp.optimizers = neighbour(exp, key, read, misspelt, inner, errors);
        return Ok(());
    }
    if key == "step" && input.peek(syn::token::Bracket) {
        let misspelt = syn::Error::new(
            key.span(),
            "`step` is one step; this is a list of several, which is `steps`\nhelp: write `steps: [name: |model, batch: B| -> O { .. }, ..]`",
        );
        let mut inner = Errors::new();
        let (steps, span) = steps(input, &mut inner)?;
        exp.steps = neighbour(exp, key, steps, misspelt, inner, errors);
        exp.steps_span = span;
        return Ok(());
    }
    if key == "optimizers" && !input.peek(syn::token::Brace) {
        return Err(syn::Error::new(
            key.span(),
            "`optimizers` is a map of named optimizers; one optimizer is `optimizer`\nhelp: write `optimizer: adam(lr = 1e-3)`, or `optimizers: { name: adam(lr = 1e-3) on [path], .. }`",
        ));
    }
    match key.to_string().as_str() {
        "name" => {
            let (vis, name) = type_name(input, errors)?;
            exp.vis = vis;
            exp.name = Some(name);
        }
        "model" => exp.model = Some(model(input, errors)?),
        "step" => exp.step = Some(step(input, errors)?),
        "steps" => {
            let (steps, span) = steps(input, errors)?;
            exp.steps = Some(steps);
            exp.steps_span = span;
        }
        "optimizers" => exp.optimizers = Some(optimizers(input, errors)?),
        "loader" => exp.loader = Some(loader(input, errors)?),
        "optimizer" => exp.optimizer = Some(optimizer(input, errors)?),
        "lr" => exp.lr = Some(number_or_constant(input)?),
        "lr_schedule" => exp.lr_schedule = Some(schedule(input)?),
        "epochs" => exp.epochs = Some(number_or_constant(input)?),
        "metrics" => exp.metrics = Some(metrics(input, errors)?),
        "callbacks" => exp.callbacks = Some(callbacks(input, errors)?),
        "after_step" => exp.after_step = Some(after_step(input, errors)?),
        "at_epoch_end" => exp.at_epoch_end = Some(Box::new(at_epoch_end(input)?)),
        "checkpoint" => exp.checkpoint = Some(policies(input)?),
        "early_stopping" => exp.early_stopping = Some(patience(input)?),
        "grad_accumulation" => exp.grad_accumulation = Some(number_or_constant(input)?),
        "grad_clip" => exp.grad_clip = Some(clip(input)?),
        "seed" => exp.seed = Some(number_or_constant(input)?),
        "artifacts" => exp.artifacts = Some(input.parse::<LitStr>()?),
        "resume" => exp.resume = Some(resume(input)?),
        "init_from" => {
            exp.init_from = Some(quoted(
                input,
                "`init_from` is a file path in quotes",
                "init_from: \"pretrained.safetensors\"",
            )?)
        }
        "sweep" => exp.sweep = Some(sweep(input, errors)?),
        "search" => exp.search = Some(search(input, errors)?),
        "hparams" => exp.hparams = Some(hparams(input, errors)?),
        "freeze" => exp.freeze = Some(module_paths(input, errors)?),
        "unfreeze" => exp.unfreeze = Some(number_or_constant(input)?),
        "ema" => {
            exp.ema = Some(number_or_constant(input)?);
            // `ema: 0.999 on [generator]`: the average of some module paths only.
            if input.peek(Ident) {
                let on: Ident = input.parse()?;
                if on != "on" {
                    return Err(syn::Error::new(
                        on.span(),
                        "`ema` is a decay, optionally with the module paths it averages\nhelp: write `ema: 0.999` or `ema: 0.999 on [generator]`",
                    ));
                }
                exp.ema_on = Some(module_paths(input, errors)?);
            }
        }
        "groups" => exp.groups = Some(lr_groups(input, errors)?),
        "lora" => exp.lora = Some(lora(input, errors)?),
        "gradient_checkpointing" => {
            exp.gradient_checkpointing = Some(input.parse().map_err(|e: syn::Error| {
                syn::Error::new(
                    e.span(),
                    "`gradient_checkpointing` is `true` or `false`\nhelp: write `gradient_checkpointing: true`",
                )
            })?)
        }
        "precision" => exp.precision = Some(precision(input)?),
        "engine" => exp.engine = Some(choice(input, "engine", &["ours", "burn"])?),
        "strategy" => exp.strategy = Some(choice(input, "strategy", &["single", "multi", "ddp"])?),
        "data_parallel" => exp.data_parallel = Some(choice(input, "data_parallel", &["mpi"])?),
        "devices" => exp.devices = Some(number(input)?),
        "device" => {
            exp.device = Some(quoted(
                input,
                "`device` is a device name in quotes",
                "device: \"cuda:0\"` or `device: \"flex\"",
            )?)
        }
        _ => unreachable!("`entries` only passes known keys"),
    }
    Ok(())
}

/// Keys whose value is never a string (`artifacts`, `init_from` and `device` are).
const UNQUOTED: &[&str] = &[
    "after_step",
    "at_epoch_end",
    "optimizer",
    "lr",
    "lr_schedule",
    "epochs",
    "checkpoint",
    "early_stopping",
    "grad_accumulation",
    "grad_clip",
    "seed",
    "resume",
    "unfreeze",
    "ema",
    "devices",
    "engine",
    "strategy",
    "data_parallel",
    "gradient_checkpointing",
    "precision",
];

/// The value of a key misspelt into its neighbour (`optimizer: { .. }`, `step: [..]`), read
/// as the neighbour's: the misspelling is the error, and the entries' own errors follow only
/// where some entry was read (else the value was not the neighbour's form either, and one
/// error says so). `None`, and the key rejected, where nothing was read.
fn neighbour<T>(
    exp: &mut Experiment,
    key: &Ident,
    read: Vec<T>,
    misspelt: syn::Error,
    inner: Errors,
    errors: &mut Errors,
) -> Option<Vec<T>> {
    errors.push(misspelt);
    let inner = inner.take();
    if read.is_empty() {
        exp.rejected.push(key.to_string());
        return None;
    }
    if let Some(inner) = inner {
        errors.push(inner);
    }
    Some(read)
}

/// A value written in quotes that is not a string: where the text inside the quotes is a
/// value of the key, reported as quoted and read, so that the rest of the invocation (`best(..)`
/// of a metric in a quoted list, a quoted number of epochs) sees the value meant and adds no
/// error of its own, and the key counts as rejected (so no check of its value adds another).
/// Else nothing is read (`false`), and the key's own parser says what is wrong with the string.
fn quoted_value(
    exp: &mut Experiment,
    key: &Ident,
    input: ParseStream,
    errors: &mut Errors,
) -> syn::Result<bool> {
    let lit: LitStr = input.fork().parse()?;
    let mut inner = Errors::new();
    let read = lit.parse_with(|value: ParseStream| top_level(exp, key, value, &mut inner));
    let inner_errors = inner.finish();
    if read.is_err() || inner_errors.is_some() {
        return Ok(false);
    }
    input.parse::<LitStr>()?;
    exp.rejected.push(key.to_string());
    errors.push(syn::Error::new(
        lit.span(),
        format!(
            "`{key}` is written without quotes\nhelp: write `{key}: {}`",
            lit.value()
        ),
    ));
    Ok(true)
}

/// The experiment's type name. A string or a path is reported and its name kept, so that the
/// code naming the type (`Triage::cli()`) adds no error of its own.
fn type_name(input: ParseStream, errors: &mut Errors) -> syn::Result<(syn::Visibility, Ident)> {
    if input.peek(LitStr) {
        let lit: LitStr = input.parse()?;
        errors.push(syn::Error::new(
            lit.span(),
            format!(
                "`name` is the name of the type it declares, written without quotes\nhelp: write `name: {}`",
                lit.value()
            ),
        ));
        return lit.parse_with(|inner: ParseStream| Ok((inner.parse()?, inner.parse()?)));
    }
    let vis: syn::Visibility = input.parse()?;
    let path = syn::Path::parse_mod_style(input)?;
    let last = path.segments.last().map(|s| s.ident.clone());
    match last {
        Some(name) if path.segments.len() == 1 && path.leading_colon.is_none() => Ok((vis, name)),
        Some(name) => {
            errors.push(syn::Error::new_spanned(
                &path,
                format!("`name` declares a type here, so it is a name, not a path\nhelp: write `name: {name}`"),
            ));
            Ok((vis, name))
        }
        None => Err(input.error("expected the experiment's name")),
    }
}

fn model(input: ParseStream, errors: &mut Errors) -> syn::Result<Model> {
    let ty: syn::Type = input.parse()?;
    // `model: Mlp::new(3, device)`: a constructor call without the type; the type is its
    // path before the function, and the call is the initialiser (kept, so that what the
    // expansion writes with the type is not reported again).
    if let syn::Type::Path(path) = &ty
        && path.qself.is_none()
        && path.path.segments.len() >= 2
        && input.peek(syn::token::Paren)
    {
        let mut model_ty = path.path.clone();
        model_ty.segments.pop();
        model_ty.segments.pop_punct();
        let args: proc_macro2::Group = input.parse()?;
        let call = quote::quote!(#path #args);
        let init: Expr = syn::parse2(call.clone())?;
        let written_ty = quote::quote!(#model_ty).to_string().replace(' ', "");
        let written = call.to_string().replace(" :: ", "::").replace(" (", "(");
        errors.push(syn::Error::new_spanned(
            &ty,
            format!(
                "`model` needs its type before the initialiser\nhelp: write `model: {written_ty} = {written}`"
            ),
        ));
        return Ok(Model {
            ty: syn::Type::Path(syn::TypePath {
                qself: None,
                path: model_ty,
            }),
            init: Some(init),
        });
    }
    if !input.peek(Token![=]) {
        errors.push(syn::Error::new_spanned(
            &ty,
            "`model` needs an initialiser\nhelp: write `model: Type = expression`, e.g. `model: Mlp = Mlp::new(device)`; `device` is the run's device",
        ));
        // What follows the type is the initialiser without its `=`: reported above.
        if !input.is_empty() && !input.peek(Token![,]) {
            skip_value(input);
        }
        return Ok(Model { ty, init: None });
    }
    input.parse::<Token![=]>()?;
    Ok(Model {
        ty,
        init: Some(input.parse()?),
    })
}

/// A closure missing only its batch type is reported and still kept (batch type `_`), so the
/// dummy expansion can use its output type and the user's imports stay used.
fn step(input: ParseStream, errors: &mut Errors) -> syn::Result<Step> {
    const FORM: &str = "write `step: |model, batch: Batch| -> Output { .. }`";
    let closure: syn::ExprClosure = input.parse().map_err(|e| {
        syn::Error::new(e.span(), format!("`step` must be a closure\nhelp: {FORM}"))
    })?;
    if closure.inputs.len() != 2 {
        return Err(syn::Error::new(
            closure.inputs.span(),
            format!("`step` takes two arguments, the model and a typed batch\nhelp: {FORM}"),
        ));
    }
    let model_pat = match &closure.inputs[0] {
        Pat::Type(typed) => (*typed.pat).clone(),
        other => other.clone(),
    };
    let (batch_pat, batch_ty) = match &closure.inputs[1] {
        Pat::Type(batch) => ((*batch.pat).clone(), (*batch.ty).clone()),
        untyped => {
            errors.push(syn::Error::new(
                untyped.span(),
                format!("the batch argument of `step` needs its type\nhelp: {FORM}"),
            ));
            (untyped.clone(), syn::parse_quote!(_))
        }
    };
    let ReturnType::Type(_, output_ty) = &closure.output else {
        return Err(syn::Error::new(
            closure.or2_token.span(),
            format!("`step` needs its output type\nhelp: {FORM}"),
        ));
    };
    Ok(Step {
        model_pat,
        batch_pat,
        batch_ty,
        output_ty: (**output_ty).clone(),
        body: *closure.body,
    })
}

/// `[name: closure, name(every = n): closure, ..]`.
/// A comma where an entry should be (`a,, b`): one error, the comma read.
fn extra_comma(content: ParseStream) -> Option<syn::Error> {
    let comma = content.parse::<Option<Token![,]>>().ok()??;
    Some(syn::Error::new(
        comma.span,
        "two commas with nothing between them\nhelp: remove one",
    ))
}

/// `error` as it is where it says what to do, else `what` with the entry's accepted forms
/// (never syn's bare "expected identifier").
fn or_form(error: syn::Error, what: &str, form: &str) -> syn::Error {
    match error.to_string().contains("\nhelp: ") {
        true => error,
        false => syn::Error::new(error.span(), format!("{what}\nhelp: {form}")),
    }
}

/// [`each_entry`], where an entry's error that says no fix gets `what` and the entry's `form`.
fn each_entry_in_form<T>(
    content: ParseStream,
    errors: &mut Errors,
    (what, form): (&str, &str),
    mut entry: impl FnMut(ParseStream) -> syn::Result<T>,
) -> syn::Result<Vec<T>> {
    each_entry(content, errors, |content, _| {
        entry(content).map_err(|e| or_form(e, what, form))
    })
}

/// Each comma-separated entry of `content`, read by `entry`: an entry that fails is one error
/// at its own tokens and is skipped to the next comma; the entries around it are kept.
fn each_entry<T>(
    content: ParseStream,
    errors: &mut Errors,
    mut entry: impl FnMut(ParseStream, &mut Errors) -> syn::Result<T>,
) -> syn::Result<Vec<T>> {
    let mut entries = Vec::new();
    while !content.is_empty() {
        if let Some(comma) = extra_comma(content) {
            errors.push(comma);
            continue;
        }
        match entry(content, errors) {
            Ok(read) => {
                entries.push(read);
                if !content.is_empty() && !content.peek(Token![,]) {
                    // Where what follows reads as an entry, the comma is missing, and that
                    // entry is read as it is; else the rest up to the comma is this entry's.
                    let next_entry = {
                        let fork = content.fork();
                        let mut scratch = Errors::new();
                        let read = entry(&fork, &mut scratch).is_ok();
                        // Its errors are the entry's own, reported when it is read for real.
                        drop(scratch.take());
                        read
                    };
                    errors.push(content.error(
                        "a `,` is missing before the next entry\nhelp: separate the entries with `,`",
                    ));
                    if next_entry {
                        continue;
                    }
                    skip_to_comma(content);
                }
            }
            Err(error) => {
                errors.push(error);
                skip_to_comma(content);
            }
        }
        if !content.is_empty() {
            content.parse::<Token![,]>()?;
        }
    }
    Ok(entries)
}

fn steps(input: ParseStream, errors: &mut Errors) -> syn::Result<(Vec<NamedStep>, Span)> {
    const FORM: &str = "write `steps: [critic: |model, batch: Batch| -> Output { .. }, generator(every = 5): |model, batch: Batch| -> Output { .. }]`";
    let content;
    let span = bracketed!(content in input).span.join();
    let steps = each_entry(&content, errors, |content, errors| {
        let name: Ident = content.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                format!("a step starts with the name of its optimizer\nhelp: {FORM}"),
            )
        })?;
        // A mistake inside `(..)` is that argument's alone: the step stays declared.
        let (every, in_epoch, first) = if content.peek(syn::token::Paren) {
            let args;
            parenthesized!(args in content);
            match every_arg(&args) {
                Ok((every, in_epoch, first)) => (Some(every), in_epoch, first),
                Err(error) => {
                    errors.push(error);
                    // The rest of `(..)` is that mistake's: read, so it is not another error.
                    args.parse::<TokenStream>()?;
                    (None, false, None)
                }
            }
        } else {
            (None, false, None)
        };
        content.parse::<Token![:]>().map_err(|e| {
            syn::Error::new(
                e.span(),
                format!("expected `:` after the step's name\nhelp: {FORM}"),
            )
        })?;
        let step = step(content, errors)?;
        Ok(NamedStep {
            name,
            every,
            in_epoch,
            first,
            step,
        })
    })?;
    Ok((steps, span))
}

/// A step's `(every = n)`, `(every_in_epoch = n)` and `first = k`: how often it runs, counting
/// the run's steps or each epoch's batches, and the batch it first runs at.
fn every_arg(args: ParseStream) -> syn::Result<(Number, bool, Option<Number>)> {
    const HELP: &str = "write `generator(every = 5): ..` (global steps 5, 10, ..), or `generator(every_in_epoch = 5, first = 1): ..` (batches 1, 6, 11, .. of each epoch, Burn's wgan order)";
    let (mut every, mut first) = (None, None);
    while !args.is_empty() {
        let key: Ident = args.parse()?;
        let slot = match key.to_string().as_str() {
            "every" | "every_in_epoch" if every.is_some() => {
                return Err(syn::Error::new(
                    key.span(),
                    format!("a step has one period: `every` or `every_in_epoch`\nhelp: {HELP}"),
                ));
            }
            "every" | "every_in_epoch" => &mut every,
            "first" => &mut first,
            _ => {
                return Err(syn::Error::new(
                    key.span(),
                    format!("a step takes `every` (or `every_in_epoch`) and `first`\nhelp: {HELP}"),
                ));
            }
        };
        if !args.peek(Token![=]) {
            return Err(syn::Error::new(
                args.span(),
                format!("`{key}` is given with `=`\nhelp: {HELP}"),
            ));
        }
        args.parse::<Token![=]>()?;
        *slot = Some((key, number(args)?));
        if !args.is_empty() {
            args.parse::<Token![,]>()?;
        }
    }
    match (every, first) {
        (Some((key, every)), first) => Ok((every, key == "every_in_epoch", first.map(|f| f.1))),
        (None, Some((key, _))) => Err(syn::Error::new(
            key.span(),
            format!("`first` needs the step's period\nhelp: {HELP}"),
        )),
        (None, None) => Err(syn::Error::new(
            args.span(),
            format!("a step's `(..)` gives its period\nhelp: {HELP}"),
        )),
    }
}

/// `{ name: optimizer(lr = ..) on [paths], .. }`.
fn optimizers(input: ParseStream, errors: &mut Errors) -> syn::Result<Vec<NamedOptimizer>> {
    const FORM: &str = "write `optimizers: { critic: adam(lr = 2e-3) on [critic], generator: adam(lr = 1e-3) on [generator] }`";
    let content;
    braced!(content in input);
    each_entry(&content, errors, |content, errors| {
        let name: Ident = content.parse()?;
        content.parse::<Token![:]>()?;
        let optimizer = optimizer(content, errors)?;
        let on: Ident = content.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                format!("say which module paths `{name}` owns: `on [..]`\nhelp: {FORM}"),
            )
        })?;
        if on != "on" {
            return Err(syn::Error::new(
                on.span(),
                format!("expected `on [module paths]`\nhelp: {FORM}"),
            ));
        }
        // `on critic`: the paths are a list; read as one, the optimizer stays declared.
        let on = if content.peek(syn::token::Bracket) {
            module_paths(content, errors)?
        } else {
            let path = module_path(content)?;
            errors.push(syn::Error::new(
                path.1,
                format!(
                    "the paths an optimizer owns are a list in brackets\nhelp: write `on [{}]`",
                    path.0
                ),
            ));
            vec![path]
        };
        Ok(NamedOptimizer {
            name,
            optimizer,
            on,
        })
    })
}

fn loader(input: ParseStream, errors: &mut Errors) -> syn::Result<Loader> {
    let content;
    let brace = braced!(content in input);
    let mut loader = Loader {
        train: None,
        valid: None,
        test: None,
        augment: None,
        batcher: None,
        batch_size: None,
        shuffle: None,
        workers: None,
        given: Vec::new(),
        span: brace.span.join(),
    };
    loader.given = entries(&content, LOADER_KEYS, errors, |key, input, _| {
        match key.to_string().as_str() {
            "train" => loader.train = Some(input.parse()?),
            "valid" => loader.valid = Some(input.parse()?),
            "test" => loader.test = Some(input.parse()?),
            "augment" => loader.augment = Some(input.parse()?),
            "batcher" => loader.batcher = Some(input.parse()?),
            "batch_size" => loader.batch_size = Some(number_or_constant(input)?),
            "shuffle" => loader.shuffle = Some(seed(input)?),
            "workers" => loader.workers = Some(number_or_constant(input)?),
            _ => unreachable!("`entries` only passes known keys"),
        }
        Ok(())
    })?;
    Ok(loader)
}

/// `shuffle`'s value: a seed, not a switch.
fn seed(input: ParseStream) -> syn::Result<Number> {
    let expr: Expr = input.parse()?;
    constant_expr(expr.clone()).map_err(|_| {
        syn::Error::new_spanned(
            &expr,
            "`shuffle` takes a seed, not a switch\nhelp: write a whole number, e.g. `shuffle: 7` (the order is a function of the seed and the epoch); leave `shuffle` out to keep dataset order",
        )
    })
}

/// A numeric literal, optionally negated.
pub fn number(input: ParseStream) -> syn::Result<Number> {
    let expr: Expr = input.parse()?;
    number_expr(&expr)
}

/// A number, or a constant of the user's where a config key's default is read from the value
/// (`epochs: EPOCHS`, `sgd(lr = LR)`): a path or an expression over paths and literals, so that
/// a hand-written baseline and the experiment share their constants. A literal of another
/// kind (a string, a list) is still [`number`]'s error.
pub fn number_or_constant(input: ParseStream) -> syn::Result<Number> {
    let expr: Expr = input.parse()?;
    constant_expr(expr)
}

fn constant_expr(expr: Expr) -> syn::Result<Number> {
    match number_expr(&expr) {
        Ok(number) => Ok(number),
        Err(_) if is_constant(&expr) => Ok(Number {
            value: f64::NAN,
            is_int: false,
            span: expr.span(),
            end: expr.span(),
            constant: Some(Box::new(expr)),
        }),
        Err(error) => Err(error),
    }
}

/// A constant's path (its last name in capitals, as Rust names a `const`: `LR`,
/// `consts::EPOCHS`), or arithmetic, casts and parentheses over such paths and numbers. A
/// lower-case path or a call is not read as a constant: it is more likely a value of another
/// form (`epochs: three`), which gets the macro's error and its help rather than rustc's
/// "cannot find value".
fn is_constant(expr: &Expr) -> bool {
    match expr {
        Expr::Path(path) => {
            path.qself.is_none()
                && path.path.segments.last().is_some_and(|s| {
                    let name = s.ident.to_string();
                    s.arguments.is_none()
                        && name.chars().any(|c| c.is_ascii_uppercase())
                        && name
                            .chars()
                            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                })
        }
        Expr::Lit(lit) => matches!(lit.lit, syn::Lit::Int(_) | syn::Lit::Float(_)),
        Expr::Paren(inner) => is_constant(&inner.expr),
        Expr::Cast(cast) => is_constant(&cast.expr),
        Expr::Unary(unary) => matches!(unary.op, syn::UnOp::Neg(_)) && is_constant(&unary.expr),
        Expr::Binary(binary) => is_constant(&binary.left) && is_constant(&binary.right),
        _ => false,
    }
}

fn number_expr(expr: &Expr) -> syn::Result<Number> {
    let wrong = || {
        syn::Error::new(
            expr.span(),
            "expected a number literal\nhelp: write the value itself (e.g. `3` or `1e-3`): it becomes the default of the experiment's config, overridable at run time",
        )
    };
    match expr {
        Expr::Lit(lit) => match &lit.lit {
            syn::Lit::Int(i) => Ok(Number {
                value: i.base10_parse::<u64>()? as f64,
                is_int: true,
                span: i.span(),
                end: i.span(),
                constant: None,
            }),
            syn::Lit::Float(f) => Ok(Number {
                value: f.base10_parse::<f64>()?,
                is_int: false,
                span: f.span(),
                end: f.span(),
                constant: None,
            }),
            _ => Err(wrong()),
        },
        Expr::Unary(unary) if matches!(unary.op, syn::UnOp::Neg(_)) => {
            let inner = number_expr(&unary.expr)?;
            // From the sign to the literal: a mistake in `-1` is the whole value, not the `1`.
            Ok(Number {
                value: -inner.value,
                span: unary.op.span(),
                ..inner
            })
        }
        _ => Err(wrong()),
    }
}

/// A named optimizer's `(arg = number, ..)`, which take constants too (`sgd(lr = LR)`): they
/// are config values, checked against their ranges at start-up.
fn optimizer_args(input: ParseStream) -> syn::Result<Vec<(Ident, Number)>> {
    let content;
    parenthesized!(content in input);
    let mut args = Vec::new();
    while !content.is_empty() {
        let name: Ident = content.parse()?;
        content.parse::<Token![=]>()?;
        args.push((name, number_or_constant(&content)?));
        if !content.is_empty() {
            content.parse::<Token![,]>()?;
        }
    }
    Ok(args)
}

fn optimizer(input: ParseStream, errors: &mut Errors) -> syn::Result<Optimizer> {
    if input.peek(syn::Lit) {
        let value: syn::Lit = input.parse()?;
        return Err(syn::Error::new(
            value.span(),
            "`optimizer` is an optimizer, not a number: the learning rate is its argument `lr`\nhelp: write e.g. `optimizer: sgd(lr = 0.01)` or `optimizer: adam(lr = 1e-3)`",
        ));
    }
    // One of ours, called with an argument not written `name = value`: each is told its name.
    if input.peek(Ident) && input.peek2(syn::token::Paren) {
        let fork = input.fork();
        let name: Ident = fork.parse()?;
        if let Some(known) = burn_experiment_vocabulary::optimizer::named(&name.to_string())
            && optimizer_args(&fork.fork()).is_err()
        {
            input.advance_to(&fork);
            let args = positional_optimizer_args(input, &name, known, errors)?;
            let mut args = args;
            let lr = args
                .iter()
                .position(|(k, _)| k == "lr")
                .map(|i| args.remove(i).1);
            return Ok(Optimizer::Named { name, lr, args });
        }
    }
    let named_form = input.peek(Ident) && input.peek2(syn::token::Paren) && {
        // `name(key = value, ..)` is our form; anything else is a Rust expression.
        let fork = input.fork();
        fork.parse::<Ident>().is_ok()
            && optimizer_args(&fork).is_ok()
            && (fork.is_empty()
                || fork.peek(Token![,])
                // `optimizers: { name: adam(..) on [..] }`
                || fork.fork().parse::<Ident>().is_ok_and(|i| i == "on"))
    };
    if !named_form {
        return Ok(Optimizer::Expr(input.parse()?));
    }
    let name: Ident = input.parse()?;
    if burn_experiment_vocabulary::optimizer::named(&name.to_string()).is_none() {
        let known: Vec<&str> = burn_experiment_vocabulary::optimizer::OPTIMIZERS
            .iter()
            .map(|o| o.name)
            .collect();
        return Err(syn::Error::new(
            name.span(),
            format!(
                "unknown optimizer `{name}`\nhelp: use one of {}, or any expression giving a `ModuleOptimizer`",
                known.join(", ")
            ),
        ));
    }
    let mut args = optimizer_args(input)?;
    let lr = args
        .iter()
        .position(|(k, _)| k == "lr")
        .map(|i| args.remove(i).1);
    Ok(Optimizer::Named { name, lr, args })
}

/// The arguments of a named optimizer where some are positional (`adam(1e-3)`): each of those
/// is reported with the name its position would have (`lr` first, then the optimizer's own in
/// order) and kept under it, so that no "needs a learning rate" follows.
/// The help for an argument of `optimizer` written as another trainer writes it (`betas`,
/// `amsgrad`), where ours is one of its arguments (an SGD has no `epsilon` to offer for `eps`).
pub(crate) fn optimizer_synonym(
    key: &Ident,
    optimizer: &burn_experiment_vocabulary::optimizer::Optimizer,
) -> Option<String> {
    burn_experiment_vocabulary::synonyms::find(
        burn_experiment_vocabulary::synonyms::OPTIMIZER_ARGS,
        &key.to_string(),
    )
    .filter(|s| {
        s.words()
            .all(|ours| ours == "lr" || optimizer.arg(ours).is_some())
    })
    .map(|s| s.help())
}

fn positional_optimizer_args(
    input: ParseStream,
    name: &Ident,
    known: &burn_experiment_vocabulary::optimizer::Optimizer,
    errors: &mut Errors,
) -> syn::Result<Vec<(Ident, Number)>> {
    let content;
    parenthesized!(content in input);
    let names: Vec<&str> = std::iter::once("lr")
        .chain(known.args.iter().map(|a| a.name))
        .collect();
    let mut args = Vec::new();
    let mut position = 0;
    while !content.is_empty() {
        if content.peek(Ident) && content.peek2(Token![=]) {
            let key: Ident = content.parse()?;
            content.parse::<Token![=]>()?;
            let value: Expr = content.parse()?;
            match constant_expr(value.clone()) {
                Ok(number) => args.push((key, number)),
                // One error for this argument; the others, and the optimizer, are kept.
                Err(_) => errors.push(match optimizer_synonym(&key, known) {
                    Some(help) => syn::Error::new(
                        key.span(),
                        format!("`{name}` has no argument `{key}`\nhelp: {help}"),
                    ),
                    // Not one of its arguments: which are, not how to give this one a number.
                    None if !names.contains(&key.to_string().as_str()) => syn::Error::new(
                        key.span(),
                        format!(
                            "`{name}` has no argument `{key}`\nhelp: its arguments are: {}",
                            names.join(", ")
                        ),
                    ),
                    None => syn::Error::new_spanned(
                        &value,
                        format!(
                            "`{key}` takes a number\nhelp: write e.g. `{name}({key} = 0.9, ..)`; its arguments are: {}",
                            names.join(", ")
                        ),
                    ),
                }),
            }
        } else {
            let value: Expr = content.parse()?;
            let written = quote::quote!(#value).to_string().replace(' ', "");
            match names.get(position) {
                Some(meant) => {
                    errors.push(syn::Error::new_spanned(
                        &value,
                        format!(
                            "the arguments of `{name}` are named: this one is `{meant}`\nhelp: write `{name}({meant} = {written}, ..)`"
                        ),
                    ));
                    if let Ok(number) = constant_expr(value.clone()) {
                        args.push((Ident::new(meant, value.span()), number));
                    }
                }
                None => errors.push(syn::Error::new_spanned(
                    &value,
                    format!(
                        "`{name}` takes {} arguments, each named\nhelp: write them `name = value`: {}",
                        names.len(),
                        names.join(", ")
                    ),
                )),
            }
        }
        position += 1;
        if !content.is_empty() {
            content.parse::<Token![,]>()?;
        }
    }
    Ok(args)
}

/// `step(every_steps = n, ..)` or `step(every_epochs = n, ..)`: the unit is part of the
/// spelling, since Burn's `StepLrScheduler` counts optimizer steps where PyTorch's `StepLR`
/// counts epochs, and a bare `every` read the one way and meant the other decays a run to
/// nothing without a word.
fn step_schedule(args: &[(Ident, Arg)], name: &Ident, gamma: Number) -> syn::Result<Schedule> {
    let help = "write `every_epochs = n` to decay every n epochs (PyTorch's `StepLR`) or \
                `every_steps = n` for every n optimizer steps (Burn's `StepLrScheduler`)";
    if let Some((key, _)) = args.iter().find(|(k, _)| k == "every") {
        return Err(syn::Error::new(
            key.span(),
            format!("`every` does not say its unit\nhelp: {help}"),
        ));
    }
    let mut given = args
        .iter()
        .filter(|(k, _)| k == "every_steps" || k == "every_epochs");
    let Some((key, value)) = given.next() else {
        return Err(syn::Error::new(
            name.span(),
            format!("`step` needs the period of its decay\nhelp: {help}"),
        ));
    };
    if let Some((again, _)) = given.next() {
        return Err(syn::Error::new(
            again.span(),
            "`step` takes one period: `every_steps` or `every_epochs`\nhelp: remove one",
        ));
    }
    let Arg::Number(every) = value else {
        return Err(syn::Error::new(
            key.span(),
            format!("`{key}` takes a number"),
        ));
    };
    Ok(Schedule::Step {
        every: every.clone(),
        epochs: key == "every_epochs",
        gamma,
    })
}

/// The arguments of schedule `name`, in the order a positional one is taken to mean.
fn schedule_args(name: &str) -> &'static [&'static str] {
    match name {
        "cosine" => &["min"],
        "linear" => &["final"],
        "exponential" => &["gamma"],
        "step" => &["every_epochs", "gamma"],
        "warm_up" => &["steps", "then"],
        "plateau" => &["metric", "factor", "patience"],
        _ => &[],
    }
}

fn schedule(input: ParseStream) -> syn::Result<Schedule> {
    if let Some(expr) = burn_schedule(input) {
        return Ok(Schedule::Burn(Box::new(expr)));
    }
    let name: Ident = input.parse()?;
    if !SCHEDULES.contains(&name.to_string().as_str()) {
        let synonym = burn_experiment_vocabulary::synonyms::find(
            burn_experiment_vocabulary::synonyms::SCHEDULES,
            &name.to_string(),
        );
        let help = match (synonym, closest(&name.to_string(), SCHEDULES)) {
            (Some(synonym), _) => synonym.help(),
            (None, Some(close)) => format!("did you mean `{close}`?"),
            (None, None) => format!(
                "use one of {}, or one of Burn's schedulers as an expression (`NoamLrSchedulerConfig::new(1e-2)`)",
                SCHEDULES.join(", ")
            ),
        };
        // Its arguments are theirs (`step_size = 10`): skipped with the name, one error.
        if input.peek(syn::token::Paren) {
            let _: proc_macro2::Group = input.parse()?;
        }
        return Err(syn::Error::new(
            name.span(),
            format!("unknown learning-rate schedule `{name}`\nhelp: {help}"),
        ));
    }
    if name == "plateau" {
        return plateau(input, &name);
    }
    let args = if input.peek(syn::token::Paren) {
        named_args_or_schedule(input, &name)?
    } else {
        Vec::new()
    };
    let get = |key: &str, default: Option<f64>| -> syn::Result<Number> {
        match args.iter().position(|(k, _)| k == key) {
            Some(i) => match &args[i].1 {
                Arg::Number(n) => Ok(n.clone()),
                Arg::Schedule(_) => Err(syn::Error::new(
                    args[i].0.span(),
                    format!("`{key}` takes a number"),
                )),
            },
            None => default
                .map(|value| Number {
                    value,
                    is_int: false,
                    span: name.span(),
                    end: name.span(),
                    constant: None,
                })
                .ok_or_else(|| {
                    syn::Error::new(
                        name.span(),
                        format!("`{name}` needs `{key} = ..`\nhelp: write `{name}({key} = ..)`"),
                    )
                }),
        }
    };
    let schedule = match name.to_string().as_str() {
        "constant" => Schedule::Constant,
        "cosine" => Schedule::Cosine {
            min: get("min", Some(0.0))?,
        },
        "linear" => Schedule::Linear {
            final_lr: get("final", None)?,
        },
        "exponential" => Schedule::Exponential {
            gamma: get("gamma", None)?,
        },
        "step" => step_schedule(&args, &name, get("gamma", Some(0.1))?)?,
        "warm_up" => {
            let steps = get("steps", None)?;
            let then = args
                .iter()
                .find_map(|(k, v)| match v {
                    Arg::Schedule(s) if k == "then" => Some(s.clone()),
                    _ => None,
                })
                .unwrap_or_else(|| Box::new(Schedule::Constant));
            Schedule::WarmUp { steps, then }
        }
        _ => unreachable!("an unknown schedule is rejected above"),
    };
    let allowed: &[&str] = match &schedule {
        Schedule::Step { .. } => &["every_steps", "every_epochs", "gamma"],
        _ => schedule_args(&name.to_string()),
    };
    if let Some((key, _)) = args.iter().find(|(k, _)| !allowed.iter().any(|a| k == a)) {
        return Err(syn::Error::new(
            key.span(),
            format!(
                "`{name}` has no argument `{key}`\nhelp: its arguments are: {}",
                if allowed.is_empty() {
                    "none".to_owned()
                } else {
                    allowed.join(", ")
                }
            ),
        ));
    }
    Ok(schedule)
}

enum Arg {
    Number(Number),
    Schedule(Box<Schedule>),
}

/// Schedule arguments: numbers, or a nested schedule for `then`. A positional one is told the
/// name its position takes.
/// Burn's scheduler as an expression (`NoamLrSchedulerConfig::new(..)`, a function of yours):
/// a call or a method call that is not one of our forms. A call of a name of ours, or of one
/// that reads as a misspelling or as another trainer's word for one, is ours (each gets its own
/// error), as is a call with `key = value` arguments; so is anything else (a name, a number,
/// a list), whose error says how the key is written.
fn burn_schedule(input: ParseStream) -> Option<Expr> {
    let fork = input.fork();
    let expr: Expr = fork.parse().ok()?;
    let named = |func: &Expr| match func {
        Expr::Path(p) => p.path.get_ident().is_some_and(|name| {
            let name = name.to_string();
            SCHEDULES.contains(&name.as_str())
                || closest(&name, SCHEDULES).is_some()
                || burn_experiment_vocabulary::synonyms::find(
                    burn_experiment_vocabulary::synonyms::SCHEDULES,
                    &name,
                )
                .is_some()
        }),
        _ => false,
    };
    // Burn's configs are built by calls (`::new(..)`, a function of yours) and their builder
    // methods (`.with_warmup_steps(..)`); no path alone, list or number is one.
    let ours = match &expr {
        Expr::Call(call) => {
            named(&call.func)
                || matches!(&*call.func, Expr::Path(p) if p.path.get_ident().is_some())
                    && call.args.iter().any(|arg| matches!(arg, Expr::Assign(_)))
        }
        Expr::MethodCall(_) => false,
        _ => true,
    };
    if ours {
        return None;
    }
    input.advance_to(&fork);
    Some(expr)
}

fn named_args_or_schedule(
    input: ParseStream,
    schedule_name: &Ident,
) -> syn::Result<Vec<(Ident, Arg)>> {
    let content;
    parenthesized!(content in input);
    let mut args = Vec::new();
    while !content.is_empty() {
        if !(content.peek(Ident::peek_any) && content.peek2(Token![=])) {
            let value: Expr = content.parse()?;
            let written = quote::quote!(#value).to_string().replace(' ', "");
            let names = schedule_args(&schedule_name.to_string());
            let help = match names.get(args.len()) {
                Some(meant) => format!(
                    "this one is `{meant}`\nhelp: write `{schedule_name}({meant} = {written})`"
                ),
                None => format!("\nhelp: its arguments are {}", names.join(", ")),
            };
            return Err(syn::Error::new_spanned(
                &value,
                format!("the arguments of `{schedule_name}` are named: {help}"),
            ));
        }
        // `final` of `linear(final = ..)` is a Rust keyword.
        let name = Ident::parse_any(&content)?;
        content.parse::<Token![=]>()?;
        let value = if name == "then" {
            Arg::Schedule(Box::new(schedule(&content)?))
        } else {
            Arg::Number(number_or_constant(&content)?)
        };
        args.push((name, value));
        if !content.is_empty() {
            content.parse::<Token![,]>()?;
        }
    }
    Ok(args)
}

/// `split.metric` or `split.metric(number)`.
pub fn metric_ref(input: ParseStream) -> syn::Result<MetricRef> {
    // Each part that is not a name says the metric's forms, not syn's "expected identifier".
    let form = |e: syn::Error| {
        syn::Error::new(
            e.span(),
            "a metric is written `split.metric`, `split.metric(k)` or `split.metric(name = expr)`\nhelp: e.g. `valid.accuracy`, `train.loss`, `valid.top_k(5)`",
        )
    };
    let split: Ident = input.parse().map_err(form)?;
    // `val_loss`, `train_acc`: the split and the metric in one word, as Keras writes them.
    if !input.peek(Token![.])
        && let Some(synonym) = burn_experiment_vocabulary::synonyms::find(
            burn_experiment_vocabulary::synonyms::METRICS,
            &split.to_string(),
        )
    {
        return Err(syn::Error::new(
            split.span(),
            format!(
                "a metric is written `split.metric`\nhelp: {}",
                synonym.help()
            ),
        ));
    }
    input.parse::<Token![.]>().map_err(|e| {
        syn::Error::new(
            e.span(),
            "a metric is written `split.metric`\nhelp: e.g. `valid.accuracy` or `train.loss`",
        )
    })?;
    let mut name: Ident = input.parse().map_err(form)?;
    // `train.critic.loss`: the metric of one step of a several-optimizer experiment.
    let step = if input.peek(Token![.]) {
        input.parse::<Token![.]>()?;
        Some(std::mem::replace(&mut name, input.parse().map_err(form)?))
    } else {
        None
    };
    if name == "metric" && input.peek(syn::token::Paren) {
        let mut custom = custom_metric(input, split, name)?;
        custom.step = step;
        return Ok(custom);
    }
    let arg = if input.peek(syn::token::Paren) {
        let content;
        parenthesized!(content in input);
        // `top_k(k = 2)`, `fbeta(beta = 0.5)`: the argument is the number alone.
        let value: Expr = content.parse()?;
        match &value {
            Expr::Assign(assign) if number_expr(&assign.right).is_ok() => {
                let right = &assign.right;
                return Err(syn::Error::new_spanned(
                    &value,
                    format!(
                        "a metric's argument is written alone, without its name\nhelp: write `{split}.{name}({})`",
                        quote::quote!(#right)
                    ),
                ));
            }
            other => Some(number_expr(other).map_err(|_| {
                syn::Error::new_spanned(
                    other,
                    format!(
                        "a metric's argument is a number\nhelp: write e.g. `{split}.top_k(5)` or `{split}.fbeta(0.5)`"
                    ),
                )
            })?),
        }
    } else {
        None
    };
    Ok(MetricRef {
        split,
        step,
        name,
        arg,
        custom: None,
    })
}

/// `split.metric(name = expr)`: the user's own metric, under the name it is recorded as.
fn custom_metric(input: ParseStream, split: Ident, keyword: Ident) -> syn::Result<MetricRef> {
    let content;
    parenthesized!(content in input);
    let named = content.peek(Ident) && content.peek2(Token![=]) && !content.peek2(Token![==]);
    // Unnamed, it keeps the name `metric`, which validation reports; its expression is kept
    // for the dummy expansion.
    let name = if named {
        let name: Ident = content.parse()?;
        content.parse::<Token![=]>()?;
        name
    } else {
        keyword.clone()
    };
    let expr: Expr = content.parse()?;
    if !content.is_empty() {
        return Err(content.error(format!(
            "`{keyword}(..)` takes one metric: write `{split}.metric({name} = <metric>)`"
        )));
    }
    Ok(MetricRef {
        split,
        step: None,
        name,
        arg: None,
        custom: Some(Box::new(expr)),
    })
}

/// `[split.metric, ..]`, each entry on its own: a quoted one is reported and read from inside
/// its quotes, another malformed one reported and skipped, and the others kept, so that
/// `best(..)` of a recorded metric adds no error.
fn metrics(input: ParseStream, errors: &mut Errors) -> syn::Result<Vec<MetricRef>> {
    if !input.peek(syn::token::Bracket) {
        // The list without its brackets, up to the next key: reported, and kept.
        let start = input.span();
        let mut metrics = vec![metric_ref(input)?];
        while !at_next_key(input) {
            input.parse::<Token![,]>()?;
            if at_next_key(input) {
                break;
            }
            metrics.push(metric_ref(input)?);
        }
        errors.push(syn::Error::new(
            start,
            format!(
                "`metrics` is a list in square brackets\nhelp: write it like `{}`",
                keys::example("metrics").unwrap_or_default()
            ),
        ));
        return Ok(metrics);
    }
    let content;
    bracketed!(content in input);
    let metrics = each_entry(&content, errors, |content, errors| {
        if content.peek(LitStr) {
            let lit: LitStr = content.parse()?;
            errors.push(syn::Error::new(
                lit.span(),
                format!(
                    "a metric is written without quotes\nhelp: write `{}`",
                    lit.value()
                ),
            ));
            return Ok(lit.parse_with(metric_ref).ok());
        }
        // `val_loss`: reported, and kept as the metric it means, so that what uses
        // `valid.loss` elsewhere finds it recorded.
        if let Some((written, meant)) = keras_metric(content) {
            errors.push(syn::Error::new(
                written.span(),
                format!(
                    "a metric is written `split.metric`\nhelp: {}",
                    meant.1.help()
                ),
            ));
            return Ok(Some(MetricRef {
                split: Ident::new(meant.0, written.span()),
                step: None,
                name: Ident::new(meant.1.ours.unwrap_or_default(), written.span()),
                arg: None,
                custom: None,
            }));
        }
        metric_ref(content).map(Some)
    })?;
    Ok(metrics.into_iter().flatten().collect())
}

/// A metric written as Keras and Lightning write it (`val_loss`, `train_acc`), alone in its
/// entry: the word, with the split and the synonym it means.
fn keras_metric(
    input: ParseStream,
) -> Option<(
    Ident,
    (
        &'static str,
        &'static burn_experiment_vocabulary::synonyms::Synonym,
    ),
)> {
    let fork = input.fork();
    let word: Ident = fork.parse().ok()?;
    if !(fork.is_empty() || fork.peek(Token![,])) {
        return None;
    }
    let synonym = burn_experiment_vocabulary::synonyms::find(
        burn_experiment_vocabulary::synonyms::METRICS,
        &word.to_string(),
    )?;
    synonym.ours?;
    let split = match synonym.theirs.split('_').next()? {
        "val" => "valid",
        "train" => "train",
        _ => return None,
    };
    input.advance_to(&fork);
    Some((word, (split, synonym)))
}

/// `[fc1, encoder.layer, "layers.0"]`, read entry by entry: a malformed path (`blocks[0]`)
/// is one error, and the list stays given (`unfreeze` still has a `freeze`).
fn module_paths(input: ParseStream, errors: &mut Errors) -> syn::Result<Vec<(String, Span)>> {
    let content;
    bracketed!(content in input);
    each_entry(&content, errors, |content, _| module_path(content))
}

/// One module path: dotted names, or a string (for numbered submodules).
fn module_path(input: ParseStream) -> syn::Result<(String, Span)> {
    if input.peek(LitStr) {
        let path: LitStr = input.parse()?;
        return Ok((path.value(), path.span()));
    }
    let first: Ident = input.parse().map_err(|e| {
        syn::Error::new(
            e.span(),
            "a module path is written `fc1`, `encoder.layer` or, with numbers, `\"layers.0\"`",
        )
    })?;
    let mut path = first.to_string();
    while input.peek(Token![.]) {
        input.parse::<Token![.]>()?;
        path.push('.');
        path.push_str(&input.parse::<Ident>()?.to_string());
    }
    // `blocks[0]`: a numbered submodule is a segment of the path.
    if input.peek(syn::token::Bracket) {
        let index;
        let bracket = bracketed!(index in input);
        let index: TokenStream = index.parse()?;
        return Err(syn::Error::new(
            bracket.span.join(),
            format!(
                "a numbered submodule is a segment of the path, written in quotes\nhelp: write `\"{path}.{index}\"`"
            ),
        ));
    }
    Ok((path, first.span()))
}

/// `plateau(split.metric, factor = x, patience = n)`; factor 0.1 and patience 10 by default,
/// as in PyTorch's `ReduceLROnPlateau`.
fn plateau(input: ParseStream, name: &Ident) -> syn::Result<Schedule> {
    let content;
    parenthesized!(content in input);
    let metric = metric_ref(&content).map_err(|e| {
        syn::Error::new(
            e.span(),
            "`plateau` watches a recorded metric first\nhelp: write `plateau(valid.loss, factor = 0.5, patience = 2)`",
        )
    })?;
    let default = |value: f64, is_int: bool| Number {
        value,
        is_int,
        span: name.span(),
        end: name.span(),
        constant: None,
    };
    let (mut factor, mut patience) = (default(0.1, false), default(10.0, true));
    while content.peek(Token![,]) {
        content.parse::<Token![,]>()?;
        if content.is_empty() {
            break;
        }
        let named = |e: syn::Error| {
            syn::Error::new(
                e.span(),
                "`plateau` names its arguments after the metric\nhelp: write `plateau(valid.loss, factor = 0.5, patience = 2)`",
            )
        };
        let key: Ident = content.parse().map_err(named)?;
        content.parse::<Token![=]>().map_err(named)?;
        let value = number_or_constant(&content)?;
        match key.to_string().as_str() {
            "factor" => factor = value,
            "patience" => patience = value,
            _ => {
                content.parse::<TokenStream>()?;
                return Err(syn::Error::new(
                    key.span(),
                    format!(
                        "`plateau` has no argument `{key}`\nhelp: its arguments are: factor, patience"
                    ),
                ));
            }
        }
    }
    Ok(Schedule::Plateau {
        metric,
        factor,
        patience,
    })
}

/// `{ rank: 4, alpha: 8, on: [fc1, fc2] }`.
fn lora(input: ParseStream, errors: &mut Errors) -> syn::Result<LoraKey> {
    let content;
    let brace = braced!(content in input);
    let mut key = LoraKey {
        rank: None,
        alpha: None,
        on: Vec::new(),
        span: brace.span.join(),
    };
    while !content.is_empty() {
        let name: Ident = content.parse()?;
        content.parse::<Token![:]>()?;
        match name.to_string().as_str() {
            "rank" => key.rank = Some(number(&content)?),
            "alpha" => key.alpha = Some(number(&content)?),
            "on" => key.on = module_paths(&content, errors)?,
            other => {
                content.parse::<TokenStream>()?;
                return Err(syn::Error::new(
                    name.span(),
                    format!(
                        "unknown LoRA setting `{other}`\nhelp: write `lora: {{ rank: 4, alpha: 8, on: [fc1, fc2] }}`"
                    ),
                ));
            }
        }
        if !content.is_empty() {
            content.parse::<Token![,]>()?;
        }
    }
    Ok(key)
}

/// `{ fc1: lr(1e-4), "layers.0": lr(0.0) }`.
fn lr_groups(input: ParseStream, errors: &mut Errors) -> syn::Result<Vec<(String, Span, Number)>> {
    let content;
    braced!(content in input);
    const GROUP: (&str, &str) = (
        "a group is a module path and its base learning rate",
        "write e.g. `groups: { fc1: lr(1e-4), \"layers.0\": lr(0.0) }`",
    );
    each_entry_in_form(&content, errors, GROUP, |content| {
        let (path, span) = module_path(content)?;
        content.parse::<Token![:]>()?;
        let setting: Ident = content.parse()?;
        if setting != "lr" {
            return Err(syn::Error::new(
                setting.span(),
                format!(
                    "unknown group setting `{setting}`\nhelp: a group sets its base learning rate: `{path}: lr(1e-4)`"
                ),
            ));
        }
        let value;
        parenthesized!(value in content);
        Ok((path, span, number(&value)?))
    })
}

/// A string literal, or an error saying what the key takes and an `example` of it.
fn quoted(input: ParseStream, what: &str, example: &str) -> syn::Result<LitStr> {
    input
        .parse::<LitStr>()
        .map_err(|e| syn::Error::new(e.span(), format!("{what}\nhelp: write e.g. `{example}`")))
}

/// `key:` or `optimizers.generator.lr:` (a config value below the key): the key and the rest
/// of its path.
fn dotted_key(content: ParseStream) -> syn::Result<(Ident, Vec<Ident>)> {
    let key: Ident = content.parse()?;
    let mut path = Vec::new();
    while content.peek(Token![.]) {
        content.parse::<Token![.]>()?;
        path.push(content.parse::<Ident>()?);
    }
    content.parse::<Token![:]>()?;
    Ok((key, path))
}

/// `{ key: [literal, ..], .. }`; which keys and literals fit is checked in `validate`.
fn sweep(input: ParseStream, errors: &mut Errors) -> syn::Result<Vec<SweepAxis>> {
    let content;
    braced!(content in input);
    const AXIS: (&str, &str) = (
        "a sweep entry is a key and the values it takes",
        "write e.g. `sweep: { lr: [1e-3, 1e-2], batch_size: [16, 32] }`",
    );
    each_entry_in_form(&content, errors, AXIS, |content| {
        let (key, path) = dotted_key(content)?;
        let list;
        let brackets = bracketed!(list in content);
        let values = Punctuated::<syn::Lit, Token![,]>::parse_terminated(&list)
            .map_err(|e| {
                syn::Error::new(
                    e.span(),
                    format!("a sweep lists literal values\nhelp: write e.g. `{key}: [1, 2]`"),
                )
            })?
            .into_iter()
            .collect();
        Ok(SweepAxis {
            key,
            path,
            values,
            span: brackets.span.join(),
        })
    })
}

/// `{ space: { .. }, trials: 30, objective: min(valid.loss), .. }`, entry by entry; which keys
/// and ranges fit is checked in `validate`.
fn search(input: ParseStream, errors: &mut Errors) -> syn::Result<SearchKey> {
    use burn_experiment_vocabulary::search::{ENTRIES, PRUNERS, SAMPLERS};
    let content;
    let brace = braced!(content in input);
    let mut key = SearchKey {
        space: Vec::new(),
        trials: None,
        objective: None,
        sampler: None,
        prune: None,
        seed: None,
        span: brace.span.join(),
        given: Vec::new(),
        space_empty: false,
    };
    key.given = entries(&content, ENTRIES, errors, |name, input, errors| {
        match name.to_string().as_str() {
            "space" => {
                key.space_empty = input
                    .fork()
                    .parse::<proc_macro2::Group>()
                    .is_ok_and(|g| g.stream().is_empty());
                key.space = space(input, errors)?;
            }
            "trials" => key.trials = Some(number(input)?),
            "objective" => key.objective = Some(objective(input)?),
            "sampler" => key.sampler = Some(choice(input, "sampler", SAMPLERS)?),
            "prune" => key.prune = Some(choice(input, "pruner", PRUNERS)?),
            "seed" => key.seed = Some(number(input)?),
            _ => unreachable!("`entries` only passes known keys"),
        }
        Ok(())
    })?;
    Ok(key)
}

/// `{ lr: log_uniform(1e-4, 1e-1), batch_size: choice([16, 32]), .. }`.
fn space(input: ParseStream, errors: &mut Errors) -> syn::Result<Vec<SearchParam>> {
    use burn_experiment_vocabulary::search::{DISTRIBUTIONS, distribution_names};
    let content;
    braced!(content in input);
    const PARAM: (&str, &str) = (
        "a space entry is a key and the distribution it is drawn from",
        "write e.g. `space: { lr: log_uniform(1e-4, 1e-1), batch_size: choice([16, 32]) }`",
    );
    each_entry_in_form(&content, errors, PARAM, |content| {
        let (key, path) = dotted_key(content)?;
        let dist: Ident = content.parse()?;
        let names = distribution_names();
        let Some((_, example)) = DISTRIBUTIONS.iter().find(|(name, _)| dist == name) else {
            let fix = match closest(&dist.to_string(), &names) {
                Some(close) => format!("did you mean `{close}`?"),
                None => format!("the distributions are {}", names.join(", ")),
            };
            return Err(syn::Error::new(
                dist.span(),
                format!("unknown distribution `{dist}`\nhelp: {fix}"),
            ));
        };
        let args;
        let parens = parenthesized!(args in content);
        let (mut bounds, mut values) = (Vec::new(), Vec::new());
        if dist == "choice" {
            let list;
            bracketed!(list in args);
            values = Punctuated::<syn::Lit, Token![,]>::parse_terminated(&list)
                .map_err(|e| {
                    syn::Error::new(
                        e.span(),
                        format!(
                            "`choice` lists literal values\nhelp: write e.g. `{key}: {example}`"
                        ),
                    )
                })?
                .into_iter()
                .collect();
        } else {
            bounds = Punctuated::<Expr, Token![,]>::parse_terminated(&args)?
                .iter()
                .map(number_expr)
                .collect::<syn::Result<_>>()?;
            if bounds.len() != 2 {
                return Err(syn::Error::new(
                    parens.span.join(),
                    format!(
                        "`{dist}` takes a low and a high bound\nhelp: write e.g. `{key}: {example}`"
                    ),
                ));
            }
        }
        Ok(SearchParam {
            key,
            path,
            dist,
            bounds,
            values,
            span: parens.span.join(),
        })
    })
}

/// `min(valid.loss)` or `max(valid.accuracy)`.
fn objective(input: ParseStream) -> syn::Result<(Ident, MetricRef)> {
    const FORM: &str = "an objective is `min(..)` or `max(..)` of a recorded metric\nhelp: write e.g. `objective: min(valid.loss)`";
    let direction: Ident = input.parse().map_err(|e| syn::Error::new(e.span(), FORM))?;
    if direction != "min" && direction != "max" {
        return Err(syn::Error::new(direction.span(), FORM));
    }
    let inner;
    parenthesized!(inner in input);
    Ok((direction, metric_ref(&inner)?))
}

/// `{ /// doc\n name: Type = default, .. }`.
/// `{ name: Type = default, .. }`, each entry on its own: one with its type or default
/// missing is reported and kept as declared (broken), so that `config.<name>` elsewhere and the
/// sweep of it add no "no such field" error.
fn hparams(input: ParseStream, errors: &mut Errors) -> syn::Result<Vec<Hparam>> {
    const FORM: &str = "write `hparams: { hidden: usize = 64, dropout: f64 = 0.1 }`";
    let content;
    braced!(content in input);
    each_entry(&content, errors, |content, errors| {
        let docs = content.call(Attribute::parse_outer)?;
        let name: Ident = content.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                format!("expected a hyperparameter's name\nhelp: {FORM}"),
            )
        })?;
        // Past the name, a mistake is the entry's one error, and the name stays declared.
        let typed = |content: ParseStream| -> syn::Result<(syn::Type, Expr)> {
            if !content.peek(Token![:]) {
                return Err(syn::Error::new(
                    name.span(),
                    format!(
                        "`{name}` needs its type and default value\nhelp: write `{name}: usize = 64`"
                    ),
                ));
            }
            content.parse::<Token![:]>()?;
            let ty: syn::Type = content
                .parse()
                .map_err(|e| or_form(e, &format!("`{name}` needs a type"), FORM))?;
            if !content.peek(Token![=]) {
                return Err(syn::Error::new_spanned(
                    &ty,
                    format!(
                        "`{name}` needs a default value\nhelp: write `{name}: {} = <value>`",
                        quote::quote!(#ty)
                    ),
                ));
            }
            content.parse::<Token![=]>()?;
            let default: Expr = content
                .parse()
                .map_err(|e| or_form(e, &format!("`{name}` needs a default value"), FORM))?;
            Ok((ty, default))
        };
        let (ty, default, broken) = match typed(content) {
            Ok((ty, default)) => (ty, default, false),
            Err(error) => {
                errors.push(error);
                skip_to_comma(content);
                let ty = syn::parse_quote!(());
                (
                    ty,
                    syn::parse_quote!(::core::default::Default::default()),
                    true,
                )
            }
        };
        Ok(Hparam {
            docs,
            name,
            ty,
            default,
            broken,
        })
    })
}

/// `[expr, ..]`: values implementing `Callback`, checked where they are used.
/// `after_step: |model| ..`, or `{ name: |model| .., .. }` (one hook per optimizer).
fn after_step(input: ParseStream, errors: &mut Errors) -> syn::Result<AfterStep> {
    const FORM: &str = "write `after_step: |model| model.clip_weights(0.01)`, or with several optimizers `after_step: { critic: |model| .. }`";
    let hook = |input: ParseStream| -> syn::Result<Expr> {
        let expr: Expr = input.parse()?;
        match &expr {
            Expr::Closure(closure) if closure.inputs.len() == 1 => Ok(expr),
            _ => Err(syn::Error::new_spanned(
                &expr,
                format!(
                    "a hook is a closure of the model, `|model| ..`, returning the model\nhelp: {FORM}"
                ),
            )),
        }
    };
    if !input.peek(syn::token::Brace) {
        return Ok(AfterStep::All(Box::new(hook(input)?)));
    }
    let content;
    braced!(content in input);
    let entries = each_entry(&content, errors, |content, _| {
        let name: Ident = content.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                format!("each hook is named after its optimizer\nhelp: {FORM}"),
            )
        })?;
        content.parse::<Token![:]>()?;
        Ok((name, hook(content)?))
    })?;
    Ok(AfterStep::Per(entries))
}

/// `at_epoch_end: |model, at| ..`.
fn at_epoch_end(input: ParseStream) -> syn::Result<Expr> {
    let expr: Expr = input.parse()?;
    match &expr {
        Expr::Closure(closure) if closure.inputs.len() == 2 => Ok(expr),
        _ => Err(syn::Error::new_spanned(
            &expr,
            "`at_epoch_end` is a closure of the model and where the epoch ended, `|model, at| ..`\nhelp: write `at_epoch_end: |model, at| model.save_samples(at.run_dir.join(format!(\"samples-{}.png\", at.epoch)))`",
        )),
    }
}

fn callbacks(input: ParseStream, errors: &mut Errors) -> syn::Result<Vec<Expr>> {
    let content;
    bracketed!(content in input);
    const CALLBACK: (&str, &str) = (
        "a callback is an expression giving a value that implements `Callback`",
        "write e.g. `callbacks: [Logger::new(), StopAt { loss: 0.1 }]`",
    );
    let entries: Vec<Expr> =
        each_entry_in_form(&content, errors, CALLBACK, |content| content.parse())?;
    // Keras' and Lightning's callbacks whose work is a key of ours: one error at the callback,
    // which is dropped (rustc would add one per name it cannot find in it).
    Ok(entries
        .into_iter()
        .filter(|entry| {
            let Some(synonym) = foreign_callback(entry) else {
                return true;
            };
            errors.push(syn::Error::new_spanned(
                entry,
                format!(
                    "`{}` is not a callback here\nhelp: {}",
                    synonym.theirs,
                    synonym.help()
                ),
            ));
            false
        })
        .collect())
}

/// The callback of another trainer `entry` builds (`EarlyStopping(monitor = ..)`,
/// `ModelCheckpoint::new(..)`, `TensorBoard`), if it is one.
fn foreign_callback(
    entry: &Expr,
) -> Option<&'static burn_experiment_vocabulary::synonyms::Synonym> {
    let path = match entry {
        Expr::Call(call) => match &*call.func {
            Expr::Path(path) => &path.path,
            _ => return None,
        },
        Expr::Path(path) => &path.path,
        Expr::Struct(built) => &built.path,
        _ => return None,
    };
    // `ModelCheckpoint::new(..)`: the type, before its constructor.
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    segments.iter().rev().find_map(|name| {
        burn_experiment_vocabulary::synonyms::find(
            burn_experiment_vocabulary::synonyms::CALLBACKS,
            name,
        )
    })
}

fn policies(input: ParseStream) -> syn::Result<Vec<Policy>> {
    let mut policies = vec![policy(input)?];
    while input.peek(Token![|]) {
        input.parse::<Token![|]>()?;
        policies.push(policy(input)?);
    }
    Ok(policies)
}

fn policy(input: ParseStream) -> syn::Result<Policy> {
    let name: Ident = input.parse()?;
    let content;
    let policy = match name.to_string().as_str() {
        "none" => return Ok(Policy::None(name)),
        "keep_last" => {
            parenthesized!(content in input);
            Policy::KeepLast(number_or_constant(&content)?)
        }
        "every" => {
            parenthesized!(content in input);
            Policy::Every(number_or_constant(&content)?)
        }
        "best" => {
            parenthesized!(content in input);
            Policy::Best(metric_ref(&content)?)
        }
        other => {
            return Err(syn::Error::new(
                name.span(),
                format!(
                    "unknown checkpoint policy `{other}`\nhelp: use keep_last(n), best(split.metric), every(k) or none, joined with `|`"
                ),
            ));
        }
    };
    if !content.is_empty() {
        return Err(content.error("unexpected extra argument"));
    }
    Ok(policy)
}

fn patience(input: ParseStream) -> syn::Result<Patience> {
    let name: Ident = input.parse()?;
    if name != "patience" {
        return Err(syn::Error::new(
            name.span(),
            format!(
                "unknown early-stopping rule `{name}`\nhelp: write `patience(epochs, split.metric)` or `patience(epochs, split.metric, min_delta = x)`"
            ),
        ));
    }
    let content;
    parenthesized!(content in input);
    let patience = number_or_constant(&content)?;
    content.parse::<Token![,]>()?;
    let metric = metric_ref(&content)?;
    let mut min_delta = None;
    if content.peek(Token![,]) {
        content.parse::<Token![,]>()?;
        let key: Ident = content.parse()?;
        if key != "min_delta" {
            let help = match burn_experiment_vocabulary::synonyms::find(
                burn_experiment_vocabulary::synonyms::POLICY_ARGS,
                &key.to_string(),
            ) {
                Some(synonym) => synonym.help(),
                None => "its one named argument is `min_delta`: `patience(3, valid.loss, min_delta = 0.001)`".to_owned(),
            };
            return Err(syn::Error::new(
                key.span(),
                format!("`patience` has no argument `{key}`\nhelp: {help}"),
            ));
        }
        content.parse::<Token![=]>()?;
        min_delta = Some(number_or_constant(&content)?);
    }
    Ok(Patience {
        patience,
        metric,
        min_delta,
    })
}

fn clip(input: ParseStream) -> syn::Result<Clip> {
    let name: Ident = input.parse()?;
    let content;
    parenthesized!(content in input);
    let value = number_or_constant(&content)?;
    match name.to_string().as_str() {
        "norm" => Ok(Clip::Norm(value)),
        "param_norm" => Ok(Clip::ParamNorm(value)),
        "value" => Ok(Clip::Value(value)),
        other => Err(syn::Error::new(
            name.span(),
            format!(
                "unknown gradient clipping `{other}`\nhelp: use norm(max) (one global norm, PyTorch's `clip_grad_norm_`), param_norm(max) (each parameter's own, Burn's `GradientClippingConfig::Norm`) or value(max)"
            ),
        )),
    }
}

fn resume(input: ParseStream) -> syn::Result<ResumeFrom> {
    let name: Ident = input.parse()?;
    match name.to_string().as_str() {
        "latest" => Ok(ResumeFrom::Latest(name)),
        "epoch" => {
            let content;
            parenthesized!(content in input);
            Ok(ResumeFrom::Epoch(number(&content)?))
        }
        other => Err(syn::Error::new(
            name.span(),
            format!(
                "unknown resume point `{other}`\nhelp: write `resume: latest` or `resume: epoch(n)`"
            ),
        )),
    }
}

/// One word out of `allowed`.
/// `precision`'s value. Other trainers' spellings are answered with ours: Lightning's `16`,
/// `"bf16-mixed"`, Hugging Face's `fp16`, Keras's `mixed_float16`, PyTorch's `half`.
fn precision(input: ParseStream) -> syn::Result<Ident> {
    const OURS: &[&str] = &["f32", "bf16", "f16"];
    /// Ours for a word of theirs (`-` and `_` alike).
    fn ours(theirs: &str) -> Option<&'static str> {
        Some(match theirs.replace('-', "_").as_str() {
            "32" | "32_true" | "fp32" | "float32" | "full" => "f32",
            "bf16" | "bf16_mixed" | "bfloat16" | "mixed_bfloat16" => "bf16",
            "16" | "16_mixed" | "f16" | "fp16" | "float16" | "half" | "mixed_float16" => "f16",
            _ => return None,
        })
    }
    let fix = |span: Span, theirs: &str, ours: &str| {
        syn::Error::new(
            span,
            format!("`{theirs}` is written `{ours}` here\nhelp: write `precision: {ours}`"),
        )
    };
    if input.peek(LitStr) {
        let lit: LitStr = input.parse()?;
        return Err(match ours(&lit.value()) {
            Some(ours) => syn::Error::new(
                lit.span(),
                format!("`precision` is written without quotes\nhelp: write `precision: {ours}`"),
            ),
            None => syn::Error::new(
                lit.span(),
                "`precision` is a word without quotes\nhelp: write `precision: bf16` (or `f32`, `f16`)",
            ),
        });
    }
    // A number (`16`) or a word, and Lightning's `-mixed` after it.
    let (text, span) = match input.parse::<syn::LitInt>() {
        Ok(number) => (number.base10_digits().to_owned(), number.span()),
        Err(_) => {
            let word: Ident = input.parse()?;
            if OURS.iter().any(|o| word == o) && !input.peek(Token![-]) {
                return Ok(word);
            }
            (word.to_string(), word.span())
        }
    };
    let text = match input.peek(Token![-]) {
        true => {
            input.parse::<Token![-]>()?;
            format!("{text}-{}", Ident::parse_any(input)?)
        }
        false => text,
    };
    if let Some(ours) = ours(&text) {
        return Err(fix(span, &text, ours));
    }
    let help = match burn_experiment_vocabulary::one_edit_from(&text, OURS) {
        Some(near) => format!("write `precision: {near}`"),
        None => "use one of f32, bf16, f16 (f16 scales the loss)".to_owned(),
    };
    Err(syn::Error::new(
        span,
        format!("unknown precision `{text}`\nhelp: {help}"),
    ))
}

fn choice(input: ParseStream, key: &str, allowed: &[&str]) -> syn::Result<Ident> {
    let word: Ident = input.parse()?;
    if allowed.iter().any(|a| word == a) {
        Ok(word)
    } else {
        Err(syn::Error::new(
            word.span(),
            format!(
                "unknown {key} `{word}`\nhelp: use one of {}",
                allowed.join(", ")
            ),
        ))
    }
}
