//! End to end: `gke-rl blueprint` on the real upstream blueprint, as a Cluster Toolkit
//! checkout or a file.

use crate::common::{gke_rl, stderr, upstream};

#[test]
fn a_toolkit_checkout_is_patched_into_out() {
    let blueprint = upstream("cluster-toolkit/gke-a4.yaml");
    let cwd = tempfile::tempdir().unwrap();
    let example = cwd.path().join("cluster-toolkit/examples/gke-a4");
    std::fs::create_dir_all(&example).unwrap();
    std::fs::copy(&blueprint, example.join("gke-a4.yaml")).unwrap();
    for template in gke_rl::knowledge::STAGED_TEMPLATES {
        std::fs::copy(upstream(&format!("cluster-toolkit/{template}")), example.join(template)).unwrap();
    }
    let out = gke_rl(cwd.path(), &["blueprint", "--toolkit", "cluster-toolkit"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for name in ["gke-a4.yaml", "gke-a4.yaml.patch", "gke-a4-deployment.yaml"] {
        assert!(cwd.path().join("out").join(name).is_file(), "{name}");
    }
    every_staged_path_resolves(&cwd.path().join("out/gke-a4.yaml"));
    assert!(stderr(&out).contains("--vars project_id=$PROJECT_ID,authorized_cidr=$AUTHORIZED_CIDR"), "{}", stderr(&out));
    let patched = std::fs::read_to_string(cwd.path().join("out/gke-a4.yaml")).unwrap();
    assert!(patched.contains("enable_ray_operator: true") && patched.contains("pvc_name: lustre-pvc"));

    let again = gke_rl(cwd.path(), &["blueprint", "--toolkit", "cluster-toolkit"]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(stderr(&again).matches("unchanged").count(), 5, "{}", stderr(&again));

    // The toolkit updates a template: the copy, as gke-rl made it, is replaced. A copy someone
    // edited is kept.
    let (toolkit_copy, out_copy) = (example.join("nccl-installer.yaml.tftpl"), cwd.path().join("out/nccl-installer.yaml.tftpl"));
    std::fs::write(&toolkit_copy, std::fs::read_to_string(&toolkit_copy).unwrap() + "# a newer release\n").unwrap();
    let updated = gke_rl(cwd.path(), &["blueprint", "--toolkit", "cluster-toolkit"]);
    assert!(updated.status.success(), "{}", stderr(&updated));
    assert_eq!(std::fs::read(&out_copy).unwrap(), std::fs::read(&toolkit_copy).unwrap());
    std::fs::write(&out_copy, "# mine\n").unwrap();
    std::fs::write(&toolkit_copy, std::fs::read_to_string(&toolkit_copy).unwrap() + "# newer still\n").unwrap();
    let edited = gke_rl(cwd.path(), &["blueprint", "--toolkit", "cluster-toolkit"]);
    assert_eq!(edited.status.code(), Some(2), "{}", stderr(&edited));
    assert!(stderr(&edited).contains("refusing to overwrite") && stderr(&edited).contains("out/nccl-installer.yaml.tftpl"));
    assert_eq!(std::fs::read_to_string(&out_copy).unwrap(), "# mine\n");
}

/// gcluster resolves `$(ghpc_stage("PATH"))` relative to the blueprint's folder: each must be
/// there, as upstream wrote it.
fn every_staged_path_resolves(blueprint: &std::path::Path) {
    let text = std::fs::read_to_string(blueprint).unwrap();
    let staged: Vec<&str> = text.split("$(ghpc_stage(\"").skip(1).filter_map(|rest| rest.split_once('"').map(|(path, _)| path)).collect();
    assert_eq!(staged.len(), 2, "{text}");
    for path in staged {
        let copy = blueprint.parent().unwrap().join(path);
        let name = copy.file_name().unwrap().to_str().unwrap();
        assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(upstream(&format!("cluster-toolkit/{name}"))).unwrap(), "{path}");
    }
}

#[test]
fn a_blueprint_file_stages_the_templates_beside_it() {
    let cwd = tempfile::tempdir().unwrap();
    std::fs::copy(upstream("cluster-toolkit/gke-a4.yaml"), cwd.path().join("gke-a4.yaml")).unwrap();
    let out = gke_rl(cwd.path(), &["blueprint", "--blueprint", "gke-a4.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("gke-a4.yaml stages kueue-configuration.yaml.tftpl, which gcluster reads beside it")
            && stderr(&out).contains("copy it from a Cluster Toolkit checkout's examples/gke-a4"),
        "{}",
        stderr(&out)
    );
    assert!(!cwd.path().join("out").exists(), "nothing is written");

    let from_fixtures = gke_rl(cwd.path(), &["blueprint", "--blueprint", upstream("cluster-toolkit/gke-a4.yaml").to_str().unwrap()]);
    assert!(from_fixtures.status.success(), "{}", stderr(&from_fixtures));
    every_staged_path_resolves(&cwd.path().join("out/gke-a4.yaml"));
}

#[test]
fn a_hand_written_gke_a4_yaml_in_out_is_kept_without_force() {
    let blueprint = upstream("cluster-toolkit/gke-a4.yaml");
    let cwd = tempfile::tempdir().unwrap();
    std::fs::create_dir(cwd.path().join("out")).unwrap();
    std::fs::write(cwd.path().join("out/gke-a4.yaml"), "# mine\n").unwrap();
    let out = gke_rl(cwd.path(), &["blueprint", "--blueprint", blueprint.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("refusing to overwrite"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(cwd.path().join("out/gke-a4.yaml")).unwrap(), "# mine\n");
}

#[test]
fn a_blueprint_of_the_wrong_shape_is_refused_with_its_line() {
    let blueprint = upstream("cluster-toolkit/gke-a4.yaml");
    let cwd = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(blueprint).unwrap().replace("  - id: a4-pool", "\t- id: a4-pool");
    std::fs::write(cwd.path().join("gke-a4.yaml"), text).unwrap();
    let out = gke_rl(cwd.path(), &["blueprint", "--blueprint", "gke-a4.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("error[blueprint-shape]: the blueprint is indented with tabs") && stderr(&out).contains("gke-a4.yaml:261:1"),
        "{}",
        stderr(&out)
    );
    assert!(!cwd.path().join("out").exists());
}

/// Issue 51, class 7: a Kueue template with lone carriage returns (a line end to YAML, not to
/// gke-rl's positions) is refused at the first one, for a queued run's staging; never a panic.
#[test]
fn a_kueue_template_with_lone_carriage_returns_is_refused_at_the_first() {
    let cwd = tempfile::tempdir().unwrap();
    let example = cwd.path().join("cluster-toolkit/examples/gke-a4");
    std::fs::create_dir_all(&example).unwrap();
    std::fs::copy(upstream("cluster-toolkit/gke-a4.yaml"), example.join("gke-a4.yaml")).unwrap();
    for template in gke_rl::knowledge::STAGED_TEMPLATES {
        let text = std::fs::read_to_string(upstream(&format!("cluster-toolkit/{template}"))).unwrap();
        let text = if template.starts_with("kueue") { text.replacen("\n", "\r", 3) } else { text };
        std::fs::write(example.join(template), text).unwrap();
    }
    std::fs::write(cwd.path().join("gke-rl.yaml"), "job:\n  queue: a4\n").unwrap();
    let out = gke_rl(cwd.path(), &["blueprint", "--toolkit", "cluster-toolkit"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    assert!(stderr(&out).contains("kueue-configuration.yaml.tftpl") && stderr(&out).contains("a lone carriage return"), "{}", stderr(&out));
}
