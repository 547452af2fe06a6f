//! A page of a list: what every list query answers, sharded or not.

/// One page of a list.
#[derive(Debug, Clone)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// The id to continue after, when more records exist.
    pub next_after: Option<u64>,
}

impl<T> Page<T> {
    pub fn try_map<U, E>(self, f: impl FnMut(T) -> Result<U, E>) -> Result<Page<U>, E> {
        Ok(Page {
            items: self.items.into_iter().map(f).collect::<Result<_, _>>()?,
            next_after: self.next_after,
        })
    }
}
