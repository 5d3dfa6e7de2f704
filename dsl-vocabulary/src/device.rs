//! Device names: `device: "cuda:1"` in `training!` (checked at compile time) and `--device`
//! (at run time, where the runtime also knows which backends the binary was built with).

/// The spellings [`split`] accepts, for messages.
pub const SPELLINGS: &str = "`flex` (the default), `cpu`, `ndarray`, `cuda`, `cuda:N`, `wgpu` or `wgpu:N` (the N-th discrete GPU)";

/// A device name split into its backend and an optional index (`cuda:1` → `("cuda", Some(1))`),
/// or why it is not one.
pub fn split(spec: &str) -> Result<(&str, Option<usize>), String> {
    let (backend, index) = match spec.split_once(':') {
        Some((backend, index)) => match index.parse::<usize>() {
            Ok(index) => (backend, Some(index)),
            Err(_) => {
                return Err(format!(
                    "`{spec}`: the part after `:` must be a device index (0, 1, ...)"
                ));
            }
        },
        None => (spec, None),
    };
    match (backend, index) {
        ("cuda" | "wgpu", _) | ("flex" | "cpu" | "ndarray", None) => Ok((backend, index)),
        ("flex" | "cpu" | "ndarray", Some(_)) => Err(format!(
            "`{spec}`: the `{backend}` backend has one device; write `{backend}`"
        )),
        _ => Err(format!("unknown device `{spec}`")),
    }
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn names_split_into_backend_and_index() {
        assert_eq!(split("cuda:1"), Ok(("cuda", Some(1))));
        assert_eq!(split("wgpu:0"), Ok(("wgpu", Some(0))));
        assert_eq!(split("cuda"), Ok(("cuda", None)));
        assert_eq!(split("flex"), Ok(("flex", None)));
        assert!(split("cpu:1").unwrap_err().contains("has one device"));
        assert!(split("cuda:x").unwrap_err().contains("device index"));
        assert_eq!(split("gpu"), Err("unknown device `gpu`".to_owned()));
    }
}
