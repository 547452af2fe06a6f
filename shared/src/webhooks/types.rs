//! Section 9's event types: the one mapping from section 8's detail-types,
//! and which of them a customer may receive (its own orders' only).

/// Section 9's types, from section 8's detail-types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    OrderPlaced,
    OrderCompleted,
    OrderCancelled,
    PetCreated,
    PetUpdated,
    PetDeleted,
    CategoryCreated,
    CategoryUpdated,
    CategoryDeleted,
    StockChanged,
    Ping,
}

impl EventType {
    pub fn all() -> &'static [EventType] {
        use EventType::*;
        &[
            OrderPlaced,
            OrderCompleted,
            OrderCancelled,
            PetCreated,
            PetUpdated,
            PetDeleted,
            CategoryCreated,
            CategoryUpdated,
            CategoryDeleted,
            StockChanged,
            Ping,
        ]
    }

    pub fn as_str(self) -> &'static str {
        use EventType::*;
        match self {
            OrderPlaced => "order.placed",
            OrderCompleted => "order.completed",
            OrderCancelled => "order.cancelled",
            PetCreated => "pet.created",
            PetUpdated => "pet.updated",
            PetDeleted => "pet.deleted",
            CategoryCreated => "category.created",
            CategoryUpdated => "category.updated",
            CategoryDeleted => "category.deleted",
            StockChanged => "stock.changed",
            Ping => "webhook.ping",
        }
    }

    pub fn from_detail_type(detail_type: &str) -> Option<EventType> {
        use EventType::*;
        Some(match detail_type {
            "OrderPlaced" => OrderPlaced,
            "OrderCompleted" => OrderCompleted,
            "OrderCancelled" => OrderCancelled,
            "PetCreated" => PetCreated,
            "PetUpdated" => PetUpdated,
            "PetDeleted" => PetDeleted,
            "CategoryCreated" => CategoryCreated,
            "CategoryUpdated" => CategoryUpdated,
            "CategoryDeleted" => CategoryDeleted,
            "StockChanged" => StockChanged,
            _ => return None,
        })
    }

    pub fn is_order(self) -> bool {
        matches!(
            self,
            EventType::OrderPlaced | EventType::OrderCompleted | EventType::OrderCancelled
        )
    }

    /// The type named `raw` as the API spells it (`order.placed`), if any.
    pub fn parse(raw: &str) -> Option<EventType> {
        EventType::all().iter().copied().find(|t| t.as_str() == raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_reads_back_from_its_name_and_the_bus_types_map_to_all_but_ping() {
        for t in EventType::all() {
            assert_eq!(EventType::parse(t.as_str()), Some(*t));
        }
        assert_eq!(EventType::parse("order.shipped"), None);
        assert_eq!(
            EventType::from_detail_type("OrderCancelled"),
            Some(EventType::OrderCancelled)
        );
        assert_eq!(EventType::from_detail_type("WebhookPing"), None);
        let orders: Vec<_> = EventType::all().iter().filter(|t| t.is_order()).collect();
        assert_eq!(orders.len(), 3);
    }
}
