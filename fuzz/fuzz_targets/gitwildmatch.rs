//! Ray's exclusion patterns: any pattern text against any path parses or errors, and matches
//! without panicking or blowing up; `excludes` agrees with `is_match` on the path itself.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &str| {
    let (patterns, path) = input.rsplit_once('\0').unwrap_or((input, "a/b/c"));
    if let Ok(set) = gke_rl_gitwildmatch::PatternSet::parse(patterns) {
        let matched = set.is_match(path);
        assert!(!matched || set.excludes(path) || path.ends_with('/'), "a matched path is excluded");
    }
});
