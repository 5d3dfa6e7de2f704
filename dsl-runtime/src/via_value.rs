//! Serde impls for the runtime types that sit inside every experiment's generated config.
//!
//! A release build does not share generic instances between crates, so a plain
//! `#[derive(Serialize, Deserialize)]` on these types is compiled again in each experiment
//! crate for each serializer it meets, tagged-enum buffering included: that was most of the
//! serde code in an experiment's binary and a large part of its rebuild time. Routing them
//! through `serde_json::Value` keeps the derived code here, compiled once by non-generic
//! functions; an experiment crate instantiates only `Value`'s own (small) impls.

/// Implements `Serialize` and `Deserialize` for `$ty` through `serde_json::Value`. The type
/// derives serde with `#[serde(remote = "Self")]`, which turns the derived impls into inherent
/// functions that the trait impls below call from non-generic code.
macro_rules! via_value {
    ($ty:ty) => {
        impl $ty {
            fn json(&self) -> serde_json::Value {
                <$ty>::serialize(self, serde_json::value::Serializer)
                    .expect("a runtime config value converts to JSON")
            }

            fn from_json(value: serde_json::Value) -> Result<Self, serde_json::Error> {
                <$ty>::deserialize(value)
            }
        }

        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serde::Serialize::serialize(&self.json(), serializer)
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let value = <serde_json::Value as serde::Deserialize>::deserialize(deserializer)?;
                <$ty>::from_json(value).map_err(serde::de::Error::custom)
            }
        }
    };
}

pub(crate) use via_value;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::checkpoint::{Policy, Resume};
    use crate::config::spec::Schedule;
    use crate::history::Split;

    #[test]
    fn values_keep_their_derived_json_form_and_round_trip() {
        let schedule = Schedule::WarmUp {
            steps: 4,
            then: Box::new(Schedule::Cosine { min_lr: 0.0 }),
        };
        let value = serde_json::to_value(&schedule).unwrap();
        assert_eq!(
            value,
            json!({"kind": "warm_up", "steps": 4, "then": {"kind": "cosine", "min_lr": 0.0}})
        );
        assert_eq!(serde_json::from_value::<Schedule>(value).unwrap(), schedule);
        let policies = vec![
            Policy::KeepLast { n: 2 },
            Policy::Best {
                split: Split::Valid,
                metric: "loss".into(),
            },
        ];
        let text = serde_json::to_string(&policies).unwrap();
        assert_eq!(
            text,
            r#"[{"kind":"keep_last","n":2},{"kind":"best","split":"valid","metric":"loss"}]"#
        );
        assert_eq!(
            serde_json::from_str::<Vec<Policy>>(&text).unwrap(),
            policies
        );
        assert_eq!(
            serde_json::from_value::<Resume>(json!({"epoch": 3})).unwrap(),
            Resume::Epoch(3)
        );
    }

    #[test]
    fn errors_inside_a_value_keep_serdes_message() {
        let err = serde_json::from_value::<Schedule>(json!({"kind": "cosine", "min": 0.1}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing field `min_lr`"), "{err}");
        let err = serde_json::from_value::<Schedule>(json!({"kind": "sawtooth"}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown variant `sawtooth`"), "{err}");
    }
}
