//! A resolver whose answers the caller writes: the tests' way to make a name
//! resolve to a public address at registration and to `127.0.0.1` at the
//! attempt (rebinding), or to any refused address, without touching DNS.

use super::{AddressError, Resolve};
use futures::future::BoxFuture;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

/// Each name answers its queued lists in turn, then its last one forever;
/// an unknown name does not resolve.
#[derive(Default)]
pub struct ScriptedResolver {
    names: Mutex<HashMap<String, Vec<Vec<IpAddr>>>>,
}

impl ScriptedResolver {
    /// Queues `answers` for `host` (replacing what it had).
    pub fn answer(&self, host: &str, answers: Vec<Vec<IpAddr>>) {
        if let Ok(mut names) = self.names.lock() {
            names.insert(host.to_ascii_lowercase(), answers);
        }
    }
}

impl Resolve for ScriptedResolver {
    fn resolve(&self, host: &str, _port: u16) -> BoxFuture<'_, Result<Vec<IpAddr>, AddressError>> {
        let answer = match self.names.lock() {
            Ok(mut names) => match names.get_mut(host) {
                Some(queue) if queue.len() > 1 => Ok(queue.remove(0)),
                Some(queue) if !queue.is_empty() => Ok(queue[0].clone()),
                _ => Err(AddressError(format!("{host}: no such name"))),
            },
            Err(_) => Err(AddressError(
                "the scripted resolver's lock is poisoned".into(),
            )),
        };
        Box::pin(async move { answer })
    }
}
