//! The refused ranges: every address that is not public unicast.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The range `address` falls in when it is refused, named for the message
/// (`loopback`, `private`, ...); `None` when it is public unicast.
pub fn refused_range(address: IpAddr) -> Option<&'static str> {
    match address {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => refused_v6(v6),
    }
}

fn refused_v4(a: Ipv4Addr) -> Option<&'static str> {
    let std_ranges = [
        (a.is_loopback(), "loopback"),
        (a.is_private(), "private"),
        (a.is_link_local(), "link-local"),
        (a.is_multicast(), "multicast"),
        (a.is_unspecified(), "unspecified"),
        (a.is_broadcast(), "broadcast"),
        (a.is_documentation(), "documentation"),
    ];
    if let Some((_, name)) = std_ranges.iter().find(|(is, _)| *is) {
        return Some(name);
    }
    V4_RANGES
        .iter()
        .find(|(net, len, _)| in_v4(a, *net, *len))
        .map(|(_, _, name)| *name)
}

/// The IPv4 special-purpose ranges std has no method for (IANA's registry).
const V4_RANGES: [([u8; 4], u8, &str); 6] = [
    ([0, 0, 0, 0], 8, "\"this network\""),
    ([100, 64, 0, 0], 10, "shared (carrier-grade NAT)"),
    ([192, 0, 0, 0], 24, "IETF protocol assignment"),
    ([192, 88, 99, 0], 24, "6to4 relay"),
    ([198, 18, 0, 0], 15, "benchmarking"),
    ([240, 0, 0, 0], 4, "reserved"),
];

fn in_v4(a: Ipv4Addr, net: [u8; 4], len: u8) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
    u32::from(a) & mask == u32::from(Ipv4Addr::from(net)) & mask
}

fn refused_v6(a: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = embedded_v4(a) {
        return refused_v4(v4);
    }
    let std_ranges = [
        (a.is_loopback(), "loopback"),
        (a.is_unspecified(), "unspecified"),
        (a.is_multicast(), "multicast"),
        (a.is_unique_local(), "private"),
        (a.is_unicast_link_local(), "link-local"),
    ];
    if let Some((_, name)) = std_ranges.iter().find(|(is, _)| *is) {
        return Some(name);
    }
    if let Some((_, _, name)) = V6_RANGES.iter().find(|(net, len, _)| in_v6(a, *net, *len)) {
        return Some(name);
    }
    (!in_v6(a, 0x2000 << 112, 3)).then_some("reserved")
}

/// Inside the global unicast block `2000::/3`, the special-purpose ranges.
const V6_RANGES: [(u128, u8, &str); 6] = [
    (0x0064_ff9b_0001 << 80, 48, "local-use NAT64"),
    (0x2001_0db8 << 96, 32, "documentation"),
    (0x3fff << 112, 20, "documentation"),
    (0x2001 << 112, 23, "IETF protocol assignment"),
    (0x2002 << 112, 16, "6to4"),
    (0x5f00 << 112, 16, "segment routing"),
];

fn in_v6(a: Ipv6Addr, net: u128, len: u8) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
    u128::from(a) & mask == net & mask
}

/// The IPv4 address an IPv6 address stands for: IPv4-mapped
/// (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`, deprecated but still
/// routed by some stacks) and the well-known NAT64 prefix (`64:ff9b::/96`;
/// the local-use one, `64:ff9b:1::/48`, is refused whole above).
/// `::` and `::1` are IPv6's own unspecified and loopback, not IPv4's.
fn embedded_v4(a: Ipv6Addr) -> Option<Ipv4Addr> {
    let bits = u128::from(a);
    let low = Ipv4Addr::from(bits as u32);
    let compatible = bits >> 32 == 0 && bits > 1;
    let mapped = bits >> 32 == 0xffff;
    let nat64 = in_v6(a, 0x0064_ff9b << 96, 96);
    (compatible || mapped || nat64).then_some(low)
}
