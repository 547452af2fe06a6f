//! `If-Match` held in the write itself (contract 4c).
//!
//! A change made under `If-Match` reads its record as every change does
//! (no extra round trip), answers 412 when the record as read does not
//! have the validator named, and otherwise writes on the condition that
//! every attribute the record is served from is still what was read
//! ([`Changes::as_read`]). Lost on that condition, the attempt reads again
//! ([`super::write`]): the record has then moved on, and the fresh read
//! answers 412. So the check is the write's own, and a writer that knows
//! nothing of validators (the last release, serving beside this one) still
//! fails it. Without `If-Match` a change writes exactly what it wrote
//! before: the same calls, the same conditions.

use super::expr::Expr;
use super::{Changes, DbError};
use crate::records::{ETag, Id, IfMatch};
use serde::de::DeserializeOwned;
use serde::Serialize;

impl Changes {
    /// This handle with the request's `If-Match`.
    pub fn with_precondition(self, precondition: Option<IfMatch>) -> Changes {
        Changes {
            precondition,
            ..self
        }
    }

    /// 412 unless `record` (the `kind` with `id`, as read and as the API
    /// sends it) has the validator the request's `If-Match` names.
    pub(crate) fn check_precondition<T: Serialize>(
        &self,
        kind: &'static str,
        id: Id,
        record: &T,
    ) -> Result<(), DbError> {
        let Some(precondition) = &self.precondition else {
            return Ok(());
        };
        let current = ETag::of(record).map_err(DbError::internal)?;
        if precondition.matches(&current) {
            Ok(())
        } else {
            Err(DbError::PreconditionFailed { kind, id })
        }
    }

    /// `expr` on the condition that every attribute `record` is served from
    /// is as read, when the request names validators; `*` asks only that
    /// the record exists, which every change's condition holds already.
    pub(crate) fn as_read<T: Serialize + DeserializeOwned>(
        &self,
        expr: Expr,
        record: &T,
    ) -> Result<Expr, DbError> {
        match &self.precondition {
            Some(IfMatch::Tags(_)) => expr.when_record(record),
            Some(IfMatch::Any) | None => Ok(expr),
        }
    }

    /// Whether the request names validators (not `*`): its writes then hold
    /// on the record as read.
    pub(crate) fn names_validators(&self) -> bool {
        matches!(self.precondition, Some(IfMatch::Tags(_)))
    }
}
