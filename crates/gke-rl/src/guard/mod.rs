//! The idle guard: a small program a CronJob runs in the cluster, which suspends the
//! RayCluster after a while without a running job (`idle_guard.py`, standard-library Python,
//! so that any Python 3 image runs it). Its decisions are tested against a real Ray head.

/// The guard's source.
pub const IDLE_GUARD: &str = include_str!("idle_guard.py");
