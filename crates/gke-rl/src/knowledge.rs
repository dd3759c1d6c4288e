//! Facts that change with upstream releases, as data. Each row cites its source in
//! `../shared/research/`; a new image or release is a table edit.

/// Container images whose Ray version is known, and that version.
///
/// NeMo-RL images run the Ray their `pyproject.toml` pins, whatever the RayCluster's
/// `rayVersion` says (`kuberay-ray-jobs.md` §5, `nemo-rl.md` §6).
pub const KNOWN_IMAGES: &[(&str, &str)] = &[
    ("nvcr.io/nvidia/nemo-rl:v0.3.1", "2.46.0"),
    ("nvcr.io/nvidia/nemo-rl:v0.4.0", "2.46.0"),
    ("nvcr.io/nvidia/nemo-rl:v0.5.0", "2.49.2"),
    ("nvcr.io/nvidia/nemo-rl:v0.6.0", "2.54.0"),
];

/// Repositories whose tags are the Ray version (`rayproject/ray:2.46.0-py312-gpu`).
const RAY_IMAGE_REPOSITORIES: &[&str] = &["rayproject/ray", "docker.io/rayproject/ray"];

/// The Ray version inside `image`, when gke-rl knows it.
pub fn ray_version_of_image(image: &str) -> Option<&str> {
    if let Some(&(_, version)) = KNOWN_IMAGES.iter().find(|(known, _)| *known == image) {
        return Some(version);
    }
    let (repository, tag) = image.rsplit_once(':')?;
    if !RAY_IMAGE_REPOSITORIES.contains(&repository) {
        return None;
    }
    let version = tag.split('-').next()?;
    let is_release = version.split('.').count() == 3 && version.split('.').all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    is_release.then_some(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nemo_rl_v0_4_0_ships_ray_2_46_0_not_the_codelab_2_54_0() {
        assert_eq!(ray_version_of_image("nvcr.io/nvidia/nemo-rl:v0.4.0"), Some("2.46.0"));
    }

    #[test]
    fn every_known_image_row_resolves() {
        for (image, version) in KNOWN_IMAGES {
            assert_eq!(ray_version_of_image(image), Some(*version));
        }
    }

    #[test]
    fn ray_images_carry_their_version_in_the_tag() {
        assert_eq!(ray_version_of_image("rayproject/ray:2.46.0-py312-gpu"), Some("2.46.0"));
        assert_eq!(ray_version_of_image("rayproject/ray:2.54.0"), Some("2.54.0"));
        assert_eq!(ray_version_of_image("rayproject/ray:nightly"), None);
        assert_eq!(ray_version_of_image("example.com/my/image:1.0"), None);
    }
}
