//! This machine's public address, as an address-echo service sees it: the default authorized
//! CIDR, and the check that a resumed deploy can still reach its control plane.

use std::net::IpAddr;
use std::time::Duration;

use gke_rl::model::Cidr;

use crate::LifecycleError;

/// Where the public address comes from by default (plain text, one address).
pub const ADDRESS_ECHO: &str = "https://api.ipify.org";

/// Asks `url` for this machine's public address.
pub async fn public_address(url: &str) -> Result<IpAddr, LifecycleError> {
    gke_rl_ray::ensure_crypto_provider();
    let failed = |reason: String| LifecycleError::PublicAddress { url: url.to_owned(), reason };
    // An address is at most 45 characters; a longer answer is not one, however long it goes on.
    const MAX_ANSWER: usize = 256;
    let answer = async {
        let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build()?;
        let mut response = client.get(url).timeout(Duration::from_secs(10)).send().await?.error_for_status()?;
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await?
            && body.len() <= MAX_ANSWER
        {
            body.extend_from_slice(&chunk);
        }
        Ok::<_, reqwest::Error>(body)
    };
    let body = answer.await.map_err(|e| failed(crate::root_cause(&e)))?;
    let text = String::from_utf8_lossy(&body[..body.len().min(MAX_ANSWER)]);
    text.trim()
        .parse()
        .map_err(|_| failed(format!("it answered {:?}, not an IP address", text.trim().chars().take(60).collect::<String>())))
}

/// The CIDR of just `address`; GKE's authorized networks take IPv4 blocks only.
pub fn host_cidr(address: IpAddr, url: &str) -> Result<Cidr, LifecycleError> {
    match address {
        IpAddr::V4(_) => Ok(Cidr::new(format!("{address}/32"))?),
        IpAddr::V6(_) => Err(LifecycleError::PublicAddress {
            url: url.to_owned(),
            reason: format!("it answered {address}, an IPv6 address, and authorized networks take IPv4 blocks only"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_cidr_is_ipv4_only_as_authorized_networks_are() {
        let url = "https://echo.example";
        assert_eq!(host_cidr("203.0.113.7".parse().unwrap(), url).unwrap().as_str(), "203.0.113.7/32");
        let refused = host_cidr("2001:db8::1".parse().unwrap(), url).unwrap_err().to_string();
        assert!(refused.contains("2001:db8::1, an IPv6 address, and authorized networks take IPv4 blocks only"), "{refused}");
    }
}
