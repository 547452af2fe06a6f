//! Every list the service serves, read from the code and held to the
//! indexes (tests only). The lists are the data layer's and the webhooks'
//! (`Db::list_webhooks` reads endpoints through `db`), so the check sits
//! above both in the crate's layers rather than inside `db`, which must not
//! name what is built on it.

use crate::db::layout::Layout;
use crate::db::orders::OrderFilter;
use crate::db::pets::{PetFilter, INVENTORY_INDEX, PET_FIELDS};
use crate::db::query::Projection as Reads;
use crate::db::tables::INDEXES;
use crate::db::{categories, inventory};
use crate::records::{Id, OwnerScope, PetStatus};
use crate::webhooks::endpoints::LISTED_ENDPOINT_FIELDS;
use std::collections::BTreeSet;
use std::path::Path;

/// One list the service serves, for one filter it can be given.
struct List {
    /// The code that reads it, as [`index_reads_in_the_code`] names it.
    site: &'static str,
    name: String,
    /// The index, by its layout-independent name.
    index: &'static str,
    reads: &'static Reads,
}

/// Reads its fields from an index only when the layout's index holds
/// them all, else the keys there and the items from the table
/// (`webhooks::list::items_page`): no layout can make it lose one.
const FALLS_BACK: &str = "webhooks/list.rs: items_page";

/// Every list the service serves: the code that reads it, the index and
/// the attributes it reads there, for each filter it can be given. The
/// code's index reads are found in its source, not listed here: a read
/// whose site this leaves out fails
/// `every_index_read_in_the_code_is_a_list_checked_here`, by name.
fn lists() -> Vec<List> {
    let mut lists = Vec::new();
    let statuses = [None].into_iter().chain(PetStatus::ALL.map(Some));
    for status in statuses {
        for category_id in [None, Some(Id::clamped(1))] {
            let filter = PetFilter {
                status,
                category_id,
            };
            let query = filter.query(&PET_FIELDS);
            lists.push(List {
                site: "db/pets.rs: query",
                name: format!("pets {filter:?}"),
                index: query.index,
                reads: query.projection,
            });
        }
    }
    for scope in [OwnerScope::All, OwnerScope::OwnedBy(Id::clamped(7))] {
        for pet_id in [None, Some(Id::clamped(1))] {
            for complete in [None, Some(false)] {
                let filter = OrderFilter { pet_id, complete };
                let query = filter.query(scope);
                lists.push(List {
                    site: "db/orders/list.rs: query",
                    name: format!("orders {filter:?} {scope:?}"),
                    index: query.index,
                    reads: query.projection,
                });
            }
        }
    }
    let query = categories::list_query();
    lists.push(List {
        site: "db/categories.rs: list_query",
        name: "categories".into(),
        index: query.index,
        reads: query.projection,
    });
    lists.push(List {
        site: "db/inventory.rs: list_inventory",
        name: "inventory".into(),
        index: INVENTORY_INDEX,
        reads: &inventory::STOCK_FIELDS,
    });
    // `Db::list_webhooks`: staff's (every endpoint) and an owner's.
    for index in ["GSI1", "GSI4"] {
        lists.push(List {
            site: FALLS_BACK,
            name: format!("webhooks on {index}"),
            index,
            reads: &LISTED_ENDPOINT_FIELDS,
        });
    }
    lists
}

/// Every place in `shared/src` that reads an index for more than its
/// keys, as `<file>: <fn>`, found in the source: each `IndexQuery`
/// literal (run by `Db::query_page`), and each `Query` or `Scan` naming
/// an index (`.index_name(`) that does not run an `IndexQuery` and reads
/// anything but the keys every index holds (`PK`, `SK`, `id`: the
/// table's keys and every GSI's sort key). Test modules are left out.
fn index_reads_in_the_code() -> BTreeSet<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = vec![root.clone()];
    let mut sites = BTreeSet::new();
    while let Some(path) = paths.pop() {
        if path.is_dir() {
            let entries = std::fs::read_dir(&path).expect("shared/src is readable");
            paths.extend(entries.map(|entry| entry.expect("a directory entry").path()));
            continue;
        }
        // This file is the check itself, tests only.
        if path.extension().is_none_or(|ext| ext != "rs") || path.ends_with("index_reads_tests.rs")
        {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a source file is readable");
        let code = text
            .split("\n#[cfg(test)]\nmod ")
            .next()
            .unwrap_or_default();
        let file = path
            .strip_prefix(&root)
            .expect("under shared/src")
            .to_string_lossy()
            .replace('\\', "/");
        for (at, _) in code.match_indices("IndexQuery {") {
            if !code[..at].ends_with("struct ") {
                sites.insert(format!("{file}: {}", enclosing_fn(&code[..at])));
            }
        }
        for (at, _) in code.match_indices(".index_name(") {
            let from = code[..at].rfind([';', '{', '}']).map_or(0, |i| i + 1);
            let to = code[at..].find(';').map_or(code.len(), |i| at + i);
            let chain = &code[from..to];
            let reads = chain.contains(".query()") || chain.contains(".scan()");
            if reads && !chain.contains("query.index") && !reads_keys_only(chain) {
                sites.insert(format!("{file}: {}", enclosing_fn(&code[..at])));
            }
        }
    }
    sites
}

/// The name of the last `fn` that `code` opens.
fn enclosing_fn(code: &str) -> &str {
    let after = code.rfind("fn ").map_or("", |at| &code[at + 3..]);
    let end = after
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(after.len());
    &after[..end]
}

/// Whether the call `chain` projects a literal list of key attributes.
fn reads_keys_only(chain: &str) -> bool {
    const PROJECTS: &str = ".projection_expression(\"";
    let Some(at) = chain.find(PROJECTS) else {
        return false;
    };
    let literal = chain[at + PROJECTS.len()..]
        .split('"')
        .next()
        .unwrap_or_default();
    literal
        .split(',')
        .map(|attribute| attribute.trim().trim_start_matches('#'))
        .all(|attribute| ["PK", "SK", "id"].contains(&attribute))
}

#[test]
fn every_index_read_in_the_code_is_a_list_checked_here() {
    let found = index_reads_in_the_code();
    let checked: BTreeSet<String> = lists().iter().map(|l| l.site.to_string()).collect();
    let unchecked: Vec<&String> = found.difference(&checked).collect();
    assert!(
        unchecked.is_empty(),
        "{unchecked:?} (in shared/src) read an index for more than its keys, and \
         lists() in shared/src/index_reads_tests.rs has no list of theirs: add each \
         of their lists there, for each filter it can be given, with this site, so \
         that the projection checks below cover it"
    );
    let gone: Vec<&String> = checked.difference(&found).collect();
    assert!(
        gone.is_empty(),
        "lists() names {gone:?}, which the source no longer has (renamed or moved?)"
    );
}

// The index keys and the table's are always projected: `id` is every
// GSI's sort key.
#[test]
fn every_list_s_index_projects_every_attribute_the_list_reads() {
    let lists = lists();
    for (index, _) in INDEXES {
        assert!(
            lists
                .iter()
                .any(|list| Layout::V2.index_of(list.index) == index),
            "no list reads {index}"
        );
    }
    for List {
        name, index, reads, ..
    } in lists
    {
        let readable = Layout::V2.readable(index, reads);
        let missing: Vec<&str> = reads
            .attributes()
            .filter(|a| !readable.attributes().any(|r| r == *a))
            .collect();
        let index = Layout::V2.index_of(index);
        assert!(
            missing.is_empty(),
            "the {name} list reads {index}, which does not project {missing:?}: the \
             inventory index (GSI5) names what it holds, in INDEXES \
             (shared/src/db/indexes.rs) and in template.yaml's DataTable \
             (tests/routes.rs holds the two equal). A deployed table cannot change an \
             index's projection in place: see docs/upgrade.md"
        );
    }
}

// Layout 1's lists (this release's code over the last release's indexes,
// until migration 0001's switch) read all they can from those indexes:
// they leave out only fields the last release's records never had
// (`lapsesAt`, and any field added since), never one of its own.
#[test]
fn layout_1_lists_leave_out_only_fields_newer_than_the_release() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../contract/released/openapi.yaml"
    );
    let released = std::fs::read_to_string(path).unwrap_or_default();
    let in_release = |attribute: &str| {
        released
            .lines()
            .any(|line| line.trim_start().strip_prefix(attribute) == Some(":"))
    };
    assert!(in_release("categoryId") && !in_release("lapsesAt"));
    // The webhook lists read what layout 1's indexes lack from the table.
    let lists = lists().into_iter().filter(|list| list.site != FALLS_BACK);
    for List {
        name, index, reads, ..
    } in lists
    {
        let readable = Layout::V1.readable(index, reads);
        let left_out: Vec<&str> = reads
            .attributes()
            .filter(|a| !readable.attributes().any(|r| r == *a))
            .filter(|a| in_release(a))
            .collect();
        assert!(
            left_out.is_empty(),
            "the {name} list leaves out {left_out:?} on layout 1, fields of the last release"
        );
    }
}
