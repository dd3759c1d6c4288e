//! The Kueue queues of the gke-a4 blueprint, read from its configuration, and the reader of any
//! configuration's queues: what a queued run's `job.queue` must name. gke-rl's own
//! configuration is staged in [`crate::kueue`].

use crate::yaml::{Error, Node};

/// The gke-a4 blueprint's Kueue configuration, verbatim (cluster-toolkit
/// `examples/gke-a4/kueue-configuration.yaml.tftpl`; `tests/fixtures/upstream/cluster-toolkit`).
pub const GKE_A4_TEMPLATE: &str = include_str!("../../../../tests/fixtures/upstream/cluster-toolkit/kueue-configuration.yaml.tftpl");

/// The queues of the gke-a4 blueprint's Kueue configuration, read once.
pub fn blueprint_queues() -> &'static [Queue] {
    static QUEUES: std::sync::OnceLock<Vec<Queue>> = std::sync::OnceLock::new();
    QUEUES.get_or_init(|| queues(GKE_A4_TEMPLATE).unwrap_or_default())
}

/// A Kueue LocalQueue and the ClusterQueue it feeds, as a configuration creates them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Queue {
    /// The LocalQueue, which a workload names in `kueue.x-k8s.io/queue-name`.
    pub name: String,
    /// The LocalQueue's namespace: a workload in another namespace cannot use it.
    pub namespace: String,
    /// Its ClusterQueue.
    pub cluster_queue: String,
    /// The resources the ClusterQueue covers: Kueue admits no pod that asks for another.
    pub covered: Vec<String>,
    /// Whether every flavor of the ClusterQueue is topology-aware (has a `topologyName`): each
    /// pod set then needs one, and pods go only to nodes that exist.
    pub topology_aware: bool,
}

/// Each document of `text` (a `---`-separated stream) with its first line's index.
pub(crate) fn documents(text: &str) -> impl Iterator<Item = (u32, &str)> + '_ {
    gke_rl_yaml::documents(text).map(move |doc| {
        let start = doc.as_ptr() as usize - text.as_ptr() as usize;
        (u32::try_from(text[..start].matches('\n').count()).unwrap_or(u32::MAX), doc)
    })
}

/// Each document of `text` parsed, with its first line's index; a syntax error is placed in
/// the whole text.
pub(crate) fn parsed(text: &str) -> Result<Vec<(u32, &str, Node)>, Error> {
    documents(text)
        .map(|(offset, doc)| match Node::try_parse(doc) {
            Ok(root) => Ok((offset, doc, root)),
            Err(Error::Syntax { message, line, column }) => Err(Error::Syntax { message, line: line.saturating_add(offset), column }),
            Err(e) => Err(e),
        })
        .collect()
}

pub(crate) fn kind(root: &Node) -> Option<&str> {
    root.get(&["kind"]).and_then(Node::text)
}

pub(crate) fn name(root: &Node) -> Option<&str> {
    root.get(&["metadata", "name"]).and_then(Node::text)
}

/// The queues the Kueue configuration `text` creates: each LocalQueue whose ClusterQueue it
/// holds.
pub fn queues(text: &str) -> Result<Vec<Queue>, Error> {
    let documents = parsed(text)?;
    let of_kind = |wanted: &'static str| documents.iter().map(|(_, _, root)| root).filter(move |root| kind(root) == Some(wanted));
    let topology_aware = |flavor: &str| {
        of_kind("ResourceFlavor").any(|f| name(f) == Some(flavor) && f.get(&["spec", "topologyName"]).and_then(Node::text).is_some())
    };
    Ok(of_kind("LocalQueue")
        .filter_map(|local| {
            let cluster_queue = local.get(&["spec", "clusterQueue"])?.text()?;
            let groups = of_kind("ClusterQueue").find(|c| name(c) == Some(cluster_queue))?.get(&["spec", "resourceGroups"])?.items();
            let texts = |group: &Node, key: &str| -> Vec<String> {
                group.get(&[key]).map(Node::items).unwrap_or_default().iter().filter_map(|n| Some(n.text()?.to_owned())).collect()
            };
            let flavors: Vec<String> = groups
                .iter()
                .flat_map(|g| g.get(&["flavors"]).map(Node::items).unwrap_or_default())
                .filter_map(|f| Some(f.get(&["name"])?.text()?.to_owned()))
                .collect();
            Some(Queue {
                name: name(local)?.to_owned(),
                namespace: local.get(&["metadata", "namespace"]).and_then(Node::text).unwrap_or("default").to_owned(),
                cluster_queue: cluster_queue.to_owned(),
                covered: groups.iter().flat_map(|g| texts(g, "coveredResources")).collect(),
                topology_aware: !flavors.is_empty() && flavors.iter().all(|f| topology_aware(f)),
            })
        })
        .collect())
}
