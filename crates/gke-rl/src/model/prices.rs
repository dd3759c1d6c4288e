//! The config's own prices: what replaces the embedded price table's in cost estimates
//! ([`crate::cost`]).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A price in US dollars, given in the config as a number; kept in micro-dollars so the model
/// stays comparable (`Eq`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Usd(u64);

impl Usd {
    /// Dollars, if a price: finite, not negative, below a billion.
    pub fn new(dollars: f64) -> Option<Self> {
        (dollars.is_finite() && (0.0..1e9).contains(&dollars)).then(|| Usd((dollars * 1e6).round() as u64))
    }

    /// The amount in dollars.
    pub fn dollars(self) -> f64 {
        self.0 as f64 / 1e6
    }
}

impl Serialize for Usd {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.dollars())
    }
}

impl<'de> Deserialize<'de> for Usd {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let dollars = f64::deserialize(d)?;
        Usd::new(dollars).ok_or_else(|| serde::de::Error::custom("the value is not a price: give US dollars, 0 or more"))
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for Usd {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Usd".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "number", "minimum": 0, "description": "US dollars." })
    }
}

/// Prices that replace the embedded table's: negotiated rates, a newer list, a region the
/// table lacks. Each is optional; the estimate names which prices came from here.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Prices {
    /// USD per hour for one GPU node, in the deployment's provisioning mode.
    pub gpu_node_per_hour: Option<Usd>,
    /// USD per hour for the Ray head's node (a dedicated head pool only).
    pub head_node_per_hour: Option<Usd>,
    /// USD per hour for one node of the system pool.
    pub system_node_per_hour: Option<Usd>,
    /// USD per GiB-month of Managed Lustre at the deployment's throughput tier.
    pub lustre_per_gib_month: Option<Usd>,
    /// Where these prices come from, printed with the estimate ("our 2026 contract").
    pub source: Option<String>,
}
