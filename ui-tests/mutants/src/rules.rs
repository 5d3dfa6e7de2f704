//! The rules: each key (the loader's too) misspelt by one edit or replaced by another trainer's
//! word for it, each required key removed, each fixed-form value replaced by one of another
//! form or written in quotes, each count negated, each list's and map's delimiter dropped or
//! doubled, each metric's name and split misspelt, each optimizer, schedule, policy and step
//! name misspelt — the macro's to report; and, rustc's to report, each type in a step's
//! signature misspelt, each step's output type swapped for another output type, and each
//! derive's name, field role and field type misspelt.

use proc_macro2::Delimiter;

use crate::located::Tok;
use crate::{Level, Mutant, Source};

/// The brace group of each `training! { .. }` in `tokens`, searching inside groups too.
pub(crate) fn invocations(tokens: &[Tok]) -> Vec<&Tok> {
    let mut out = Vec::new();
    for (i, tok) in tokens.iter().enumerate() {
        if tok.ident().as_deref() == Some("training")
            && tokens.get(i + 1).is_some_and(|t| t.is_punct('!'))
            && let Some(group) = tokens.get(i + 2)
            && group.delimiter() == Some(Delimiter::Brace)
        {
            out.push(group);
        } else {
            out.extend(invocations(&tok.inner));
        }
    }
    out
}

/// A struct deriving one of ours.
pub(crate) struct Derive<'a> {
    /// `StepOutput` or `Batch`, as written in the `derive(..)`.
    name: &'a Tok,
    /// From its first attribute to the end of its body.
    item: (usize, usize),
    body: &'a Tok,
}

pub(crate) fn derives(tokens: &[Tok]) -> Vec<Derive<'_>> {
    let mut out = Vec::new();
    for (i, tok) in tokens.iter().enumerate() {
        let derived = tok.delimiter() == Some(Delimiter::Bracket)
            && i > 0
            && tokens[i - 1].is_punct('#')
            && tok.inner.first().and_then(Tok::ident).as_deref() == Some("derive");
        let name = derived
            .then(|| tok.inner.get(1))
            .flatten()
            .and_then(|args| {
                args.inner
                    .iter()
                    .find(|t| matches!(t.ident().as_deref(), Some("StepOutput" | "Batch")))
            });
        if let Some(name) = name {
            // The item's attributes start before this one; its body is its first brace group.
            let mut first = i - 1;
            while first >= 2
                && tokens[first - 1].delimiter() == Some(Delimiter::Bracket)
                && tokens[first - 2].is_punct('#')
            {
                first -= 2;
            }
            if let Some(body) = tokens[i..]
                .iter()
                .find(|t| t.delimiter() == Some(Delimiter::Brace))
            {
                out.push(Derive {
                    name,
                    item: (tokens[first].start, body.end),
                    body,
                });
            }
        }
        out.extend(derives(&tok.inner));
    }
    out
}

/// The entries of a list or map's trees, split at the commas between them: a comma between a
/// closure's `|..|` (`step: |model, batch| ..`) is the closure's.
fn entries(inner: &[Tok]) -> Vec<&[Tok]> {
    let mut out = Vec::new();
    let mut from = 0;
    for (i, tok) in inner.iter().enumerate() {
        let current = &inner[from..i];
        let in_params = key_of(current).is_some_and(|at| {
            let value = &current[at + 2..];
            value.first().is_some_and(|t| t.is_punct('|'))
                && value.iter().filter(|t| t.is_punct('|')).count() == 1
        });
        if tok.is_punct(',') && !in_params {
            out.push(current);
            from = i + 1;
        }
    }
    out.push(&inner[from..]);
    out.retain(|e| !e.is_empty());
    out
}

/// Where an entry's key is (after its doc comments), if it has one.
fn key_of(entry: &[Tok]) -> Option<usize> {
    let mut at = 0;
    while entry.get(at).is_some_and(|t| t.is_punct('#')) {
        at += 2;
    }
    (entry.get(at)?.ident().is_some() && entry.get(at + 1)?.is_punct(':')).then_some(at)
}

fn span(toks: &[Tok]) -> (usize, usize) {
    (toks[0].start, toks[toks.len() - 1].end)
}

/// Values of each form a key can be given, one of each.
const FORMS: [(&str, &str); 6] = [
    ("number", "3"),
    ("string", "\"three\""),
    ("list", "[three]"),
    ("map", "{ three: 3 }"),
    ("call", "three(3)"),
    ("path", "three::four"),
];

/// The form of each key whose value is not Rust of the user's (`name`, `model`, `step`); a
/// list of Rust expressions (`callbacks`) or of module paths (`freeze`) is rustc's or the
/// model's to judge, so its own form is left out with it.
fn form_of(key: &str) -> Option<&'static str> {
    Some(match key {
        "epochs" | "grad_accumulation" | "seed" | "unfreeze" | "ema" | "lr" | "devices" => "number",
        "artifacts" | "init_from" | "device" => "string",
        "metrics" | "callbacks" | "freeze" | "steps" => "list",
        "loader" | "optimizers" | "groups" | "lora" | "hparams" | "sweep" => "map",
        "optimizer" | "lr_schedule" | "checkpoint" | "early_stopping" | "grad_clip" | "resume"
        | "engine" | "strategy" | "data_parallel" => "call",
        "gradient_checkpointing" => "bool",
        _ => return None,
    })
}

/// The values of other forms than `key`'s.
fn other_forms(key: &str) -> Vec<&'static str> {
    let Some(own) = form_of(key) else {
        return Vec::new();
    };
    FORMS
        .iter()
        .filter(|(form, _)| *form != own)
        .filter(|(form, _)| !(matches!(key, "callbacks" | "freeze") && *form == "list"))
        .map(|(_, value)| *value)
        .collect()
}

/// The keys every experiment must have.
fn required() -> Vec<&'static str> {
    burn_experiment_vocabulary::keys::KEYS
        .iter()
        .filter(|k| k.required == "yes")
        .map(|k| k.name)
        .collect()
}

/// A word misspelt by one edit: its last letter dropped, or an `x` added to a short one.
fn misspelt(word: &str) -> String {
    match word.len() > 3 {
        true => word[..word.len() - 1].to_owned(),
        false => format!("{word}x"),
    }
}

/// The mutants of one file.
struct Out<'a> {
    source: &'a Source,
    invocation: Option<usize>,
    level: Level,
    mutants: Vec<Mutant>,
}

impl Out<'_> {
    /// Bytes `from..to` replaced `with`; the error belongs inside `within` (of the original
    /// text, holding the edit).
    fn push(
        &mut self,
        rule: &'static str,
        what: String,
        (from, to): (usize, usize),
        with: &str,
        within: (usize, usize),
    ) {
        let text = &self.source.text;
        let mutated = format!("{}{with}{}", &text[..from], &text[to..]);
        let end = within.1 + with.len() - (to - from);
        self.mutants.push(Mutant {
            rule,
            what,
            example: self.source.example.clone(),
            file: self.source.file.clone(),
            text: mutated,
            within: (within.0, end),
            invocation: self.invocation,
            level: self.level,
        });
    }
}

/// Every mutant of a file, in a fixed order.
pub fn mutants(source: &Source) -> Vec<Mutant> {
    let tokens = crate::located::file(&source.text).expect("an example lexes");
    let mut out = Out {
        source,
        invocation: None,
        level: Level::Macro,
        mutants: Vec::new(),
    };
    for (index, group) in invocations(&tokens).into_iter().enumerate() {
        out.invocation = Some(index);
        invocation(&mut out, group);
    }
    out.invocation = None;
    out.level = Level::Compiler;
    for derive in derives(&tokens) {
        derived(&mut out, &derive);
    }
    out.mutants
}

fn invocation(out: &mut Out, group: &Tok) {
    let whole = (group.start, group.end);
    let required = required();
    let entries = entries(&group.inner);
    // The output types the file's steps return, for the swap.
    let mut outputs: Vec<String> = [
        "burn::train::ClassificationOutput",
        "burn::train::RegressionOutput",
    ]
    .map(String::from)
    .to_vec();
    for entry in &entries {
        for step in steps(entry) {
            if let Some(output) = step.output {
                let written = out.source.text[output.0..output.1].to_owned();
                if !outputs.contains(&written) {
                    outputs.push(written);
                }
            }
        }
    }
    for (i, entry) in entries.iter().enumerate() {
        let Some(at) = key_of(entry) else {
            continue;
        };
        let key = entry[at].ident().unwrap();
        let key_span = (entry[at].start, entry[at].end);
        let this = (entry[at].start, entry[entry.len() - 1].end);
        let value = &entry[at + 2..];
        out.level = Level::Macro;
        if key.len() > 3 {
            let to = &misspelt(&key);
            out.push("key misspelt", format!("{key} → {to}"), key_span, to, this);
        }
        for synonym in burn_experiment_vocabulary::synonyms::KEYS
            .iter()
            .filter(|s| s.ours == Some(key.as_str()))
        {
            out.push(
                "key as another trainer writes it",
                format!("{key} → {}", synonym.theirs),
                key_span,
                synonym.theirs,
                this,
            );
        }
        if required.contains(&key.as_str()) {
            let end = match entries.get(i + 1) {
                Some(next) => next[0].start,
                None => group.inner.last().unwrap().end,
            };
            out.push(
                "required key removed",
                key.clone(),
                (entry[0].start, end),
                "",
                whole,
            );
        }
        if value.is_empty() {
            continue;
        }
        let value_span = span(value);
        if let [number] = value
            && matches!(number.tree, proc_macro2::TokenTree::Literal(_))
            && number.tree.to_string().parse::<u64>().is_ok()
        {
            out.push(
                "count negated",
                format!("{key}: -{}", number.tree),
                (number.start, number.start),
                "-",
                this,
            );
        }
        if !matches!(form_of(&key), None | Some("string")) {
            let written = &out.source.text[value_span.0..value_span.1];
            let quoted = proc_macro2::Literal::string(written).to_string();
            out.push(
                "value in quotes",
                format!("{key}: {quoted}"),
                value_span,
                &quoted,
                this,
            );
        }
        for form in other_forms(&key) {
            out.push(
                "value of another form",
                format!("{key}: {form}"),
                value_span,
                form,
                this,
            );
        }
        if [
            "optimizer",
            "lr_schedule",
            "checkpoint",
            "early_stopping",
            "grad_clip",
        ]
        .contains(&key.as_str())
        {
            for (j, tok) in value.iter().enumerate() {
                if let Some(name) = tok.ident()
                    && value
                        .get(j + 1)
                        .is_some_and(|t| t.delimiter() == Some(Delimiter::Parenthesis))
                {
                    let to = misspelt(&name);
                    out.push(
                        "optimizer, schedule or policy name misspelt",
                        format!("{name} → {to}"),
                        (tok.start, tok.end),
                        &to,
                        this,
                    );
                    if key == "lr_schedule" {
                        for synonym in burn_experiment_vocabulary::synonyms::SCHEDULES
                            .iter()
                            .filter(|s| s.ours == Some(name.as_str()))
                        {
                            out.push(
                                "schedule as another trainer writes it",
                                format!("{name} → {}", synonym.theirs),
                                (tok.start, tok.end),
                                synonym.theirs,
                                this,
                            );
                        }
                    }
                }
            }
        }
        let list = match value {
            [list]
                if matches!(
                    list.delimiter(),
                    Some(Delimiter::Bracket | Delimiter::Brace)
                ) =>
            {
                Some(list)
            }
            _ => None,
        };
        if let Some(list) = list {
            delimiters(out, &key, list, this);
        }
        if let (Some(list), "loader") = (list, key.as_str()) {
            loader(out, list, this);
        }
        if let (Some(list), "search") = (list, key.as_str()) {
            search(out, list, this);
        }
        if let (Some(list), "optimizers" | "steps") = (list, key.as_str()) {
            for name in names(&list.inner) {
                let to = format!("{}x", name.ident().unwrap());
                out.push(
                    "optimizer or step name misspelt",
                    format!("{key}: {to}"),
                    (name.start, name.end),
                    &to,
                    this,
                );
            }
        }
        if let (Some(list), "metrics") = (list, key.as_str()) {
            metrics(out, list, this);
        }
        out.level = Level::Compiler;
        for step in steps(entry) {
            for &(from, to) in step.types.iter().chain(&step.output) {
                let written = &out.source.text[from..to];
                // The last name of the path, before its generic arguments.
                let Some(last) = step.last_names.iter().find(|&&(a, b)| a >= from && b <= to)
                else {
                    continue;
                };
                let name = &out.source.text[last.0..last.1];
                let to_name = misspelt(name);
                out.push(
                    "type in a step's signature misspelt",
                    format!("{written} → {to_name}"),
                    *last,
                    &to_name,
                    this,
                );
            }
            if let Some(output) = step.output {
                let written = &out.source.text[output.0..output.1];
                let last = |t: &str| t.rsplit("::").next().unwrap_or(t).to_owned();
                for other in outputs.iter().filter(|o| last(o) != last(written)) {
                    out.push(
                        "step output type swapped",
                        format!("{written} → {other}"),
                        output,
                        other,
                        this,
                    );
                }
            }
        }
    }
}

/// The entry names of `optimizers: { name: .. }` or `steps: [name: ..]`: an ident starting an
/// entry, outside a closure's `|..|` (whose parameters are `name: Type` too).
fn names(inside: &[Tok]) -> Vec<&Tok> {
    let mut out = Vec::new();
    for (i, tok) in inside.iter().enumerate() {
        let pipes = inside[..i].iter().filter(|t| t.is_punct('|')).count();
        let starts_entry = pipes % 2 == 0 && (i == 0 || inside[i - 1].is_punct(','));
        if starts_entry && tok.ident().is_some_and(|n| n.len() >= 2) {
            out.push(tok);
        }
    }
    out
}

/// Each delimiter of a list or map dropped, then doubled: its commas outside a closure's
/// `|..|`, not a trailing one (whose loss is no mistake).
fn delimiters(out: &mut Out, key: &str, list: &Tok, this: (usize, usize)) {
    let inside = &list.inner;
    for i in 0..inside.len().saturating_sub(1) {
        let in_closure = inside[..i].iter().filter(|t| t.is_punct('|')).count() % 2 == 1;
        if inside[i].is_punct(',') && !in_closure {
            let at = (inside[i].start, inside[i].end);
            out.push(
                "list delimiter dropped",
                format!("{key}, entry {}", i),
                at,
                "",
                this,
            );
            out.push(
                "list delimiter doubled",
                format!("{key}, entry {}", i),
                at,
                ",,",
                this,
            );
        }
    }
}

/// The loader's own keys misspelt, its required keys removed and its counts given a value of
/// another form.
fn loader(out: &mut Out, map: &Tok, this: (usize, usize)) {
    let inner = entries(&map.inner);
    for (i, entry) in inner.iter().enumerate() {
        let Some(at) = key_of(entry) else {
            continue;
        };
        let key = entry[at].ident().unwrap();
        let key_span = (entry[at].start, entry[at].end);
        if key.len() > 3 {
            let to = &misspelt(&key);
            out.push(
                "loader key misspelt",
                format!("loader.{key} → {to}"),
                key_span,
                to,
                this,
            );
        }
        if ["train", "valid", "batcher", "batch_size"].contains(&key.as_str()) {
            let end = match inner.get(i + 1) {
                Some(next) => next[0].start,
                None => map.inner.last().unwrap().end,
            };
            out.push(
                "required key removed",
                format!("loader.{key}"),
                (entry[0].start, end),
                "",
                this,
            );
        }
        if ["batch_size", "shuffle", "workers"].contains(&key.as_str()) && entry.len() > at + 2 {
            out.push(
                "value of another form",
                format!("loader.{key}: \"three\""),
                span(&entry[at + 2..]),
                "\"three\"",
                this,
            );
        }
    }
}

/// A search's entries misspelt and its required ones removed; its distributions, sampler,
/// pruner and objective's direction misspelt; its counts given a value of another form.
fn search(out: &mut Out, map: &Tok, this: (usize, usize)) {
    let inner = entries(&map.inner);
    for (i, entry) in inner.iter().enumerate() {
        let Some(at) = key_of(entry) else {
            continue;
        };
        let key = entry[at].ident().unwrap();
        let to = &misspelt(&key);
        out.push(
            "search entry misspelt",
            format!("search.{key} → {to}"),
            (entry[at].start, entry[at].end),
            to,
            this,
        );
        for synonym in burn_experiment_vocabulary::synonyms::SEARCH
            .iter()
            .filter(|s| s.ours == Some(key.as_str()))
        {
            out.push(
                "search entry as another tuner writes it",
                format!("search.{key} → {}", synonym.theirs),
                (entry[at].start, entry[at].end),
                synonym.theirs,
                this,
            );
        }
        if ["space", "objective"].contains(&key.as_str()) {
            let end = match inner.get(i + 1) {
                Some(next) => next[0].start,
                None => map.inner.last().unwrap().end,
            };
            out.push(
                "required key removed",
                format!("search.{key}"),
                (entry[0].start, end),
                "",
                this,
            );
        }
        let value = &entry[(at + 2).min(entry.len())..];
        if ["trials", "seed"].contains(&key.as_str()) && !value.is_empty() {
            out.push(
                "value of another form",
                format!("search.{key}: \"three\""),
                span(value),
                "\"three\"",
                this,
            );
        }
        // `sampler: tpe`, `prune: median`, `objective: min(..)`: the word misspelt.
        if let ("sampler" | "prune" | "objective", Some(word)) =
            (key.as_str(), value.first().and_then(Tok::ident))
        {
            let to = format!("{word}x");
            out.push(
                "search word misspelt",
                format!("search.{key}: {to}"),
                (value[0].start, value[0].end),
                &to,
                this,
            );
        }
        // Each distribution of `space: { key: dist(..) }`.
        if let ("space", Some(space)) = (key.as_str(), value.first()) {
            for param in entries(&space.inner) {
                let Some(name) = key_of(param).and_then(|k| param.get(k + 2)) else {
                    continue;
                };
                let Some(dist) = name.ident() else {
                    continue;
                };
                let to = format!("{dist}x");
                out.push(
                    "search word misspelt",
                    format!("search.space: {to}"),
                    (name.start, name.end),
                    &to,
                    this,
                );
            }
        }
    }
}

/// Each metric's name misspelt (`split.name` → `split.nam`: the name after `split.` or
/// `split.step.`, not followed by `(` or `.`), and its split too (`valid.loss` → `vali.loss`).
fn metrics(out: &mut Out, list: &Tok, this: (usize, usize)) {
    let inside = &list.inner;
    for (i, tok) in inside.iter().enumerate() {
        let Some(name) = tok.ident() else {
            continue;
        };
        let after_dot = i > 0 && inside[i - 1].is_punct('.');
        let last = !inside.get(i + 1).is_some_and(|t| t.is_punct('.'));
        if !after_dot || !last || name == "metric" || name.len() < 4 {
            continue;
        }
        if let Some(split) = i.checked_sub(2).map(|s| &inside[s])
            && let Some(split_name) = split.ident()
            && ["train", "valid", "test"].contains(&split_name.as_str())
        {
            let to = &misspelt(&split_name);
            out.push(
                "metric name or split misspelt",
                format!("{split_name}.{name} → {to}.{name}"),
                (split.start, split.end),
                to,
                this,
            );
        }
        let to = &misspelt(&name);
        out.push(
            "metric name or split misspelt",
            format!("{name} → {to}"),
            (tok.start, tok.end),
            to,
            this,
        );
        // `valid.loss` → `val_loss`: split and metric in one word, as Keras writes them.
        if let Some(split) = i.checked_sub(2).map(|s| &inside[s])
            && let Some(split_name) = split.ident()
        {
            let prefix = match split_name.as_str() {
                "valid" => "val_",
                "train" => "train_",
                _ => continue,
            };
            for synonym in burn_experiment_vocabulary::synonyms::METRICS
                .iter()
                .filter(|s| s.ours == Some(name.as_str()) && s.theirs.starts_with(prefix))
            {
                out.push(
                    "metric as another trainer writes it",
                    format!("{split_name}.{name} → {}", synonym.theirs),
                    (split.start, tok.end),
                    synonym.theirs,
                    this,
                );
            }
        }
    }
}

/// A step closure's signature: where its parameters' types and its output type are written,
/// and the last name of each type's path.
struct Step {
    types: Vec<(usize, usize)>,
    output: Option<(usize, usize)>,
    last_names: Vec<(usize, usize)>,
}

/// The step closures of a `step:` or `steps: [..]` entry.
fn steps(entry: &[Tok]) -> Vec<Step> {
    let Some(at) = key_of(entry) else {
        return Vec::new();
    };
    let value = &entry[at + 2..];
    match (entry[at].ident().as_deref(), value) {
        (Some("step"), _) => closure(value).into_iter().collect(),
        (Some("steps"), [list]) if list.delimiter() == Some(Delimiter::Bracket) => {
            entries(&list.inner)
                .into_iter()
                .filter_map(|e| key_of(e).and_then(|at| closure(&e[at + 2..])))
                .collect()
        }
        _ => Vec::new(),
    }
}

fn closure(value: &[Tok]) -> Option<Step> {
    if !value.first()?.is_punct('|') {
        return None;
    }
    let close = 1 + value[1..].iter().position(|t| t.is_punct('|'))?;
    let mut step = Step {
        types: Vec::new(),
        output: None,
        last_names: Vec::new(),
    };
    // Each `name: Type` between the pipes; a `:` of a path is joint with its neighbour.
    let params = &value[1..close];
    for (i, tok) in params.iter().enumerate() {
        let path_colon = |j: usize| params.get(j).is_some_and(|t| t.is_punct(':'));
        if tok.is_punct(':') && !path_colon(i + 1) && !(i > 0 && path_colon(i - 1)) {
            let end = params[i + 1..]
                .iter()
                .position(|t| t.is_punct(','))
                .map_or(params.len(), |p| i + 1 + p);
            if end > i + 1 {
                step.types
                    .push(type_at(&params[i + 1..end], &mut step.last_names));
            }
        }
    }
    let rest = &value[close + 1..];
    if rest.first().is_some_and(|t| t.is_punct('-')) && rest.get(1).is_some_and(|t| t.is_punct('>'))
    {
        let body = rest
            .iter()
            .position(|t| t.delimiter() == Some(Delimiter::Brace))?;
        if body > 2 {
            step.output = Some(type_at(&rest[2..body], &mut step.last_names));
        }
    }
    Some(step)
}

/// A type's span, noting the last name of its path (before any `<..>`).
fn type_at(toks: &[Tok], last_names: &mut Vec<(usize, usize)>) -> (usize, usize) {
    let generics = toks
        .iter()
        .position(|t| t.is_punct('<'))
        .unwrap_or(toks.len());
    if let Some(name) = toks[..generics].iter().rev().find(|t| t.ident().is_some()) {
        last_names.push((name.start, name.end));
    }
    span(toks)
}

/// A derive's name, each field's role attribute and each field's type, misspelt.
fn derived(out: &mut Out, derive: &Derive) {
    let name = derive.name.ident().unwrap();
    let to = misspelt(&name);
    out.push(
        "derive name misspelt",
        format!("derive({name}) → {to}"),
        (derive.name.start, derive.name.end),
        &to,
        derive.item,
    );
    for field in entries(&derive.body.inner) {
        let Some(at) = field_name(field) else {
            continue;
        };
        // Its attributes come in pairs (`#`, `[..]`) before its `pub` and name.
        for attr in field[..at].chunks(2) {
            if let [hash, group] = attr
                && hash.is_punct('#')
                && let Some(role) = group.inner.first()
                && let Some(word) = role.ident()
                && ["loss", "logits", "targets", "pad"].contains(&word.as_str())
            {
                let to = misspelt(&word);
                out.push(
                    "derive field role misspelt",
                    format!("#[{word}] → #[{to}]"),
                    (role.start, role.end),
                    &to,
                    derive.item,
                );
            }
        }
        let ty = &field[at + 2..];
        if ty.is_empty() {
            continue;
        }
        let mut last = Vec::new();
        type_at(ty, &mut last);
        if let Some(&(from, to)) = last.first() {
            let name = &out.source.text[from..to];
            let to_name = misspelt(name);
            out.push(
                "derive field type misspelt",
                format!("{name} → {to_name}"),
                (from, to),
                &to_name,
                derive.item,
            );
        }
    }
}

/// Where a field's name is: after its attributes and its `pub` (`pub(crate)`).
fn field_name(field: &[Tok]) -> Option<usize> {
    let mut at = 0;
    while field.get(at).is_some_and(|t| t.is_punct('#')) {
        at += 2;
    }
    if field.get(at).and_then(Tok::ident).as_deref() == Some("pub") {
        at += 1;
        if field
            .get(at)
            .is_some_and(|t| t.delimiter() == Some(Delimiter::Parenthesis))
        {
            at += 1;
        }
    }
    (field.get(at)?.ident().is_some() && field.get(at + 1)?.is_punct(':')).then_some(at)
}
