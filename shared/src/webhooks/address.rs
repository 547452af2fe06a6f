//! Which URLs a webhook may call, and at which addresses (contract section 9).
//!
//! A caller chooses the URL, so a URL is a way into our network unless every
//! address it reaches is public: the checks run at registration and again at
//! every attempt (a name may change what it resolves to), and the attempt
//! connects only to the addresses this check returned, never to a second
//! look-up ([`CheckedUrl::addresses`]).
//!
//! The ranges are std's `IpAddr` methods plus the few IANA special-purpose
//! ranges std does not name (its `is_global` is unstable); no crate keeps
//! these tables better than the registries themselves, and each range here
//! has its own test. IPv6 is held to the global unicast block `2000::/3`
//! (everything else is reserved by IANA), and the forms that carry an IPv4
//! address (mapped, compatible, NAT64) are judged by that address.

use futures::future::BoxFuture;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

mod ranges;
mod scripted;
#[cfg(test)]
mod tests;

pub use ranges::refused_range;
pub use scripted::ScriptedResolver;

/// The longest URL an endpoint may have, in characters.
pub const MAX_URL_LENGTH: usize = 2048;

/// The longest a look-up may take: a name that answers no sooner fails the
/// registration (400) or the attempt (`dns_timeout`), whatever the
/// resolver's own time-outs.
pub const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// The lowest port an endpoint may use besides 443: below it are the
/// well-known services (SMTP, SSH...) a webhook has no business calling.
pub const LOWEST_PORT: u16 = 1024;

/// A name's addresses. The system's resolver in Lambda and `make run`; the
/// tests give their own, so a name can resolve differently at each look-up.
pub trait Resolve: Send + Sync {
    fn resolve(&self, host: &str, port: u16) -> BoxFuture<'_, Result<Vec<IpAddr>, AddressError>>;
}

/// The operating system's resolver (`tokio::net::lookup_host`).
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve(&self, host: &str, port: u16) -> BoxFuture<'_, Result<Vec<IpAddr>, AddressError>> {
        let target = format!("{host}:{port}");
        Box::pin(async move {
            let found = tokio::net::lookup_host(target)
                .await
                .map_err(|e| AddressError(e.to_string()))?;
            Ok(found.map(|socket| socket.ip()).collect())
        })
    }
}

/// A look-up that failed (no such name, no answer).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct AddressError(pub String);

/// What the URL rules admit beyond public `https://` hosts.
#[derive(Debug, Clone, Copy, Default)]
pub struct UrlPolicy {
    /// `WEBHOOKS_ALLOW_LOOPBACK=1` (`make run` only): `http://` and loopback
    /// addresses, so a receiver on the developer's machine can be tried.
    /// Every other refused range stays refused.
    pub allow_loopback: bool,
}

/// `WEBHOOKS_ALLOW_LOOPBACK=1` where Lambda itself runs the function: a
/// local setting in production, refused at start-up.
#[derive(Debug, thiserror::Error)]
#[error("WEBHOOKS_ALLOW_LOOPBACK is for a local server only; Lambda runs this function")]
pub struct LoopbackInLambda;

impl UrlPolicy {
    /// From `WEBHOOKS_ALLOW_LOOPBACK`: `1` admits loopback, anything else
    /// not, and nothing where Lambda itself runs the function (whose
    /// start-up refuses the setting: [`UrlPolicy::refuse_in_lambda`]).
    pub fn from_env() -> UrlPolicy {
        UrlPolicy {
            allow_loopback: loopback_asked() && !crate::webhooks::secrets::in_lambda(),
        }
    }

    /// Start-up's check: `WEBHOOKS_ALLOW_LOOPBACK=1` inside Lambda is an
    /// error, not a setting quietly ignored.
    pub fn refuse_in_lambda() -> Result<(), LoopbackInLambda> {
        refused_in_lambda(loopback_asked(), crate::webhooks::secrets::in_lambda())
    }
}

fn loopback_asked() -> bool {
    std::env::var("WEBHOOKS_ALLOW_LOOPBACK").is_ok_and(|v| v == "1")
}

/// Loopback asked for where Lambda runs the function: refused.
pub fn refused_in_lambda(asked: bool, in_lambda: bool) -> Result<(), LoopbackInLambda> {
    if asked && in_lambda {
        Err(LoopbackInLambda)
    } else {
        Ok(())
    }
}

/// A URL that passed every rule, with the addresses an attempt may dial.
#[derive(Debug, Clone)]
pub struct CheckedUrl {
    pub url: http::Uri,
    /// The host as written (no brackets): TLS's server name.
    pub host: String,
    pub port: u16,
    /// Every address the host resolved to, all of them allowed.
    pub addresses: Vec<IpAddr>,
}

impl CheckedUrl {
    pub fn is_https(&self) -> bool {
        self.url.scheme_str() == Some("https")
    }
}

/// Why a URL is refused; [`UrlRefusal::message`] says it to the caller.
#[derive(Debug, Clone, PartialEq)]
pub enum UrlRefusal {
    NotHttps,
    TooLong,
    Credentials,
    Fragment,
    NotAbsolute,
    Port,
    Unresolvable,
    LookupTimedOut,
    Refused {
        address: IpAddr,
        range: &'static str,
    },
}

impl UrlRefusal {
    pub fn message(&self) -> String {
        match self {
            UrlRefusal::NotHttps => "must be an https:// URL".to_string(),
            UrlRefusal::TooLong => format!("must be at most {MAX_URL_LENGTH} characters"),
            UrlRefusal::Credentials => "must not carry a user name or password".to_string(),
            UrlRefusal::Fragment => "must not have a fragment (#...)".to_string(),
            UrlRefusal::NotAbsolute => "must be an absolute URL with a host".to_string(),
            UrlRefusal::Port => {
                format!("must use port 443 or a port from {LOWEST_PORT} to 65535")
            }
            UrlRefusal::Unresolvable => "its host does not resolve".to_string(),
            UrlRefusal::LookupTimedOut => format!(
                "its host's look-up took over {} seconds",
                LOOKUP_TIMEOUT.as_secs()
            ),
            // The rule only: the address would make this a DNS look-up
            // service for anyone with a key.
            UrlRefusal::Refused { range, .. } => {
                format!("its host is or resolves to a {range} address, which is refused")
            }
        }
    }
}

/// Syntax (absolute https, at most 2,048 characters, no userinfo, no
/// fragment, port 443 or 1024-65535), then every address the host resolves
/// to, within [`LOOKUP_TIMEOUT`], must be allowed.
pub async fn check_url(
    url: &str,
    policy: &UrlPolicy,
    resolver: &dyn Resolve,
) -> Result<CheckedUrl, UrlRefusal> {
    let (uri, host, port) = parse(url, policy)?;
    let addresses = match literal_address(&host) {
        Some(address) => vec![address],
        None => tokio::time::timeout(LOOKUP_TIMEOUT, resolver.resolve(&host, port))
            .await
            .map_err(|_| UrlRefusal::LookupTimedOut)?
            .map_err(|_| UrlRefusal::Unresolvable)?,
    };
    if addresses.is_empty() {
        return Err(UrlRefusal::Unresolvable);
    }
    for &address in &addresses {
        check_address(address, policy)?;
    }
    Ok(CheckedUrl {
        url: uri,
        host,
        port,
        addresses,
    })
}

/// One address against the refused ranges (loopback admitted by the policy).
pub fn check_address(address: IpAddr, policy: &UrlPolicy) -> Result<(), UrlRefusal> {
    match refused_range(address) {
        Some("loopback") if policy.allow_loopback => Ok(()),
        Some(range) => Err(UrlRefusal::Refused { address, range }),
        None => Ok(()),
    }
}

fn parse(url: &str, policy: &UrlPolicy) -> Result<(http::Uri, String, u16), UrlRefusal> {
    if url.chars().count() > MAX_URL_LENGTH {
        return Err(UrlRefusal::TooLong);
    }
    if url.contains('#') {
        return Err(UrlRefusal::Fragment);
    }
    let uri: http::Uri = url.parse().map_err(|_| UrlRefusal::NotAbsolute)?;
    let port = match uri.scheme_str() {
        Some(scheme) if scheme.eq_ignore_ascii_case("https") => 443,
        Some(scheme) if scheme.eq_ignore_ascii_case("http") && policy.allow_loopback => 80,
        Some(_) => return Err(UrlRefusal::NotHttps),
        None if url.contains("://") => return Err(UrlRefusal::NotHttps),
        None => return Err(UrlRefusal::NotAbsolute),
    };
    let authority = uri.authority().ok_or(UrlRefusal::NotAbsolute)?;
    if authority.as_str().contains('@') {
        return Err(UrlRefusal::Credentials);
    }
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    if host.is_empty() {
        return Err(UrlRefusal::NotAbsolute);
    }
    let port = authority.port_u16().unwrap_or(port);
    if port != 443 && port < LOWEST_PORT {
        return Err(UrlRefusal::Port);
    }
    Ok((uri.clone(), host.to_ascii_lowercase(), port))
}

/// The host when it is an address itself (`1.2.3.4`, `[2001:db8::1]`):
/// nothing to resolve. Only the dotted-quad form counts as IPv4; the odd
/// forms some resolvers accept (`0x7f.1`, `2130706433`) go to the resolver,
/// which answers with a real address that is then checked.
fn literal_address(host: &str) -> Option<IpAddr> {
    host.parse::<Ipv4Addr>()
        .map(IpAddr::V4)
        .or_else(|_| host.parse::<Ipv6Addr>().map(IpAddr::V6))
        .ok()
}
