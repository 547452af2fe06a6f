//! Forged addresses go nowhere (section 9, "URL"): with a resolver the test
//! scripts, every refused range at the attempt, an IPv4-mapped literal, a
//! rebinding name and a redirect to a private address, each proven never
//! to reach the address it aimed at.

use super::receivers::{rust_receiver, Answer};
use super::*;
use petstore::webhooks::address::UrlRefusal;
use petstore::webhooks::sign::new_secret;
use std::net::IpAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const STRICT: UrlPolicy = UrlPolicy {
    allow_loopback: false,
};

/// One address of each refused range of section 9.
const REFUSED: &[&str] = &[
    "127.0.0.1",
    "::1",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.0.1",
    "fc00::1",
    "fd12::1",
    "169.254.169.254",
    "169.254.0.1",
    "fe80::1",
    "100.64.0.1",
    "224.0.0.1",
    "ff02::1",
    "0.0.0.0",
    "::",
    "255.255.255.255",
    "240.0.0.1",
    "192.0.2.1",
    "2001:db8::1",
    "198.18.0.1",
    "::ffff:127.0.0.1",
    "::ffff:169.254.169.254",
    "::ffff:10.0.0.1",
    "64:ff9b::a9fe:a9fe",
];

/// A listener standing for the address a forged URL aims at.
struct Target(TcpListener);

impl Target {
    async fn new() -> Target {
        Target(TcpListener::bind("127.0.0.1:0").await.expect("a port"))
    }

    fn port(&self) -> u16 {
        self.0.local_addr().expect("its address").port()
    }

    /// Proves nothing connected before this call: the first connection the
    /// listener holds is the one made here.
    async fn assert_never_contacted(&self) {
        let mut ours = TcpStream::connect(("127.0.0.1", self.port()))
            .await
            .expect("connects");
        ours.write_all(b"ours").await.expect("writes");
        let (mut first, _) = self.0.accept().await.expect("accepts");
        let mut marker = [0u8; 4];
        first.read_exact(&mut marker).await.expect("reads");
        assert_eq!(&marker, b"ours", "the forged address was contacted");
    }
}

fn ip(text: &str) -> IpAddr {
    text.parse().expect("an address")
}

#[tokio::test]
async fn a_name_rebound_to_any_refused_range_is_blocked_at_the_attempt() {
    let app = TestApp::spawn().await;
    let target = Target::new().await;
    let resolver = scripted();
    let mut endpoints = Vec::new();
    for (i, address) in REFUSED.iter().enumerate() {
        let host = format!("rebind-{i}.example");
        // Public when registered, then the refused address at every attempt.
        resolver.answer(&host, vec![vec![ip("93.184.215.14")], vec![ip(address)]]);
        let url = format!("https://{host}:{}/hooks", target.port());
        let id = register(
            &app,
            &NewEndpoint::new(1, "staff", &url, &new_secret()),
            &STRICT,
            resolver.as_ref(),
        )
        .await;
        endpoints.push((id, *address));
    }
    deliverer(&app, STRICT, resolver)
        .fan_out(&stock_event("evt-ssrf"))
        .await
        .expect("fanned out");

    for (id, address) in endpoints {
        let failed = delivery_when(&app, id, "evt-ssrf", |d| d["state"] == "failed").await;
        let errors: Vec<_> = failed["attempts"]
            .as_array()
            .expect("attempts")
            .iter()
            .map(|a| a["error"].clone())
            .collect();
        assert_eq!(errors, vec![json!("blocked_address"); 4], "{address}");
    }
    target.assert_never_contacted().await;
}

#[tokio::test]
async fn an_ipv4_mapped_literal_is_refused_at_registration_and_at_every_attempt() {
    let app = TestApp::spawn().await;
    let target = Target::new().await;
    let url = format!("https://[::ffff:127.0.0.1]:{}/", target.port());
    let refusal = check_url(&url, &STRICT, scripted().as_ref())
        .await
        .expect_err("refused");
    assert!(
        matches!(
            refusal,
            UrlRefusal::Refused {
                range: "loopback",
                ..
            }
        ),
        "{refusal:?}"
    );
    // Stored anyway (an item older than a rule, or written by hand): the attempt checks again.
    let lenient = UrlPolicy {
        allow_loopback: true,
    };
    let id = register(
        &app,
        &NewEndpoint::new(1, "staff", &url, &new_secret()),
        &lenient,
        scripted().as_ref(),
    )
    .await;
    deliverer(&app, STRICT, scripted())
        .fan_out(&stock_event("evt-mapped"))
        .await
        .expect("fanned out");

    let failed = delivery_when(&app, id, "evt-mapped", |d| d["state"] == "failed").await;
    assert_eq!(failed["attempts"][0]["error"], "blocked_address");
    target.assert_never_contacted().await;
}

#[tokio::test]
async fn a_redirect_to_a_private_address_is_a_failed_attempt_never_followed() {
    let app = TestApp::spawn().await;
    let private = Target::new().await;
    let location = format!("http://127.0.0.1:{}/latest/meta-data/", private.port());
    let secret = new_secret();
    let mut receiver = rust_receiver(&[&secret], vec![Answer::RedirectTo(location)]).await;
    let resolver = system_resolver();
    let id = register(
        &app,
        &NewEndpoint::new(1, "staff", &receiver.url, &secret),
        &LOCAL,
        resolver.as_ref(),
    )
    .await;
    deliverer(&app, LOCAL, resolver)
        .fan_out(&stock_event("evt-redirect"))
        .await
        .expect("fanned out");

    receiver.next().await;
    let failed = delivery_when(&app, id, "evt-redirect", |d| d["state"] == "failed").await;
    let attempt = &failed["attempts"][0];
    assert_eq!(
        (&attempt["statusCode"], &attempt["error"]),
        (&json!(307), &json!("redirect"))
    );
    private.assert_never_contacted().await;
}
