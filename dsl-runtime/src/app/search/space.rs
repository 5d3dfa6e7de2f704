//! A search space: each key's distribution, and the coordinates samplers draw in. A sampler
//! works on one real line per key (the logarithm for `log_uniform`, `[low, high + 1)` for
//! `int`, the index for `choice`), so random and TPE share the mapping back to config values.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use burn_experiment_vocabulary::search::{self, Holds};

/// How one key is drawn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Dist {
    /// Uniform in the logarithm, from `low` to `high` (both above 0).
    #[allow(missing_docs)]
    LogUniform { low: f64, high: f64 },
    /// Uniform from `low` to `high`.
    #[allow(missing_docs)]
    Uniform { low: f64, high: f64 },
    /// A whole number from `low` to `high`, both included.
    #[allow(missing_docs)]
    Int { low: i64, high: i64 },
    /// One of `values`, as written.
    #[allow(missing_docs)]
    Choice { values: Vec<Value> },
}

/// A key of the space and its distribution.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Param {
    /// The config key (`lr`, `optimizers.generator.lr`, an own hyperparameter).
    pub key: String,
    /// How it is drawn.
    pub dist: Dist,
}

impl Dist {
    /// `log_uniform(1e-4, 1e-1)`, `uniform(0, 0.5)`, `int(1, 8)` or `choice(16, 32)` (also
    /// `choice([16, 32])`), as `--search key=..` writes it; the bounds checked as `training!`
    /// checks them (what `key` holds is known from its current value).
    pub fn parse(key: &str, text: &str, current: Option<&Value>) -> Result<Dist, String> {
        let names = search::distribution_names().join(", ");
        let form = || {
            format!(
                "--search {key}=`{text}`: write a distribution, one of {names}, e.g. `--search {key}=log_uniform(1e-4,1e-1)`"
            )
        };
        let (name, args) = text
            .trim()
            .strip_suffix(')')
            .and_then(|t| t.split_once('('))
            .ok_or_else(form)?;
        let name = name.trim();
        let args = args.trim();
        if name == "choice" {
            let list = args
                .strip_prefix('[')
                .and_then(|a| a.strip_suffix(']'))
                .unwrap_or(args);
            let values = crate::app::sweep::flag_values(list);
            if values.is_empty() {
                return Err(format!(
                    "--search {key}=choice(): list the values, e.g. `choice(16,32)`"
                ));
            }
            return Ok(Dist::Choice { values });
        }
        if !search::DISTRIBUTIONS.iter().any(|(n, _)| *n == name) {
            let fix = match burn_experiment_vocabulary::closest(name, &search::distribution_names())
            {
                Some(close) => format!("did you mean `{close}`?"),
                None => format!("the distributions are {names}"),
            };
            return Err(format!("--search {key}: no distribution `{name}`; {fix}"));
        }
        let bounds: Vec<f64> = args
            .split(',')
            .map(|a| a.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|_| form())?;
        let [low, high] = bounds[..] else {
            return Err(form());
        };
        let holds = match current {
            Some(Value::Number(n)) if n.is_f64() => Holds::Float,
            Some(Value::Number(_)) => Holds::Whole,
            // An optional number not set yet (`seed`, `ema`): its bound says.
            Some(Value::Null) | None => key_bound(key).map_or(Holds::Float, Holds::of_bound),
            Some(_) => Holds::Other,
        };
        search::check(key, name, low, high, holds, key_bound(key))
            .map_err(|(what, fix)| format!("--search {key}: {what}: {fix}"))?;
        Ok(match name {
            "log_uniform" => Dist::LogUniform { low, high },
            "uniform" => Dist::Uniform { low, high },
            _ => Dist::Int {
                low: low as i64,
                high: high as i64,
            },
        })
    }

    /// The sampler's line for this key.
    pub fn range(&self) -> tpe::range::Range {
        let (start, end) = match self {
            Dist::LogUniform { low, high } => (low.ln(), high.ln()),
            Dist::Uniform { low, high } => (*low, *high),
            Dist::Int { low, high } => (*low as f64, *high as f64 + 1.0),
            Dist::Choice { values } => (0.0, values.len() as f64),
        };
        tpe::range(start, end).expect("bounds checked when the space was declared")
    }

    /// Whether TPE models this key with a histogram (its values are categories).
    pub fn categorical(&self) -> bool {
        matches!(self, Dist::Choice { .. })
    }

    /// The config value at point `x` of the line.
    pub fn value(&self, x: f64) -> Value {
        match self {
            Dist::LogUniform { .. } => Value::from(x.exp()),
            Dist::Uniform { .. } => Value::from(x),
            Dist::Int { low, high } => Value::from((x.floor() as i64).clamp(*low, *high)),
            Dist::Choice { values } => values[(x.floor() as usize).min(values.len() - 1)].clone(),
        }
    }

    /// The point of the line a config value comes from (what TPE is told), inside the range.
    pub fn point(&self, value: &Value) -> Option<f64> {
        let x = match self {
            Dist::LogUniform { .. } => value.as_f64()?.ln(),
            Dist::Uniform { .. } => value.as_f64()?,
            Dist::Int { .. } => value.as_f64()? + 0.5,
            Dist::Choice { values } => values.iter().position(|v| v == value)? as f64 + 0.5,
        };
        // The top of a continuous range is drawn as the last point below it.
        let range = self.range();
        let x = x.min(range.end() - range.width() * 1e-12);
        range.contains(x).then_some(x)
    }

    /// The distribution as `training!` writes it.
    pub fn describe(&self) -> String {
        match self {
            Dist::LogUniform { low, high } => format!("log_uniform({low}, {high})"),
            Dist::Uniform { low, high } => format!("uniform({low}, {high})"),
            Dist::Int { low, high } => format!("int({low}, {high})"),
            Dist::Choice { values } => format!(
                "choice([{}])",
                values
                    .iter()
                    .map(Value::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// The bound of a built-in key (an optimizer's rate is a rate); `None` for an own
/// hyperparameter, whose type alone says.
fn key_bound(key: &str) -> Option<burn_experiment_vocabulary::bounds::Bound> {
    let last = key.rsplit('.').next().unwrap_or(key);
    burn_experiment_vocabulary::bounds::BOUNDS
        .iter()
        .find(|(k, _)| *k == last)
        .map(|(_, b)| *b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_into_distributions_checked_like_the_macro() {
        let lr = Value::from(0.1);
        assert_eq!(
            Dist::parse("lr", "log_uniform(1e-4, 1e-1)", Some(&lr)),
            Ok(Dist::LogUniform {
                low: 1e-4,
                high: 1e-1
            })
        );
        let err = Dist::parse("lr", "log_uniform(0, 1)", Some(&lr)).unwrap_err();
        assert!(err.contains("needs low > 0"), "{err}");
        let err = Dist::parse("lr", "log_unifrom(1e-4, 1)", Some(&lr)).unwrap_err();
        assert!(err.contains("did you mean `log_uniform`?"), "{err}");
        let err = Dist::parse("batch_size", "uniform(8, 64)", Some(&Value::from(16))).unwrap_err();
        assert!(err.contains("`int(low, high)`"), "{err}");
        assert_eq!(
            Dist::parse("batch_size", "choice([16, 32])", Some(&Value::from(16))),
            Ok(Dist::Choice {
                values: vec![Value::from(16), Value::from(32)]
            })
        );
        assert!(Dist::parse("lr", "log_uniform(1e-4)", Some(&lr)).is_err());
    }

    #[test]
    fn every_point_of_the_line_maps_to_a_value_and_back() {
        let dists = [
            Dist::LogUniform {
                low: 1e-4,
                high: 1e-1,
            },
            Dist::Uniform {
                low: -1.0,
                high: 1.0,
            },
            Dist::Int { low: 2, high: 5 },
            Dist::Choice {
                values: vec![Value::from("a"), Value::from("b")],
            },
        ];
        for dist in dists {
            let range = dist.range();
            for i in 0..=100 {
                let x = range.start() + (range.end() - range.start()) * f64::from(i) / 100.0;
                let x = x.min(range.end() - 1e-9);
                let value = dist.value(x);
                let back = dist
                    .point(&value)
                    .unwrap_or_else(|| panic!("{dist:?} {value}"));
                assert_eq!(dist.value(back), value, "{dist:?} at {x}");
            }
        }
    }
}
