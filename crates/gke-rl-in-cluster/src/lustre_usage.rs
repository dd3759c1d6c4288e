//! What a run's Managed Lustre instance did while the run ran: its read and write throughput
//! and the space used, beside the run's checkpoint saves on one time axis.
//!
//! The figures are Cloud Monitoring's Managed Lustre metrics (Google's list of Google Cloud
//! metrics, docs.cloud.google.com/monitoring/api/metrics_gcp_i_o, section `lustre`; BETA,
//! sampled every 60 s and visible up to 120 s later), on the resource
//! `lustre.googleapis.com/Instance` (labels `instance_id`, `location`):
//! - `instance/read_bytes_total` and `instance/write_bytes_total`: DELTA counts of the bytes
//!   each Object Storage Target read and wrote, aligned with `ALIGN_RATE` into bytes per second
//!   and summed over the targets;
//! - `instance/capacity_bytes` and `instance/free_bytes`: GAUGEs of each target's bytes, summed
//!   over the targets of each `component` (the kind of target). Nothing gives the bytes used:
//!   they are capacity less free space.
//!
//! Reading them is `gke_rl_ops::monitoring`'s; this is the query's facts and the figures.

use serde::Serialize;

use gke_rl::quote::bytes;

/// Cloud Monitoring's endpoint, which the ops ask for these metrics.
pub const ENDPOINT: &str = "https://monitoring.googleapis.com";

/// The monitored resource of a Managed Lustre instance.
pub const RESOURCE_TYPE: &str = "lustre.googleapis.com/Instance";

/// What a metric measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// Bytes read per second.
    Read,
    /// Bytes written per second.
    Write,
    /// Bytes provisioned, by component.
    Capacity,
    /// Bytes free, by component.
    Free,
}

/// One metric and how it is asked for.
#[derive(Clone, Copy, Debug)]
pub struct Metric {
    /// What it measures.
    pub measure: Measure,
    /// Its type.
    pub metric_type: &'static str,
    /// `aggregation.perSeriesAligner`: a rate for the DELTA counts, the mean for the GAUGEs.
    pub aligner: &'static str,
    /// `aggregation.groupByFields`: the series are summed (`REDUCE_SUM`) within these.
    pub group_by: Option<&'static str>,
}

/// The label a space series is grouped by.
const COMPONENT: &str = "metric.label.component";

/// The metrics a report reads.
pub const METRICS: [Metric; 4] = [
    Metric {
        measure: Measure::Read,
        metric_type: "lustre.googleapis.com/instance/read_bytes_total",
        aligner: "ALIGN_RATE",
        group_by: None,
    },
    Metric {
        measure: Measure::Write,
        metric_type: "lustre.googleapis.com/instance/write_bytes_total",
        aligner: "ALIGN_RATE",
        group_by: None,
    },
    Metric {
        measure: Measure::Capacity,
        metric_type: "lustre.googleapis.com/instance/capacity_bytes",
        aligner: "ALIGN_MEAN",
        group_by: Some(COMPONENT),
    },
    Metric {
        measure: Measure::Free,
        metric_type: "lustre.googleapis.com/instance/free_bytes",
        aligner: "ALIGN_MEAN",
        group_by: Some(COMPONENT),
    },
];

/// The most points a series is asked for: the alignment period grows with the run.
const MAX_POINTS: u64 = 720;

/// How late a point may be: sampled every 60 s, visible up to 120 s after.
pub const LATE_S: u64 = 180;

/// The alignment period for a window of `seconds`: a whole number of minutes (Monitoring's
/// shortest is 60 s, the metrics' sampling), long enough for at most [`MAX_POINTS`] points.
pub fn alignment_period_s(seconds: f64) -> u64 {
    let minutes = (seconds.max(0.0) / 60.0 / MAX_POINTS as f64).ceil() as u64;
    minutes.clamp(1, u64::MAX / 60) * 60
}

/// `projects.timeSeries.list`'s filter for `metric` of the instance `instance_id` in `location`.
pub fn filter(metric: &Metric, instance_id: &str, location: &str) -> String {
    format!(
        "metric.type=\"{}\" AND resource.type=\"{RESOURCE_TYPE}\" AND resource.labels.instance_id=\"{instance_id}\" AND resource.labels.location=\"{location}\"",
        metric.metric_type
    )
}

/// A value at a time: the end of its aligned period, in seconds since the epoch.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Point {
    /// The end of the period.
    pub at: f64,
    /// The value.
    pub value: f64,
}

/// One series an answer held: the value of its group-by label, if any, and its points.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// The value of the label it was grouped by (a component), if it was.
    pub group: Option<String>,
    /// Its points, oldest first.
    pub points: Vec<Point>,
}

/// The space of one kind of Lustre target.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Space {
    /// The kind of target, as the `component` label says (`ost` holds the data).
    pub component: String,
    /// Bytes used (capacity less free) over time.
    pub used_bytes: Vec<Point>,
    /// The newest capacity.
    pub capacity_bytes: Option<f64>,
}

/// What the instance did during the run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Usage {
    /// The instance.
    pub instance_id: String,
    /// Its location.
    pub location: String,
    /// The window asked for, in seconds since the epoch.
    pub from: f64,
    /// Its end.
    pub to: f64,
    /// The alignment period.
    pub period_s: u64,
    /// Bytes read per second, over every target.
    pub read_bytes_per_s: Vec<Point>,
    /// Bytes written per second, over every target.
    pub write_bytes_per_s: Vec<Point>,
    /// The space used, by component.
    pub space: Vec<Space>,
}

impl Usage {
    /// The usage from each metric's answer. Points come oldest first whatever order they came
    /// in; a point with no match (a capacity without its free space) is left out.
    pub fn new(instance_id: &str, location: &str, window: (f64, f64), period_s: u64, answers: Vec<(Measure, Vec<Series>)>) -> Usage {
        let mut usage = Usage {
            instance_id: instance_id.to_owned(),
            location: location.to_owned(),
            from: window.0,
            to: window.1,
            period_s,
            read_bytes_per_s: Vec::new(),
            write_bytes_per_s: Vec::new(),
            space: Vec::new(),
        };
        let (mut capacity, mut free) = (Vec::new(), Vec::new());
        for (measure, mut series) in answers {
            for s in &mut series {
                s.points.sort_by(|a, b| a.at.total_cmp(&b.at));
            }
            match measure {
                Measure::Read => usage.read_bytes_per_s = summed(series),
                Measure::Write => usage.write_bytes_per_s = summed(series),
                Measure::Capacity => capacity = series,
                Measure::Free => free = series,
            }
        }
        for total in capacity {
            let component = total.group.clone().unwrap_or_else(|| "all".to_owned());
            let Some(free) = free.iter().find(|f| f.group == total.group) else { continue };
            let used_bytes = total
                .points
                .iter()
                .filter_map(|p| {
                    let f = free.points.iter().find(|f| f.at == p.at)?;
                    Some(Point { at: p.at, value: (p.value - f.value).max(0.0) })
                })
                .collect();
            usage.space.push(Space { component, used_bytes, capacity_bytes: total.points.last().map(|p| p.value) });
        }
        usage.space.sort_by(|a, b| a.component.cmp(&b.component));
        usage
    }

    /// The write rate of each save: the bytes written in the periods it overlaps over its
    /// seconds. A period's mean would dilute a 30 s save in a minute of quiet; the bytes around
    /// it are nearly all its own.
    pub fn write_during_saves(&self, saves: &[SaveWindow]) -> Vec<(u64, f64)> {
        let period = self.period_s as f64;
        saves
            .iter()
            .filter(|s| s.seconds > 0.0)
            .filter_map(|s| {
                let overlapping = self.write_bytes_per_s.iter().filter(|p| p.at > s.at && p.at - period < s.at + s.seconds);
                let (count, bytes) = overlapping.fold((0, 0.0), |(n, bytes), p| (n + 1, bytes + p.value * period));
                (count > 0).then(|| (s.step, bytes / s.seconds))
            })
            .collect()
    }

    /// One line for people: each direction's peak and mean, the writes during saves, and the
    /// space used at the end.
    pub fn summary(&self, saves: &[SaveWindow]) -> String {
        let mut out = format!("lustre {}:", self.instance_id);
        for (what, points) in [("read", &self.read_bytes_per_s), ("write", &self.write_bytes_per_s)] {
            match peak_and_mean(points) {
                Some((peak, mean)) => out.push_str(&format!(" {what} peak {}, mean {};", rate(peak), rate(mean))),
                None => out.push_str(&format!(" {what} no data;")),
            }
        }
        let saves = self.write_during_saves(saves);
        if !saves.is_empty() {
            let mean = saves.iter().map(|s| s.1).sum::<f64>() / saves.len() as f64;
            out.push_str(&format!(" {} while saving checkpoints;", rate(mean)));
        }
        for space in &self.space {
            if let (Some(used), Some(capacity)) = (space.used_bytes.last(), space.capacity_bytes) {
                out.push_str(&format!(" {} of {} used ({});", bytes(used.value), bytes(capacity), space.component));
            }
        }
        out.pop();
        out
    }
}

/// When a step's checkpoint was saved: from `at` (Unix seconds) for `seconds`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SaveWindow {
    /// The step.
    pub step: u64,
    /// When the save began.
    pub at: f64,
    /// How long it took.
    pub seconds: f64,
}

/// Series summed point by point, by time.
fn summed(series: Vec<Series>) -> Vec<Point> {
    let mut points: Vec<Point> = series.into_iter().flat_map(|s| s.points).collect();
    points.sort_by(|a, b| a.at.total_cmp(&b.at));
    points.dedup_by(|later, earlier| {
        let same = later.at == earlier.at;
        if same {
            earlier.value += later.value;
        }
        same
    });
    points
}

fn peak_and_mean(points: &[Point]) -> Option<(f64, f64)> {
    let peak = points.iter().map(|p| p.value).reduce(f64::max)?;
    Some((peak, points.iter().map(|p| p.value).sum::<f64>() / points.len() as f64))
}

/// `812 MB/s`, `9.8 GB/s`: throughput in decimal units, as Managed Lustre's tiers are given.
fn rate(bytes_per_s: f64) -> String {
    match bytes_per_s {
        r if r >= 1e9 => format!("{:.1} GB/s", r / 1e9),
        r if r >= 1e6 => format!("{:.0} MB/s", r / 1e6),
        r => format!("{:.0} kB/s", r / 1e3),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_period_is_whole_minutes_for_at_most_max_points() {
        assert_eq!([0.0, 60.0, 720.0 * 60.0, 720.0 * 60.0 + 1.0, 7.0 * 86400.0].map(alignment_period_s), [60, 60, 60, 120, 840]);
        let filter = filter(&METRICS[0], "lustre-a", "us-central1-b");
        assert_eq!(
            filter,
            "metric.type=\"lustre.googleapis.com/instance/read_bytes_total\" AND resource.type=\"lustre.googleapis.com/Instance\" \
             AND resource.labels.instance_id=\"lustre-a\" AND resource.labels.location=\"us-central1-b\""
        );
    }

    #[test]
    fn space_is_capacity_less_free_of_the_same_component_and_time() {
        let point = |at: f64, value: f64| Point { at, value };
        let series = |group: &str, points: Vec<Point>| Series { group: Some(group.to_owned()), points };
        let usage = Usage::new(
            "i",
            "l",
            (0.0, 180.0),
            60,
            vec![
                // Newest first, as the API gives them, in two series to be summed.
                (
                    Measure::Read,
                    vec![
                        Series { group: None, points: vec![point(120.0, 2.0), point(60.0, 1.0)] },
                        Series { group: None, points: vec![point(60.0, 10.0)] },
                    ],
                ),
                (Measure::Write, vec![]),
                (
                    Measure::Capacity,
                    vec![series("ost", vec![point(60.0, 100.0), point(120.0, 100.0)]), series("mdt", vec![point(60.0, 5.0)])],
                ),
                // A free space at a time the capacity lacks, and none for the MDT.
                (Measure::Free, vec![series("ost", vec![point(60.0, 70.0), point(180.0, 1.0)])]),
            ],
        );
        assert_eq!(usage.read_bytes_per_s, [point(60.0, 11.0), point(120.0, 2.0)]);
        assert_eq!(usage.space, [Space { component: "ost".into(), used_bytes: vec![point(60.0, 30.0)], capacity_bytes: Some(100.0) }]);
        assert_eq!(usage.summary(&[]), "lustre i: read peak 0 kB/s, mean 0 kB/s; write no data; 30 B of 100 B used (ost)");
    }
}
