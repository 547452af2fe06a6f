//! The one place guards and changes become DynamoDB syntax: condition and
//! update expressions, their placeholders, and the write items they go in.

use super::{n, s};
use crate::records::Id;
use crate::rules::Guard;
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

/// One item's write under construction: its condition, its update clauses,
/// and the names and values their placeholders stand for.
#[derive(Debug, Default)]
pub(crate) struct Expr {
    condition: Vec<String>,
    set: Vec<String>,
    remove: Vec<String>,
    add: Vec<String>,
    names: HashMap<String, String>,
    values: HashMap<String, AttributeValue>,
    /// Whether a failed condition gives back the item as it was.
    return_old: bool,
}

impl Expr {
    pub(crate) fn new() -> Expr {
        Expr::default()
    }

    /// A placeholder for an attribute name (every name goes through one, so
    /// reserved words such as `name` and `status` need no special care).
    fn name(&mut self, attribute: &str) -> String {
        let placeholder = format!("#{attribute}");
        self.names
            .insert(placeholder.clone(), attribute.to_string());
        placeholder
    }

    /// The path of entry `key` of the map attribute `map`: the key has a
    /// placeholder of its own (an entry's key is data, any characters).
    fn entry(&mut self, map: &str, key: &str) -> String {
        let map = self.name(map);
        let placeholder = format!("#entry{}", self.names.len());
        self.names.insert(placeholder.clone(), key.to_string());
        format!("{map}.{placeholder}")
    }

    fn value(&mut self, value: AttributeValue) -> String {
        let placeholder = format!(":v{}", self.values.len());
        self.values.insert(placeholder.clone(), value);
        placeholder
    }

    fn compare(&mut self, attribute: &str, operator: &str, value: AttributeValue) -> String {
        let name = self.name(attribute);
        let value = self.value(value);
        format!("{name} {operator} {value}")
    }

    /// Conditions the write on the item existing.
    pub(crate) fn exists(mut self) -> Expr {
        self.condition.push("attribute_exists(PK)".into());
        self
    }

    /// Conditions the write on the item holding `attribute`.
    pub(crate) fn has(mut self, attribute: &str) -> Expr {
        let name = self.name(attribute);
        self.condition.push(format!("attribute_exists({name})"));
        self
    }

    /// Conditions the write on the item not holding `attribute`.
    pub(crate) fn lacks(mut self, attribute: &str) -> Expr {
        let name = self.name(attribute);
        self.condition.push(format!("attribute_not_exists({name})"));
        self
    }

    /// Conditions the write on the map `map` holding an entry `key`.
    pub(crate) fn has_entry(mut self, map: &str, key: &str) -> Expr {
        let path = self.entry(map, key);
        self.condition.push(format!("attribute_exists({path})"));
        self
    }

    /// Conditions the write on the map `map` holding no entry `key`.
    pub(crate) fn lacks_entry(mut self, map: &str, key: &str) -> Expr {
        let path = self.entry(map, key);
        self.condition.push(format!("attribute_not_exists({path})"));
        self
    }

    /// Conditions the write on no item having its key, or on the one there
    /// holding `attribute` below `value` (a lease run out).
    pub(crate) fn absent_or_below(mut self, attribute: &str, value: AttributeValue) -> Expr {
        let name = self.name(attribute);
        let value = self.value(value);
        self.condition
            .push(format!("(attribute_not_exists(PK) OR {name} < {value})"));
        self
    }

    /// Conditions the write on no item having its key.
    pub(crate) fn absent(mut self) -> Expr {
        self.condition.push("attribute_not_exists(PK)".into());
        self
    }

    /// Conditions the write on no item having its key, or on the one there
    /// having expired by `now` (Unix seconds) though TTL has not deleted it.
    pub(crate) fn absent_or_expired(mut self, now: i64) -> Expr {
        let expires = self.name("expiresAt");
        let now = self.value(n(now));
        self.condition
            .push(format!("(attribute_not_exists(PK) OR {expires} < {now})"));
        self
    }

    /// Conditions the write on no item having its key, or on the one there
    /// naming `holder` as its `categoryId` (a name claim that category holds).
    pub(crate) fn absent_or_claimed_by(mut self, holder: Id) -> Expr {
        let category = self.name("categoryId");
        let holder = self.value(n(holder));
        self.condition.push(format!(
            "(attribute_not_exists(PK) OR {category} = {holder})"
        ));
        self
    }

    /// Conditions the write on `attribute` holding exactly `value` (a
    /// webhook endpoint's owner, or its secrets as read).
    pub(crate) fn when_equal(mut self, attribute: &str, value: AttributeValue) -> Expr {
        let condition = self.compare(attribute, "=", value);
        self.condition.push(condition);
        self
    }

    /// Conditions the write on `attribute` being as read: holding `value`,
    /// or absent (`None`; also when `absent_means` is `value`, a default the
    /// item leaves out).
    pub(crate) fn when_as_read(
        mut self,
        attribute: &str,
        value: Option<AttributeValue>,
        absent_means: Option<&AttributeValue>,
    ) -> Expr {
        let name = self.name(attribute);
        let condition = match value {
            None => format!("attribute_not_exists({name})"),
            Some(value) if absent_means == Some(&value) => {
                let value = self.value(value);
                format!("(attribute_not_exists({name}) OR {name} = {value})")
            }
            Some(value) => format!("{name} = {}", self.value(value)),
        };
        self.condition.push(condition);
        self
    }

    /// Conditions the write on the counter `attribute` being absent (none
    /// counted yet) or below `cap`.
    pub(crate) fn when_below(mut self, attribute: &str, cap: u32) -> Expr {
        let count = self.name(attribute);
        let cap = self.value(n(cap));
        self.condition.push(format!(
            "(attribute_not_exists({count}) OR {count} < {cap})"
        ));
        self
    }

    /// Conditions the write on `guard` holding.
    pub(crate) fn when(mut self, guard: &Guard) -> Expr {
        let condition = self.condition_of(guard);
        self.condition.push(condition);
        self
    }

    /// Conditions the write on every one of `guards` holding.
    pub(crate) fn when_all<'a>(self, guards: impl IntoIterator<Item = &'a Guard>) -> Expr {
        guards.into_iter().fold(self, Expr::when)
    }

    /// The condition `guard` stands for: a single comparison, or a group in
    /// parentheses, so it can stand as it is in an `AND` chain or after
    /// `NOT` (DynamoDB refuses redundant parentheses).
    fn condition_of(&mut self, guard: &Guard) -> String {
        match guard {
            Guard::StatusIs(status) => self.compare("status", "=", s(status.as_str())),
            Guard::StockIs(units) => self.compare("stock", "=", n(units)),
            Guard::StockAbove(units) => self.compare("stock", ">", n(units)),
            Guard::OpenOrdersIs(count) => self.compare("openOrders", "=", n(count)),
            Guard::CategoryIs(id) => self.compare("categoryId", "=", n(id)),
            // Categories created before pets were counted have no `petCount`.
            Guard::CategoryUnused => {
                let count = self.name("petCount");
                let zero = self.value(n(0));
                format!("(attribute_not_exists({count}) OR {count} = {zero})")
            }
            Guard::NameIs(name) => self.compare("name", "=", s(name.as_str())),
            Guard::OrderIncomplete => self.compare("complete", "=", AttributeValue::Bool(false)),
            Guard::OwnedBy(owner) => self.compare("ownerId", "=", n(owner)),
            Guard::NotLapsing => {
                let lapsing = self.name("lapsing");
                format!("attribute_not_exists({lapsing})")
            }
            Guard::Lapsing => self.compare("lapsing", "=", AttributeValue::Bool(true)),
            // Instants are stored as RFC 3339 UTC with milliseconds: fixed
            // width, so they compare as strings in time order.
            Guard::LapsesBy(at) => self.compare(
                "lapsesAt",
                "<=",
                s(at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
            ),
            Guard::HoldCounted => {
                let lapses_at = self.name("lapsesAt");
                format!("attribute_exists({lapses_at})")
            }
            // A key with no counter item yet holds nothing.
            Guard::OpenHoldsBelow(cap) => {
                let count = self.name("openOrders");
                let cap = self.value(n(cap));
                format!("(attribute_not_exists({count}) OR {count} < {cap})")
            }
            Guard::Not(inner) => {
                let condition = self.condition_of(inner);
                if matches!(
                    **inner,
                    Guard::All(_) | Guard::CategoryUnused | Guard::OpenHoldsBelow(_)
                ) {
                    format!("NOT {condition}")
                } else {
                    format!("NOT ({condition})")
                }
            }
            Guard::All(guards) => {
                let all: Vec<String> = guards.iter().map(|g| self.condition_of(g)).collect();
                format!("({})", all.join(" AND "))
            }
        }
    }

    /// Sets an attribute.
    pub(crate) fn set(mut self, attribute: &str, value: AttributeValue) -> Expr {
        let name = self.name(attribute);
        let value = self.value(value);
        self.set.push(format!("{name} = {value}"));
        self
    }

    /// Sets an attribute the item does not hold yet; one it holds stays.
    pub(crate) fn set_if_absent(mut self, attribute: &str, value: AttributeValue) -> Expr {
        let name = self.name(attribute);
        let value = self.value(value);
        self.set
            .push(format!("{name} = if_not_exists({name}, {value})"));
        self
    }

    /// Sets entry `key` of the map `map` (which the item holds).
    pub(crate) fn set_entry(mut self, map: &str, key: &str, value: AttributeValue) -> Expr {
        let path = self.entry(map, key);
        let value = self.value(value);
        self.set.push(format!("{path} = {value}"));
        self
    }

    /// Removes entry `key` of the map `map`.
    pub(crate) fn remove_entry(mut self, map: &str, key: &str) -> Expr {
        let path = self.entry(map, key);
        self.remove.push(path);
        self
    }

    /// A failed condition gives back the item as it was
    /// ([`crate::db::Decided::Failed`]), at no cost in read units.
    pub(crate) fn returning_old(mut self) -> Expr {
        self.return_old = true;
        self
    }

    /// Moves a number the item holds by `delta`.
    pub(crate) fn adjust(mut self, attribute: &str, delta: i64) -> Expr {
        let name = self.name(attribute);
        let (operator, amount) = if delta < 0 {
            ("-", -delta)
        } else {
            ("+", delta)
        };
        let value = self.value(n(amount));
        self.set.push(format!("{name} = {name} {operator} {value}"));
        self
    }

    /// Adds `delta` to a number, which starts at 0 when the item has none.
    pub(crate) fn add(mut self, attribute: &str, delta: i64) -> Expr {
        let name = self.name(attribute);
        let value = self.value(n(delta));
        self.add.push(format!("{name} {value}"));
        self
    }

    pub(crate) fn remove(mut self, attribute: &str) -> Expr {
        let name = self.name(attribute);
        self.remove.push(name);
        self
    }
}

mod items;
mod records;
#[cfg(test)]
mod tests;
