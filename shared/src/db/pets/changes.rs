//! A pet's changes after its creation: its record replaced, or the pet
//! deleted, each written to the form its stock is in ([`super::stock`]).

use super::super::expr::Expr;
use super::super::write::{Step, Write};
use super::super::{s, Changes, DbError};
use super::{category_partition, key, status_list_key, stock, PetCheck};
use crate::records::{Id, NewPet, Pet};
use crate::rules::{self, Guard};

impl Changes {
    /// Replaces a pet's fields with what `change` makes of the current pet.
    ///
    /// The status move is checked against the current status, and the write
    /// rests on that status and on the category whose counts it moves.
    pub async fn update_pet(
        &self,
        id: Id,
        change: impl Fn(&Pet) -> NewPet,
    ) -> Result<Pet, DbError> {
        let change = &change;
        self.run("update pet", move || async move {
            let current = self.existing_pet(id).await?;
            self.check_precondition("pet", id, &current.pet)?;
            let target = change(&current.pet);
            let moves_from = rules::check_transition(current.pet.status, target.status)?;
            let updated = target.into_pet(id);
            if updated == current.pet {
                return Ok(Step::Answer(updated));
            }
            let (old, new) = (current.pet.category_id, updated.category_id);
            let update = self
                .as_read(current.pet_item_expr(), &current.pet)?
                .when(&moves_from)
                .when(&Guard::CategoryIs(old))
                .replace(&updated)?
                .set(
                    "GSI2PK",
                    s(status_list_key(&self.shards, id, updated.status)),
                )
                .set("GSI3PK", s(category_partition(new)))
                .update(&self.table, key(id))?;
            let mut write = Write::new().checked(PetCheck::AsRead, update);
            if current.stock_item && updated.status != current.pet.status {
                let status = Expr::new()
                    .exists()
                    .when(&moves_from)
                    .set("status", s(updated.status.as_str()))
                    .update(&self.table, stock::stock_key(id))?;
                write = write.checked(PetCheck::AsRead, status);
            }
            if new != old {
                write = write
                    .checked(PetCheck::CategoryExists(new), self.pet_joins(new)?)
                    .unchecked(self.pet_leaves(old)?);
            }
            Ok(Step::Write(write, updated))
        })
        .await
    }

    /// Deletes a pet with no incomplete orders, and its inventory entry.
    pub async fn delete_pet(&self, id: Id) -> Result<(), DbError> {
        self.run("delete pet", move || async move {
            let current = self.existing_pet(id).await?;
            self.check_precondition("pet", id, &current.pet)?;
            let unordered = rules::delete_pet(current.state())?;
            let category = current.pet.category_id;
            let pet = self
                .as_read(current.pet_item_expr(), &current.pet)?
                .when(&Guard::CategoryIs(category));
            // Without a stock item, the pet item holds what `unordered` reads.
            let pet = if current.stock_item {
                pet
            } else {
                pet.when(&unordered)
            };
            let mut write = Write::new()
                .checked(PetCheck::AsRead, pet.delete(&self.table, key(id))?)
                .unchecked(self.pet_leaves(category)?);
            if current.stock_item {
                let stock = Expr::new().exists().when(&unordered);
                write = write.checked(
                    PetCheck::AsRead,
                    stock.delete(&self.table, stock::stock_key(id))?,
                );
            }
            Ok(Step::Write(write, ()))
        })
        .await
    }
}
