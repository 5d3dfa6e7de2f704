//! "Did you mean": the known word a typo most likely meant, for unknown keys, metrics, splits,
//! schedules and hyperparameters in `training!`, and for `--set`/`--sweep` keys at run time.

/// The known word closest to `word`, if it is close enough to be a likely typo.
pub fn closest<'a>(word: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (edit_distance(word, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// `word` if it is one of `known`, else the one it is a single edit away from: a name the
/// compiler reports itself (an unknown type or attribute, with its fix), which a derive then
/// reads as meant rather than adding a second error of its own. Names of three letters or
/// fewer are other names, not slips (`f16` is not `u16`).
pub fn one_edit_from<'a>(word: &str, known: &[&'a str]) -> Option<&'a str> {
    let slip = |k: &&&str| word.len().max(k.len()) >= 4 && edit_distance(word, k) == 1;
    known
        .iter()
        .find(|k| **k == word)
        .or_else(|| known.iter().find(slip))
        .copied()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn suggests_near_misses_only() {
        let keys = ["epochs", "metrics", "optimizer"];
        assert_eq!(closest("epoch", &keys), Some("epochs"));
        assert_eq!(closest("optimiser", &keys), Some("optimizer"));
        assert_eq!(closest("colour", &keys), None);
    }

    #[test]
    fn one_edit_takes_the_word_or_its_single_slip() {
        use super::one_edit_from;
        let types = ["usize", "u16", "f32"];
        assert_eq!(one_edit_from("u16", &types), Some("u16"));
        assert_eq!(one_edit_from("usiz", &types), Some("usize"));
        // Two edits away: another type, not a slip.
        assert_eq!(one_edit_from("u128", &types), None);
        // Short names are other names: `half::f16` is not a slip of `u16`.
        assert_eq!(one_edit_from("f16", &types), None);
    }
}
