//! "Did you mean …?": the closest known word to a misspelt one.

/// The candidate closest to `word` by edit distance, if it is close enough to be a typo.
pub fn closest<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    candidates
        .into_iter()
        .map(|c| (edit_distance(word, c), c))
        .filter(|(d, _)| *d <= word.chars().count().max(3) / 3 + 1)
        .min()
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn typos_find_their_word_and_strangers_do_not() {
        assert_eq!(closest("capacity_gb", ["instance_id", "capacity_gib", "pvc_name"]), Some("capacity_gib"));
        assert_eq!(closest("grpo.max_num_step", ["grpo.max_num_steps", "grpo.seed"]), Some("grpo.max_num_steps"));
        assert_eq!(closest("banana", ["instance_id", "capacity_gib"]), None);
    }
}
