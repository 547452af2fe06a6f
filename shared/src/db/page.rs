//! A page of a list: what every list query answers, sharded or not.

/// One page of a list: its records, and where the next page starts, by
/// the position the list sorts on (`K`: the numeric `id` of the index
/// lists; a delivery's sort key for an endpoint's deliveries).
#[derive(Debug, Clone)]
pub struct Page<T, K = u64> {
    pub items: Vec<T>,
    /// The position to continue after, when more records exist.
    pub next_after: Option<K>,
}

impl<T, K> Page<T, K> {
    pub fn try_map<U, E>(self, f: impl FnMut(T) -> Result<U, E>) -> Result<Page<U, K>, E> {
        Ok(Page {
            items: self.items.into_iter().map(f).collect::<Result<_, _>>()?,
            next_after: self.next_after,
        })
    }
}
