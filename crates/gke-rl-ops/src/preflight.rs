//! The checks every deploy makes before it changes anything, whichever cluster it deploys to.

use gke_rl::lifecycle::{self, Preflight};

use crate::events::{LifecycleEvent, Progress};
use crate::site::Resolved;
use crate::{Env, Problem};

/// What every deploy checks, into `problems`: an active gcloud account, the APIs it needs, the
/// credential plugin, the secrets. Whether gcloud has an account (without one it can answer
/// nothing else about the project).
pub(crate) fn basics(env: &Env, resolved: &Resolved<'_>, checks: &Preflight, progress: &dyn Progress, problems: &mut Vec<Problem>) -> bool {
    let site = &resolved.site;
    let account = resolved.read(env, &checks.account).ok().map(|a| a.trim().to_owned()).filter(|a| !a.is_empty());
    let signed_in = account.is_some();
    match &account {
        Some(account) => progress.lifecycle(LifecycleEvent::Account(account)),
        None => problems.push(Problem::NoAccount),
    }
    if signed_in {
        match resolved.read(env, &checks.apis) {
            Ok(enabled) => {
                let enabled: Vec<&str> = enabled.lines().map(str::trim).collect();
                let missing: Vec<&str> =
                    lifecycle::required_apis(resolved.deployment).into_iter().filter(|api| !enabled.contains(api)).collect();
                if !missing.is_empty() {
                    problems.push(Problem::ApisDisabled {
                        project: site.project_id.to_string(),
                        missing: missing.iter().map(|m| (*m).to_owned()).collect(),
                        enable: lifecycle::enable_apis(&missing, site),
                    });
                }
            }
            Err(reason) => problems.push(Problem::ApisUnknown { project: site.project_id.to_string(), reason: reason.to_string() }),
        }
    }
    if resolved.read(env, &checks.auth_plugin).is_err() {
        problems.push(Problem::NoAuthPlugin);
    }
    for (_, variable, required) in lifecycle::secret_entries(resolved.deployment) {
        if required && env.var(variable).is_none() {
            problems.push(Problem::SecretUnset { variable: variable.to_owned() });
        }
    }
    signed_in
}
