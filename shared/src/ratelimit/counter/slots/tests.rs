use super::*;

/// An item as a count of `count` requests in the minute `gap` minutes
/// before `m` leaves it (every family's slot of that minute).
fn counted_before(m: UnixSeconds, gap: i64, count: i128) -> Item {
    let j = minute_number(m) - gap;
    MODULI
        .iter()
        .map(|p| {
            (
                minute_slot(*p, j.rem_euclid(*p)),
                n(i128::from(j) * SPAN + count),
            )
        })
        .collect()
}

#[test]
fn a_slot_counts_its_own_minute_and_a_stale_one_nothing() {
    let m = 1_893_456_060;
    let count_in = |gap| MinuteSlots::read(&counted_before(m, gap, 5)).count_in(m);
    assert_eq!(count_in(0), Some(5), "this minute's count");
    assert_eq!(
        count_in(1),
        Some(0),
        "every family's name absent: a new minute"
    );
    assert_eq!(count_in(7), Some(0), "family 7 stale, the others absent");
    assert_eq!(count_in(693), Some(0), "only family 8 absent");
    assert_eq!(count_in(5_544), None, "every family stale: a reset");
    assert_eq!(MinuteSlots::read(&Item::new()).count_in(m), Some(0));
}

/// The text is built once a minute and then reused: each minute's
/// names its own slots, whichever was built before it.
#[test]
fn each_minutes_expression_names_that_minutes_slots() {
    let limits = Limits::new(60, 1_000);
    let m = 1_893_456_060;
    for (minute, count) in [(m, Count::Any), (m + 60, Count::Any), (m, Count::Reset)] {
        let k = minute_number(minute);
        let again = count.expression(limits, minute + 1, minute, minute + 86_400);
        let fresh = count.build_text(k);
        assert_eq!(again.update, fresh.update);
        assert_eq!(again.condition, fresh.condition);
        let slot = minute_slot(7, k.rem_euclid(7));
        assert!(
            again.update.starts_with(&format!("SET {slot} = ")),
            "{}",
            again.update
        );
    }
    let next = Count::Any.expression(limits, m + 61, m + 60, m + 86_400);
    let this = Count::Any.expression(limits, m + 1, m, m + 86_400);
    assert_ne!(next.update, this.update);
}

#[test]
fn a_slot_is_read_under_its_exact_name_only() {
    let m = 1_893_456_060;
    let k = minute_number(m);
    let mut item = counted_before(m, 0, 5);
    let read = MinuteSlots::read(&item);
    assert!(read.0.iter().all(|slot| *slot == Some((k, 5))), "{read:?}");
    // Names minute_slot never writes, holding this minute's count: not slots.
    let value = n(i128::from(k) * SPAN + 9);
    for name in [
        "m07_0", "m7_07", "m+7_0", "m7_7", "m5_0", "m7_", "x7_0", "m7_0_",
    ] {
        item.insert(name.to_string(), value.clone());
    }
    assert_eq!(MinuteSlots::read(&item), read);
    // Of two slots of a family, the lower residue's.
    let family_7: Vec<i64> = (0..7)
        .filter(|r| item.contains_key(&minute_slot(7, *r)))
        .collect();
    assert_eq!(family_7.len(), 1);
    let lower = (family_7[0] + 6) % 7;
    item.insert(minute_slot(7, lower), n(i128::from(k) * SPAN + 3));
    let expected = if lower < family_7[0] { 3 } else { 5 };
    assert_eq!(MinuteSlots::read(&item).0[0], Some((k, expected)));
    item.insert(minute_slot(7, lower), AttributeValue::S("3".into()));
    assert_eq!(
        MinuteSlots::read(&item).0[0],
        Some((k, 5)),
        "not a number: absent"
    );
}

/// The families' moduli are pairwise coprime, so all are stale together
/// only after a multiple of their product.
#[test]
fn the_families_are_stale_together_only_after_a_multiple_of_their_product() {
    let product: i64 = MODULI.iter().product();
    assert_eq!(product, 5_544);
    let all_stale = |gap: i64| MODULI.iter().all(|p| gap % p == 0);
    let gaps: Vec<i64> = (1..=2 * product).filter(|gap| all_stale(*gap)).collect();
    assert_eq!(gaps, vec![product, 2 * product]);
}

/// The module's drawing, as the code does it: three counts in minute 1000,
/// then one in minute 1007.
#[test]
fn the_drawn_example_is_what_a_count_writes_and_reads() {
    let (j, k) = (1_000_i64, 1_007_i64);
    let names = |minute: i64| MODULI.map(|p| minute_slot(p, minute.rem_euclid(p)));
    assert_eq!(names(j), ["m7_6", "m8_0", "m9_1", "m11_10"]);
    assert_eq!(names(k), ["m7_6", "m8_7", "m9_8", "m11_6"]);
    let text = Count::Any.build_text(k);
    assert!(
        text.update
            .starts_with("SET m7_6 = if_not_exists(m7_6, :base) + :one, m8_7 = "),
        "{}",
        text.update
    );
    let removed: Vec<&str> = text
        .update
        .split(" REMOVE ")
        .nth(1)
        .unwrap_or_default()
        .split(", ")
        .collect();
    for name in ["m8_0", "m9_1", "m11_10"] {
        assert!(removed.contains(&name), "minute 1000's {name}: {removed:?}");
    }
    assert!(!removed.contains(&"m7_6"));
    assert_eq!(
        removed.iter().filter(|name| name.starts_with('m')).count(),
        31
    );
    assert_eq!(removed.len(), 31 + 3, "and the three days before");
    // After the count: family 7 kept minute 1000's value (+1), the others
    // counted minute 1007 from 0.
    let at = |minute: i64, count: i128| n(i128::from(minute) * SPAN + count);
    let item: Item = [
        ("m7_6", at(j, 4)),
        ("m8_7", at(k, 1)),
        ("m9_8", at(k, 1)),
        ("m11_6", at(k, 1)),
    ]
    .map(|(name, value)| (name.to_string(), value))
    .into_iter()
    .collect();
    let slots = MinuteSlots::read(&item);
    let m = k * RateWindow::Minute.seconds();
    assert_eq!(slots.count_in(m), Some(1));
    // Family 7 alone says nothing of minute 1007; alone and stale, a reset.
    let stale: Item = [("m7_6".to_string(), at(j, 4))].into_iter().collect();
    assert_eq!(
        MinuteSlots::read(&stale).count_in(m),
        Some(0),
        "the others absent"
    );
    let every_stale: Item = MODULI
        .map(|p| (minute_slot(p, k.rem_euclid(p)), at(k - 5_544, 2)))
        .into_iter()
        .collect();
    assert_eq!(MinuteSlots::read(&every_stale).count_in(m), None);
}
