//! Creating the data table, for `make run` and the tests (production tables
//! come from `template.yaml`, with the same schema and TTL attribute).

pub use super::indexes::{Index, Projects, INDEXES, RELEASED_INDEXES};
use super::layout::Layout;
use super::{classify, DbError};
use aws_sdk_dynamodb::operation::create_table::builders::CreateTableFluentBuilder;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType, TableStatus,
    TimeToLiveSpecification,
};
use aws_sdk_dynamodb::Client;
use std::time::{Duration, Instant};

pub(crate) fn attribute(
    name: &str,
    kind: ScalarAttributeType,
) -> Result<AttributeDefinition, DbError> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(kind)
        .build()
        .map_err(DbError::internal)
}

pub(crate) fn key(name: &str, kind: KeyType) -> Result<KeySchemaElement, DbError> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(kind)
        .build()
        .map_err(DbError::internal)
}

/// Creates the data table unless it exists already, with its stream of new
/// and old images, as in `template.yaml` (the `events` function reads it),
/// in the current layout.
pub async fn create_data_table(client: &Client, table: &str) -> Result<(), DbError> {
    create_data_table_in(client, table, Layout::V2).await
}

/// Creates the data table in `layout` unless it exists already: layout 1
/// for the upgrade tests, which load the last release's items into it.
pub async fn create_data_table_in(
    client: &Client,
    table: &str,
    layout: Layout,
) -> Result<(), DbError> {
    create_data_table_with(client, table, layout.indexes()).await
}

/// Creates the data table with `indexes` unless it exists already: any
/// layout, or a migration's state between two (the upgrade tests' table
/// once migration 0001's new indexes are created beside the old ones).
pub async fn create_data_table_with(
    client: &Client,
    table: &str,
    indexes: &[Index],
) -> Result<(), DbError> {
    if table_exists(client, table).await? {
        return Ok(());
    }
    let stream = StreamSpecification::builder()
        .stream_enabled(true)
        .stream_view_type(StreamViewType::NewAndOldImages)
        .build()
        .map_err(DbError::internal)?;
    let mut request = client
        .create_table()
        .table_name(table)
        .billing_mode(BillingMode::PayPerRequest)
        .stream_specification(stream)
        .key_schema(key("PK", KeyType::Hash)?)
        .key_schema(key("SK", KeyType::Range)?)
        .attribute_definitions(attribute("PK", ScalarAttributeType::S)?)
        .attribute_definitions(attribute("SK", ScalarAttributeType::S)?)
        .attribute_definitions(attribute("id", ScalarAttributeType::N)?);
    let mut keys = std::collections::BTreeSet::new();
    for (index, projects) in indexes {
        let pk = format!("{}PK", Layout::list_of(index));
        if keys.insert(pk.clone()) {
            request = request.attribute_definitions(attribute(&pk, ScalarAttributeType::S)?);
        }
        request = request.global_secondary_indexes(index_definition(index, *projects)?);
    }
    create_expiring(request, client, table).await
}

/// The definition of index `index` projecting `projects`, keyed as its
/// list's ([`Layout::list_of`]): for a new table, and for the upgrade tests'
/// UpdateTable that adds a layout's index to an existing one.
pub fn index_definition(index: &str, projects: Projects) -> Result<GlobalSecondaryIndex, DbError> {
    let pk = format!("{}PK", Layout::list_of(index));
    let projection = match projects {
        Projects::All => Projection::builder().projection_type(ProjectionType::All),
        Projects::Only(attributes) => Projection::builder()
            .projection_type(ProjectionType::Include)
            .set_non_key_attributes(Some(attributes.iter().map(|a| a.to_string()).collect())),
    };
    GlobalSecondaryIndex::builder()
        .index_name(index)
        .key_schema(key(&pk, KeyType::Hash)?)
        .key_schema(key("id", KeyType::Range)?)
        .projection(projection.build())
        .build()
        .map_err(DbError::internal)
}

/// Sends a table's creation, waits until it is `ACTIVE`, and turns on its
/// TTL on [`TTL_ATTRIBUTE`]. Several processes may start on one fresh
/// DynamoDB at once (`make run` twice, the multi-process tests): the one
/// whose creation DynamoDB accepts sets the TTL; the others, refused with
/// `ResourceInUseException`, wait until the table is `ACTIVE` and leave it
/// as it is.
pub(crate) async fn create_expiring(
    request: CreateTableFluentBuilder,
    client: &Client,
    table: &str,
) -> Result<(), DbError> {
    match request.send().await {
        Ok(_) => {}
        Err(err)
            if err
                .as_service_error()
                .is_some_and(|e| e.is_resource_in_use_exception()) =>
        {
            return wait_until_active(client, table).await;
        }
        Err(err) => return Err(classify(table, err)),
    }
    wait_until_active(client, table).await?;
    expire_on(client, table, TTL_ATTRIBUTE).await
}

/// How long a start waits for a table another process is creating: DynamoDB
/// Local makes one at once, DynamoDB in seconds.
const CREATION_PATIENCE: Duration = Duration::from_secs(120);

/// Waits until `table` is `ACTIVE` (no update of it is accepted before).
async fn wait_until_active(client: &Client, table: &str) -> Result<(), DbError> {
    let started = Instant::now();
    loop {
        let out = client.describe_table().table_name(table).send().await;
        let status = out
            .map_err(|e| classify(table, e))?
            .table
            .and_then(|t| t.table_status);
        if status == Some(TableStatus::Active) {
            return Ok(());
        }
        if started.elapsed() > CREATION_PATIENCE {
            return Err(DbError::internal(format!(
                "table {table} is still {status:?} after {CREATION_PATIENCE:?}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The TTL attribute of both tables: idempotency records and counters expire by it.
const TTL_ATTRIBUTE: &str = "expiresAt";

/// Turns on TTL for `table` on `attribute`.
async fn expire_on(client: &Client, table: &str, attribute: &str) -> Result<(), DbError> {
    let ttl = TimeToLiveSpecification::builder()
        .attribute_name(attribute)
        .enabled(true)
        .build()
        .map_err(DbError::internal)?;
    client
        .update_time_to_live()
        .table_name(table)
        .time_to_live_specification(ttl)
        .send()
        .await
        .map_err(|e| classify(table, e))?;
    Ok(())
}

/// Whether `table` exists; one another process is creating is waited for
/// until it is `ACTIVE`, so whoever finds it can use it at once.
pub async fn table_exists(client: &Client, table: &str) -> Result<bool, DbError> {
    match client.describe_table().table_name(table).send().await {
        Ok(out) => match out.table.and_then(|t| t.table_status) {
            Some(TableStatus::Active) => Ok(true),
            _ => wait_until_active(client, table).await.map(|()| true),
        },
        Err(err)
            if err
                .as_service_error()
                .is_some_and(|e| e.is_resource_not_found_exception()) =>
        {
            Ok(false)
        }
        Err(err) => Err(classify(table, err)),
    }
}

#[cfg(test)]
mod tests {
    use super::INDEXES;
    use crate::db::layout::Layout;
    use crate::db::orders::OrderFilter;
    use crate::db::pets::{PetFilter, INVENTORY_INDEX, PET_FIELDS};
    use crate::db::query::Projection as Reads;
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
            if path.extension().is_none_or(|ext| ext != "rs") {
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
             lists() in shared/src/db/tables.rs's tests has no list of theirs: add each \
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
}
