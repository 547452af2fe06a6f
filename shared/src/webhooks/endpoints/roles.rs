//! An endpoint's place in the staff list follows its key's role (section 9,
//! 1.2.0). The fan-out finds candidates in two lists, the staff list (GSI2
//! `WEBHOOKSTAFF`) and the order owner's (GSI4), then keeps only what each
//! key's current role allows (`receiving::takes`). A key made a customer is
//! so filtered at use whatever the lists say; a key made staff must be in
//! the staff list to be found for another customer's order at all. So
//! `petstore-admin keys update` moves the key's endpoints when it changes a
//! role.

use super::{owner_list, STAFF};
use crate::db::{classify, s, Db, DbError};
use crate::records::{Id, Role};
use crate::webhooks::list::{keys_page, KeyList};

/// How many endpoints one query of the owner's list reads.
const PAGE: usize = 100;

/// Puts every endpoint of key `owner` in the staff list (`role` staff) or
/// takes it out (customer), with `ownerRole` to match; answers how many it
/// changed. An endpoint deleted meanwhile is passed over, never written back.
pub async fn follow_role(db: &Db, owner: Id, role: Role) -> Result<usize, DbError> {
    let list = KeyList::new("GSI4", owner_list(owner));
    let mut after = None;
    let mut moved = 0;
    loop {
        let page = keys_page(db, &list, PAGE, after).await?;
        for key in page.items {
            let update = db
                .client()
                .update_item()
                .table_name(db.table())
                .set_key(Some(key))
                .condition_expression("attribute_exists(PK)")
                .expression_attribute_names("#role", "ownerRole")
                .expression_attribute_names("#staff", "GSI2PK")
                .expression_attribute_values(":role", s(role.as_str()));
            let update = match role {
                Role::Staff => update
                    .update_expression("SET #role = :role, #staff = :staff")
                    .expression_attribute_values(":staff", s(STAFF)),
                Role::Customer => update.update_expression("SET #role = :role REMOVE #staff"),
            };
            match update.send().await {
                Ok(_) => moved += 1,
                Err(e)
                    if e.as_service_error()
                        .is_some_and(|e| e.is_conditional_check_failed_exception()) => {}
                Err(e) => return Err(classify(db.table(), e)),
            }
        }
        match page.next_after {
            Some(next) => after = Some(next),
            None => return Ok(moved),
        }
    }
}
