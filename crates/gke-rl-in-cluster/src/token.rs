//! How gke-rl's in-cluster programs (the supervisor, the run keeper, the idle guard) find and
//! send the cluster's token ([`gke_rl::auth`]): `authorized(request)`, generated into each.

/// The Python that finds and sends the token.
pub const PYTHON: &str = include_str!("../python/auth.py");

/// The line of an in-cluster program that [`PYTHON`] replaces.
pub const PYTHON_LINE: &str = "AUTH = None  # generated";

/// `source` with [`PYTHON`] in place of its [`PYTHON_LINE`].
pub fn with_python(source: &str) -> String {
    source.replacen(PYTHON_LINE, PYTHON.trim_end(), 1)
}
