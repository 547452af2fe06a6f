use super::*;

/// A resolver the test scripts, from address strings.
struct Scripted(ScriptedResolver);

impl Scripted {
    fn default() -> Self {
        Scripted(ScriptedResolver::default())
    }

    fn with(self, host: &str, answers: &[&[&str]]) -> Self {
        let answers = answers
            .iter()
            .map(|a| a.iter().map(|s| s.parse().unwrap()).collect())
            .collect();
        self.0.answer(host, answers);
        self
    }
}

const STRICT: UrlPolicy = UrlPolicy {
    allow_loopback: false,
};
const LOCAL: UrlPolicy = UrlPolicy {
    allow_loopback: true,
};

fn check(url: &str, policy: &UrlPolicy, resolver: &Scripted) -> Result<CheckedUrl, UrlRefusal> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    runtime.block_on(check_url(url, policy, &resolver.0))
}

/// A resolver that never answers.
struct Silent;

impl Resolve for Silent {
    fn resolve(&self, _: &str, _: u16) -> BoxFuture<'_, Result<Vec<IpAddr>, AddressError>> {
        Box::pin(futures::future::pending())
    }
}

#[tokio::test(start_paused = true)]
async fn a_look_up_over_five_seconds_is_refused() {
    let started = tokio::time::Instant::now();
    let refusal = check_url("https://slow.example/", &STRICT, &Silent).await;
    assert_eq!(refusal.unwrap_err(), UrlRefusal::LookupTimedOut);
    assert_eq!(started.elapsed(), LOOKUP_TIMEOUT);
    assert!(UrlRefusal::LookupTimedOut.message().contains("5 seconds"));
}

#[test]
fn ports_are_443_or_1024_to_65535() {
    let resolver = Scripted::default().with("hooks.example", &[&["8.8.8.8"]]);
    for port in [443, 1024, 8443, 65535] {
        let url = format!("https://hooks.example:{port}/");
        assert_eq!(check(&url, &STRICT, &resolver).map(|c| c.port), Ok(port));
    }
    for port in [1, 22, 25, 80, 1023] {
        let url = format!("https://hooks.example:{port}/");
        assert_eq!(
            check(&url, &STRICT, &resolver).unwrap_err(),
            UrlRefusal::Port
        );
    }
    assert!(UrlRefusal::Port.message().contains("1024"));
}

#[test]
fn a_refusal_names_the_rule_never_the_address_the_host_resolved_to() {
    for (address, range) in REFUSED {
        let resolver = Scripted::default().with("inside.example", &[&[address]]);
        let refusal = check("https://inside.example/", &STRICT, &resolver).unwrap_err();
        let message = refusal.message();
        assert!(
            message.contains(range) && !message.contains(address),
            "{message}"
        );
    }
}

#[test]
fn loopback_is_refused_at_start_up_where_lambda_runs_the_function() {
    assert!(refused_in_lambda(true, true).is_err());
    assert!(refused_in_lambda(true, false).is_ok());
    assert!(refused_in_lambda(false, true).is_ok());
}

/// Every refused range, one address in it (its first, a middle one and its
/// last where they differ), with the range the refusal names.
const REFUSED: &[(&str, &str)] = &[
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("::1", "loopback"),
    ("10.0.0.1", "private"),
    ("10.255.255.255", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.255", "private"),
    ("192.168.1.1", "private"),
    ("fc00::1", "private"),
    ("fdff:ffff::1", "private"),
    ("169.254.169.254", "link-local"),
    ("169.254.0.1", "link-local"),
    ("fe80::1", "link-local"),
    ("febf::1", "link-local"),
    ("100.64.0.1", "shared (carrier-grade NAT)"),
    ("100.127.255.254", "shared (carrier-grade NAT)"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.255", "multicast"),
    ("ff02::1", "multicast"),
    ("0.0.0.0", "unspecified"),
    ("::", "unspecified"),
    ("0.1.2.3", "\"this network\""),
    ("255.255.255.255", "broadcast"),
    ("240.0.0.1", "reserved"),
    ("192.0.2.1", "documentation"),
    ("198.51.100.1", "documentation"),
    ("203.0.113.1", "documentation"),
    ("2001:db8::1", "documentation"),
    ("3fff::1", "documentation"),
    ("198.18.0.1", "benchmarking"),
    ("198.19.255.255", "benchmarking"),
    ("192.0.0.8", "IETF protocol assignment"),
    ("2001::1", "IETF protocol assignment"),
    ("192.88.99.1", "6to4 relay"),
    ("2002:a00:1::1", "6to4"),
    ("5f00::1", "segment routing"),
    ("64:ff9b:1::a00:1", "local-use NAT64"),
    ("fec0::1", "reserved"),
    ("100::1", "reserved"),
    // IPv4 in IPv6 clothes: judged by the IPv4 address it carries.
    ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:169.254.169.254", "link-local"),
    ("::ffff:10.1.2.3", "private"),
    ("::ffff:100.64.0.1", "shared (carrier-grade NAT)"),
    ("::127.0.0.1", "loopback"),
    ("::10.0.0.1", "private"),
    ("64:ff9b::7f00:1", "loopback"),
    ("64:ff9b::a9fe:a9fe", "link-local"),
];

const PUBLIC: &[&str] = &[
    "93.184.215.14",
    "8.8.8.8",
    "1.1.1.1",
    "100.63.255.255",
    "100.128.0.0",
    "172.15.255.255",
    "172.32.0.0",
    "198.17.255.255",
    "198.20.0.0",
    "223.255.255.255",
    "2606:4700::1111",
    "2a00:1450:4001::200e",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
];

#[test]
fn every_refused_range_is_refused_naming_it() {
    for (address, range) in REFUSED {
        let address: IpAddr = address.parse().unwrap();
        assert_eq!(refused_range(address), Some(*range), "{address}");
    }
}

#[test]
fn public_unicast_addresses_are_allowed_next_to_each_range_s_edges() {
    for address in PUBLIC {
        assert_eq!(refused_range(address.parse().unwrap()), None, "{address}");
    }
}

#[test]
fn a_name_resolving_to_any_refused_address_is_refused_at_check() {
    for (address, range) in REFUSED {
        let resolver = Scripted::default().with("hooks.example", &[&["8.8.8.8", address]]);
        let refusal = check("https://hooks.example/in", &STRICT, &resolver).unwrap_err();
        let address: IpAddr = address.parse().unwrap();
        assert_eq!(refusal, UrlRefusal::Refused { address, range });
        assert!(refusal.message().contains(range), "{}", refusal.message());
    }
}

#[test]
fn an_address_literal_is_checked_without_a_look_up() {
    let nobody = Scripted::default();
    let refusal = check("https://[::ffff:169.254.169.254]/x", &STRICT, &nobody).unwrap_err();
    assert!(matches!(
        refusal,
        UrlRefusal::Refused {
            range: "link-local",
            ..
        }
    ));
    let checked = check("https://8.8.8.8:8443/x", &STRICT, &nobody).unwrap();
    assert_eq!((checked.host.as_str(), checked.port), ("8.8.8.8", 8443));
    let checked = check("https://[2606:4700::1111]/", &STRICT, &nobody).unwrap();
    assert_eq!(checked.host, "2606:4700::1111");
}

#[test]
fn a_public_name_is_checked_with_every_address_it_resolved_to() {
    let resolver = Scripted::default().with("hooks.example", &[&["8.8.8.8", "2606:4700::1111"]]);
    let checked = check("https://Hooks.Example/in?x=1", &STRICT, &resolver).unwrap();
    assert_eq!(checked.host, "hooks.example");
    assert_eq!(checked.port, 443);
    assert_eq!(checked.addresses.len(), 2);
    assert!(checked.is_https());
}

#[test]
fn a_rebinding_name_is_refused_at_the_second_check() {
    let resolver = Scripted::default().with("rebind.example", &[&["8.8.8.8"], &["127.0.0.1"]]);
    assert!(check("https://rebind.example/", &STRICT, &resolver).is_ok());
    let refusal = check("https://rebind.example/", &STRICT, &resolver).unwrap_err();
    assert!(matches!(
        refusal,
        UrlRefusal::Refused {
            range: "loopback",
            ..
        }
    ));
}

#[test]
fn syntax_is_refused_before_any_look_up() {
    let nobody = Scripted::default();
    let long = format!("https://a.example/{}", "x".repeat(MAX_URL_LENGTH));
    let cases = [
        ("http://hooks.example/", UrlRefusal::NotHttps),
        ("ftp://hooks.example/", UrlRefusal::NotHttps),
        (long.as_str(), UrlRefusal::TooLong),
        ("https://user:pw@hooks.example/", UrlRefusal::Credentials),
        ("https://user@hooks.example/", UrlRefusal::Credentials),
        ("https://hooks.example/#top", UrlRefusal::Fragment),
        ("/relative/path", UrlRefusal::NotAbsolute),
        ("hooks.example", UrlRefusal::NotAbsolute),
        ("https://exa mple.com/", UrlRefusal::NotAbsolute),
    ];
    for (url, refusal) in cases {
        assert_eq!(check(url, &STRICT, &nobody).unwrap_err(), refusal, "{url}");
        assert!(!refusal.message().is_empty());
    }
    let unknown = check("https://nowhere.example/", &STRICT, &nobody).unwrap_err();
    assert!(unknown == UrlRefusal::Unresolvable);
}

#[test]
fn exactly_2048_characters_are_allowed() {
    let prefix = "https://8.8.8.8/";
    let url = format!("{prefix}{}", "x".repeat(MAX_URL_LENGTH - prefix.len()));
    assert!(check(&url, &STRICT, &Scripted::default()).is_ok());
}

#[test]
fn allow_loopback_admits_http_and_loopback_only() {
    let resolver = Scripted::default().with("localhost", &[&["127.0.0.1", "::1"]]);
    let checked = check("http://localhost:8080/in", &LOCAL, &resolver).unwrap();
    assert_eq!((checked.port, checked.is_https()), (8080, false));
    assert!(check("http://127.0.0.1:3000/", &LOCAL, &resolver).is_ok());
    // The port rule holds locally too: http's default 80 is below 1024.
    let port_80 = check("http://127.0.0.1/", &LOCAL, &resolver);
    assert_eq!(port_80.unwrap_err(), UrlRefusal::Port);
    for still_refused in [
        "http://10.0.0.1:8080/",
        "http://169.254.169.254:8080/",
        "http://[fc00::1]:8080/",
    ] {
        assert!(
            matches!(
                check(still_refused, &LOCAL, &resolver),
                Err(UrlRefusal::Refused { .. })
            ),
            "{still_refused}"
        );
    }
    assert!(check("ftp://127.0.0.1/", &LOCAL, &resolver).is_err());
    assert!(check("http://localhost:8080/in", &STRICT, &resolver).is_err());
}
