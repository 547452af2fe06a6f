use super::*;
use crate::records::PetStatus;

#[test]
fn guards_become_one_condition_with_their_placeholders() {
    let sold_out = Guard::All(vec![Guard::StockIs(0), Guard::OpenOrdersIs(1)]);
    let mut expr = Expr::new()
        .exists()
        .when(&Guard::StatusIs(PetStatus::Pending))
        .when(&sold_out.negated());
    assert_eq!(
        expr.condition_expression().as_deref(),
        Some("attribute_exists(PK) AND #status = :v0 AND NOT (#stock = :v1 AND #openOrders = :v2)")
    );
    assert_eq!(expr.values().map(|v| v.len()), Some(3));
    assert_eq!(expr.names().map(|n| n.len()), Some(3));
}

#[test]
fn a_map_entry_has_a_placeholder_of_its_own_whatever_its_key() {
    let mut expr = Expr::new()
        .has("claims")
        .lacks_entry("claims", "m0f-3a")
        .set_entry("claims", "m0f-3a", s("claimed"))
        .set_if_absent("failingSince", s("now"));
    assert_eq!(
        expr.condition_expression().as_deref(),
        Some("attribute_exists(#claims) AND attribute_not_exists(#claims.#entry1)")
    );
    assert_eq!(
        expr.update_expression(),
        "SET #claims.#entry2 = :v0, #failingSince = if_not_exists(#failingSince, :v1)"
    );
    let names = expr.names().unwrap_or_default();
    assert_eq!(names.get("#entry1").map(String::as_str), Some("m0f-3a"));
    assert_eq!(names.get("#entry2").map(String::as_str), Some("m0f-3a"));
}

#[test]
fn changes_become_set_remove_and_add_clauses() {
    let expr = Expr::new()
        .set("name", s("Rex"))
        .adjust("stock", -2)
        .adjust("openOrders", 1)
        .remove("description")
        .add("petCount", -1);
    assert_eq!(
        expr.update_expression(),
        "SET #name = :v0, #stock = #stock - :v1, #openOrders = #openOrders + :v2 \
         REMOVE #description ADD #petCount :v3"
    );
    assert_eq!(expr.values.get(":v1"), Some(&n(2)));
    assert_eq!(expr.condition_expression(), None);
}

#[test]
fn a_replace_writes_every_field_but_the_id_and_removes_absent_ones(
) -> Result<(), Box<dyn std::error::Error>> {
    use crate::records::{Category, Description, Id, Name};
    let mut category = Category {
        id: Id::clamped(7),
        name: Name::parse("Dogs", "name")?,
        description: Some(Description::parse(
            "Loyal",
            &crate::records::NewCategory::DESCRIPTION,
        )?),
    };
    let expr = Expr::new().exists().replace(&category)?;
    assert_eq!(
        expr.update_expression(),
        "SET #name = :v0, #description = :v1"
    );
    assert_eq!(expr.values.get(":v1"), Some(&s("Loyal")));
    category.description = None;
    let expr = Expr::new().replace(&category)?;
    assert_eq!(
        expr.update_expression(),
        "SET #name = :v0 REMOVE #description"
    );
    Ok(())
}
