//! Order lists: which index partition each filter and scope reads, and the
//! page of orders it gives.

use super::{completion_list, owner_partition, pet_partition, ALL};
use crate::db::query::{Filter, IndexQuery, Projection};
use crate::db::shards::Kind;
use crate::db::{from_item, n, Db, DbError, Page};
use crate::records::{Id, Order, OwnerScope};
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;
use std::sync::LazyLock;

/// What an order list reads: the Order record's attributes.
static ORDER_FIELDS: LazyLock<Projection> = LazyLock::new(Projection::of::<Order>);

/// Which orders a list asks for.
#[derive(Debug, Clone, Copy, Default)]
pub struct OrderFilter {
    pub pet_id: Option<Id>,
    pub complete: Option<bool>,
}

impl OrderFilter {
    /// The GSI query for this filter within `scope`: a customer's orders are
    /// its own partition of GSI4, filtered there; staff lists run on the
    /// partition of the first filter, with the other as a filter expression.
    ///
    /// Every order's lists and the open ones are sharded. A customer's are
    /// spread by customer already, and a pet's orders stay one partition:
    /// each of them also writes the pet's own item, twice the units, so the
    /// item reaches DynamoDB's limit first (docs/partitions.md, "Flash sale").
    pub(crate) fn query(&self, scope: OwnerScope) -> IndexQuery<'static> {
        let (index, partition, sharded, filter) = match (scope, self.pet_id, self.complete) {
            (OwnerScope::OwnedBy(owner), pet, complete) => {
                ("GSI4", owner_partition(owner), None, filter(pet, complete))
            }
            (OwnerScope::All, Some(pet), complete) => {
                ("GSI3", pet_partition(pet), None, filter(None, complete))
            }
            (OwnerScope::All, None, Some(complete)) => {
                ("GSI2", completion_list(complete), Some(Kind::Order), None)
            }
            (OwnerScope::All, None, None) => ("GSI1", ALL.to_string(), Some(Kind::Order), None),
        };
        IndexQuery {
            index,
            partition,
            sharded,
            descending: true,
            filter,
            projection: &ORDER_FIELDS,
        }
    }
}

/// A filter expression on an order query's pet and completion, if any.
fn filter(pet: Option<Id>, complete: Option<bool>) -> Option<Filter<'static>> {
    let expression = match (pet, complete) {
        (Some(_), Some(_)) => "petId = :pet AND complete = :complete",
        (Some(_), None) => "petId = :pet",
        (None, Some(_)) => "complete = :complete",
        (None, None) => return None,
    };
    let mut values = HashMap::new();
    if let Some(pet) = pet {
        values.insert(":pet".to_string(), n(pet));
    }
    if let Some(complete) = complete {
        values.insert(":complete".to_string(), AttributeValue::Bool(complete));
    }
    Some(Filter {
        expression,
        names: HashMap::new(),
        values,
    })
}

impl Db {
    /// Lists the orders within `scope`, newest first.
    pub async fn list_orders(
        &self,
        filter: OrderFilter,
        scope: OwnerScope,
        limit: usize,
        after: Option<u64>,
    ) -> Result<Page<Order>, DbError> {
        self.query_page(filter.query(scope), limit, after)
            .await?
            .try_map(from_item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_customers_list_queries_its_own_partition_and_filters_only_there() {
        let (me, pet) = (Id::clamped(7), Id::clamped(9));
        let filter = OrderFilter {
            pet_id: Some(pet),
            complete: Some(false),
        };
        let mine = filter.query(OwnerScope::OwnedBy(me));
        assert_eq!(
            (mine.index, mine.partition.as_str()),
            ("GSI4", "ORDER#OWNER#7")
        );
        let mine = mine.filter.unwrap_or_default();
        assert_eq!(mine.expression, "petId = :pet AND complete = :complete");
        assert_eq!(mine.values.get(":pet"), Some(&n(9)));
        let unfiltered = OrderFilter::default().query(OwnerScope::OwnedBy(me));
        assert_eq!(unfiltered.index, "GSI4");
        assert!(unfiltered.filter.is_none());

        let staff = filter.query(OwnerScope::All);
        assert_eq!(
            (staff.index, staff.partition.as_str()),
            ("GSI3", "ORDER#PET#9")
        );
        let staff = staff.filter.unwrap_or_default();
        assert_eq!(staff.expression, "complete = :complete");
        assert_eq!(OrderFilter::default().query(OwnerScope::All).index, "GSI1");
    }
}
