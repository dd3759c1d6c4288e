//! The Rays gke-rl is tested with.

/// The Ray releases gke-rl's tests run against real heads, oldest first; the one table the
/// tests, `cargo xtask ci` (which installs each under `target/ray/<version>/`) and the
/// "untested version" warning read. The Ray of NeMo-RL v0.4.0's image, of v0.6.0's, of
/// v0.7.0's (its `uv.lock`), and the newest Ray on PyPI when last bumped, to catch API drift
/// early. Pinned, so that CI is reproducible without asking PyPI: to bump it, put what
/// `pip index versions ray` names first in the last row, record that Ray's messages
/// (`tests/fixtures/ray-messages/SOURCE.md`) and run `cargo xtask ci`. A Ray between the
/// oldest and the newest counts as tested; others get a warning.
pub const TESTED_RAY: [&str; 4] = ["2.46.0", "2.54.0", "2.55.1", "2.60.0"];
/// The oldest Ray of [`TESTED_RAY`].
pub const OLDEST_TESTED_RAY: &str = TESTED_RAY[0];
/// The newest Ray of [`TESTED_RAY`].
pub const NEWEST_TESTED_RAY: &str = TESTED_RAY[TESTED_RAY.len() - 1];
