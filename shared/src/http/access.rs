//! Who may call what: the one table of (method, route) → roles (contract 4a),
//! and which of its operations a request is for.
//!
//! The edge looks each request up here once ([`super::route::Route`] holds
//! what it found), and [`super::authorize`] checks the caller against it as a
//! route layer: only on routes axum matched, before the handler, before the
//! body is read and before any data is touched. A route the router serves but
//! this table does not list is refused to everyone (deny by default); a test
//! holds this table to the routes of `openapi.yaml` and `template.yaml`.
//! Unknown paths (404) and unserved methods (405) never reach the check.

use crate::records::{Caller, Role};
use http::Method;

/// Who may call an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone, with or without a key (still counted).
    Public,
    /// Callers with one of these roles.
    Roles(&'static [Role]),
}

const EVERY_ROLE: Access = Access::Roles(&[Role::Customer, Role::Staff]);
const STAFF: Access = Access::Roles(&[Role::Staff]);

/// Every operation of the contract and who may call it. Customers may read
/// the catalogue and place, read and cancel their own orders (ownership is
/// enforced by the database layer); everything else is staff's.
pub const ACCESS: &[(Method, &str, Access)] = &[
    (Method::GET, "/openapi.json", Access::Public),
    (Method::GET, "/docs", Access::Public),
    // A key's own view (contract 4d): every key may read its own.
    (Method::GET, "/me", EVERY_ROLE),
    (Method::GET, "/pets", EVERY_ROLE),
    (Method::POST, "/pets", STAFF),
    (Method::GET, "/pets/{petId}", EVERY_ROLE),
    (Method::PUT, "/pets/{petId}", STAFF),
    (Method::PATCH, "/pets/{petId}", STAFF),
    (Method::DELETE, "/pets/{petId}", STAFF),
    (Method::GET, "/categories", EVERY_ROLE),
    (Method::POST, "/categories", STAFF),
    (Method::GET, "/categories/{categoryId}", EVERY_ROLE),
    (Method::PUT, "/categories/{categoryId}", STAFF),
    (Method::DELETE, "/categories/{categoryId}", STAFF),
    (Method::GET, "/store/orders", EVERY_ROLE),
    (Method::POST, "/store/orders", EVERY_ROLE),
    (Method::GET, "/store/orders/{orderId}", EVERY_ROLE),
    (Method::PATCH, "/store/orders/{orderId}", STAFF),
    (Method::DELETE, "/store/orders/{orderId}", EVERY_ROLE),
    (Method::GET, "/store/inventory", EVERY_ROLE),
    (Method::GET, "/store/inventory/{petId}", EVERY_ROLE),
    (Method::PUT, "/store/inventory/{petId}", STAFF),
    // Webhooks (contract 9): every key may register its own endpoints;
    // ownership (another's reads as 404) is the database layer's, and so is
    // staff's reach over another's (1.3.0: disable, enable, delete, retry;
    // its url, events, description, secret and ping are 403), decided per
    // endpoint, so both roles are listed here.
    (Method::GET, "/webhooks", EVERY_ROLE),
    (Method::POST, "/webhooks", EVERY_ROLE),
    (Method::GET, "/webhooks/{webhookId}", EVERY_ROLE),
    (Method::PATCH, "/webhooks/{webhookId}", EVERY_ROLE),
    (Method::DELETE, "/webhooks/{webhookId}", EVERY_ROLE),
    (Method::POST, "/webhooks/{webhookId}/secret", EVERY_ROLE),
    (Method::POST, "/webhooks/{webhookId}/ping", EVERY_ROLE),
    (Method::GET, "/webhooks/{webhookId}/deliveries", EVERY_ROLE),
    (
        Method::POST,
        "/webhooks/{webhookId}/deliveries/{eventId}/retry",
        EVERY_ROLE,
    ),
];

/// Whether `caller` may call an operation open to `access` (`None`: an
/// operation the table does not list, refused to everyone).
pub fn permits(access: Option<Access>, caller: Option<&Caller>) -> bool {
    match access {
        Some(Access::Public) => true,
        Some(Access::Roles(roles)) => caller.is_some_and(|c| roles.contains(&c.role)),
        None => false,
    }
}

/// The operation of the table that `method` (as served: `HEAD` is `GET`)
/// on `path` is: its route template and who may call it.
pub fn listed(method: &Method, path: &str) -> Option<(&'static str, Access)> {
    ACCESS
        .iter()
        .find(|(m, template, _)| m == method && matches(template, path))
        .map(|(_, template, access)| (*template, *access))
}

/// Whether `path` is an instance of `template`, whose `{param}` segments
/// match any one non-empty segment.
fn matches(template: &str, path: &str) -> bool {
    let mut template = template.split('/');
    let mut path = path.split('/');
    loop {
        match (template.next(), path.next()) {
            (None, None) => return true,
            (Some(t), Some(p)) if t.starts_with('{') && !p.is_empty() => {}
            (Some(t), Some(p)) if t == p => {}
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::Id;

    fn permits(method: &Method, path: &str, caller: Option<&Caller>) -> bool {
        super::permits(access(method, path), caller)
    }

    fn access(method: &Method, path: &str) -> Option<Access> {
        listed(method, path).map(|(_, access)| access)
    }

    fn caller(role: Role) -> Option<Caller> {
        Id::new(1).map(|key_id| Caller {
            key_id,
            role,
            open_orders_cap: None,
            webhooks_cap: 1,
        })
    }

    #[test]
    fn customers_read_the_catalogue_and_order_staff_do_everything() {
        let customer = caller(Role::Customer);
        let staff = caller(Role::Staff);
        for (method, route, _) in ACCESS {
            assert!(permits(method, route, staff.as_ref()), "{method} {route}");
        }
        assert!(permits(&Method::GET, "/pets", customer.as_ref()));
        assert!(permits(&Method::POST, "/store/orders", customer.as_ref()));
        assert!(!permits(&Method::POST, "/pets", customer.as_ref()));
        assert!(!permits(
            &Method::PATCH,
            "/store/orders/{orderId}",
            customer.as_ref()
        ));
        assert!(!permits(
            &Method::PUT,
            "/store/inventory/{petId}",
            customer.as_ref()
        ));
    }

    /// The contract's operations, as (method, path, x-roles), from the
    /// document the service serves. `template.yaml` and the routers are held
    /// to the same route set by the integration tests (`routes`).
    fn documented_operations() -> Vec<(Method, String, Vec<String>, bool)> {
        let document: serde_json::Value =
            serde_json::from_str(crate::http::openapi::OPENAPI_JSON).unwrap_or_default();
        let mut operations = Vec::new();
        let paths = document["paths"].as_object().cloned().unwrap_or_default();
        for (path, item) in paths {
            for (method, operation) in item.as_object().cloned().unwrap_or_default() {
                const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];
                if !METHODS.contains(&method.as_str()) {
                    continue; // `parameters` and other keys of a path item
                }
                let Ok(method) = method.to_uppercase().parse::<Method>() else {
                    continue;
                };
                let roles = operation["x-roles"]
                    .as_array()
                    .map(|roles| {
                        roles
                            .iter()
                            .filter_map(|r| r.as_str())
                            .map(String::from)
                            .collect()
                    })
                    .unwrap_or_default();
                let public = operation["security"].as_array().is_some_and(Vec::is_empty);
                operations.push((method, path.clone(), roles, public));
            }
        }
        operations
    }

    #[test]
    fn the_table_is_the_contract_s_x_roles_operation_for_operation() {
        let documented = documented_operations();
        assert_eq!(documented.len(), ACCESS.len(), "{documented:?}");
        for (method, path, roles, public) in &documented {
            let expected = match access(method, path) {
                Some(Access::Public) => {
                    assert!(
                        public,
                        "{method} {path} is public here, not in the document"
                    );
                    vec!["customer".to_string(), "staff".to_string()]
                }
                Some(Access::Roles(listed)) => {
                    listed.iter().map(|r| r.as_str().to_string()).collect()
                }
                None => panic!("{method} {path} is documented but missing from ACCESS"),
            };
            assert_eq!(roles, &expected, "x-roles of {method} {path}");
        }
    }

    #[test]
    fn an_unlisted_operation_is_refused_to_everyone() {
        let staff = caller(Role::Staff);
        assert!(!permits(&Method::POST, "/store/inventory", staff.as_ref()));
        assert!(!permits(&Method::GET, "/admin", staff.as_ref()));
        assert!(!permits(&Method::GET, "/pets", None));
        assert!(permits(&Method::GET, "/openapi.json", None));
    }
}
