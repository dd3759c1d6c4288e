//! The fast path for block YAML builds the tree granit-parser's events give, or declines.
#![no_main]

use gke_rl_yaml::Node;

libfuzzer_sys::fuzz_target!(|text: &str| {
    if let Some(fast) = Node::parse_block(text) {
        match Node::try_parse_events(text) {
            Ok(full) => assert_eq!(fast, full, "the trees differ"),
            Err(error) => panic!("the full parser refuses ({error}), the fast path accepts {fast:?}"),
        }
    }
});
