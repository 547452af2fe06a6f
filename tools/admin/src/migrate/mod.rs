//! `petstore-admin data migrate plan|run|status`: the numbered migrations
//! that take a deployed table from one stored layout to the next while the
//! service serves (docs/upgrade.md).
//!
//! A migration is its manifest, `migrations/NNNN-*.json`, which the layout
//! gate (`make layout-check`) reads too: its steps in order, each a
//! template state to deploy (`DataLayoutStep`, one index created or deleted
//! per update) or a backfill this tool runs. A template step's state is read
//! from the table itself (DescribeTable: the index it creates is `ACTIVE`
//! and backfilled, the one it deletes is gone); a backfill's from its
//! progress item in the table ([`progress`]). Nothing is remembered
//! elsewhere, so any operator's machine sees the same plan.

pub mod backfill;
pub mod cli;
pub mod progress;

use crate::scan::{BoxError, ProgressBar};
use aws_sdk_dynamodb::types::{GlobalSecondaryIndexDescription, IndexStatus};
use aws_sdk_dynamodb::Client;
use petstore::db::Changes;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Migration 0001's manifest: the last release's layout (1) to this one's (2).
pub const MANIFEST_0001: &str = include_str!("../../../../migrations/0001-holds-and-lapses.json");

/// A migration, as its manifest declares it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub id: u32,
    pub name: String,
    pub from_layout: u64,
    pub to_layout: u64,
    pub steps: Vec<StepSpec>,
}

/// One step of a migration.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum StepSpec {
    /// A template state (`DataLayoutStep`), deployed by the deploy script.
    Template {
        step: String,
        does: String,
        /// The index this state creates, if any.
        #[serde(default)]
        creates: Option<String>,
        /// The index this state deletes, if any.
        #[serde(default)]
        deletes: Option<String>,
    },
    /// A backfill this tool runs ([`backfill::Backfill`]).
    Backfill { name: String, does: String },
}

impl Manifest {
    /// Migration 0001, checked: every backfill it names is one this tool has.
    pub fn migration_0001() -> Result<Manifest, BoxError> {
        let manifest: Manifest = serde_json::from_str(MANIFEST_0001)?;
        for step in &manifest.steps {
            if let StepSpec::Backfill { name, .. } = step {
                backfill::Backfill::named(name)
                    .ok_or_else(|| format!("migration 0001 names an unknown backfill `{name}`"))?;
            }
        }
        Ok(manifest)
    }

    /// Every backfill of this migration, in order.
    pub fn backfills(&self) -> impl Iterator<Item = &str> {
        self.steps.iter().filter_map(|step| match step {
            StepSpec::Backfill { name, .. } => Some(name.as_str()),
            StepSpec::Template { .. } => None,
        })
    }
}

/// Where a step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    Done,
    /// An index being created, backfilled or deleted; a backfill started
    /// and not finished (interrupted, or running now).
    InProgress,
    Pending,
    /// A switch (the functions' `DATA_LAYOUT`): the table does not show it
    /// until a later step is in place.
    NotVisible,
}

/// A step and its state, as `plan` and `status` print them.
#[derive(Debug, Clone, Serialize)]
pub struct StepStatus {
    pub kind: &'static str,
    /// The template step (`DataLayoutStep`) or the backfill's name.
    pub step: String,
    pub does: String,
    pub state: State,
    /// A backfill's progress item, as stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<progress::Progress>,
    /// A done backfill with items to change written since it ran (pets
    /// created under layout 1, which release 1.0.0 may serve beside):
    /// `run` makes another pass. The switch does not wait for it: both
    /// layouts serve such items, and after the switch none is written.
    #[serde(rename = "leftOver", skip_serializing_if = "std::ops::Not::not")]
    pub left_over: bool,
}

/// Every step of `manifest` with its state on `table`.
pub async fn plan(
    client: &Client,
    table: &str,
    manifest: &Manifest,
) -> Result<Vec<StepStatus>, BoxError> {
    let described = client.describe_table().table_name(table).send().await?;
    let indexes: HashMap<String, &GlobalSecondaryIndexDescription> = described
        .table()
        .map(|t| t.global_secondary_indexes())
        .unwrap_or_default()
        .iter()
        .filter_map(|index| Some((index.index_name()?.to_string(), index)))
        .collect();
    let mut statuses = Vec::with_capacity(manifest.steps.len());
    for spec in &manifest.steps {
        statuses.push(match spec {
            StepSpec::Template {
                step,
                does,
                creates,
                deletes,
            } => StepStatus {
                kind: "template",
                step: step.clone(),
                does: does.clone(),
                state: template_state(&indexes, creates.as_deref(), deletes.as_deref()),
                progress: None,
                left_over: false,
            },
            StepSpec::Backfill { name, does } => {
                let progress = progress::read(client, table, manifest.id, name).await?;
                let state = progress.as_ref().map_or(State::Pending, |p| p.state());
                // Done, and yet an item to change appeared since: left over
                // for another pass (see `StepStatus::left_over`).
                let left_over = state == State::Done
                    && backfill::Backfill::named(name)
                        .ok_or_else(|| format!("no backfill is named `{name}`"))?
                        .left_over(client, table)
                        .await?;
                StepStatus {
                    kind: "backfill",
                    step: name.clone(),
                    does: does.clone(),
                    state,
                    progress,
                    left_over,
                }
            }
        });
    }
    // A switch is in place once any later step is.
    for i in (0..statuses.len()).rev() {
        let later = statuses[i + 1..]
            .iter()
            .any(|s| matches!(s.state, State::Done | State::InProgress));
        if statuses[i].state == State::NotVisible && later {
            statuses[i].state = State::Done;
        }
    }
    Ok(statuses)
}

/// A template step's state, from the indexes the table has.
fn template_state(
    indexes: &HashMap<String, &GlobalSecondaryIndexDescription>,
    creates: Option<&str>,
    deletes: Option<&str>,
) -> State {
    if let Some(created) = creates {
        return match indexes.get(created) {
            None => State::Pending,
            Some(index)
                if index.index_status() == Some(&IndexStatus::Active)
                    && !index.backfilling().unwrap_or(false) =>
            {
                State::Done
            }
            Some(_) => State::InProgress,
        };
    }
    if let Some(deleted) = deletes {
        return match indexes.get(deleted) {
            None => State::Done,
            Some(index) if index.index_status() == Some(&IndexStatus::Deleting) => {
                State::InProgress
            }
            Some(_) => State::Pending,
        };
    }
    State::NotVisible
}

/// What `run` may do: the backfills still to run (or with items left over),
/// in order, once every template step before each is in place; or the step
/// to deploy first.
pub fn runnable(statuses: &[StepStatus]) -> Result<Vec<String>, String> {
    let mut pending = Vec::new();
    let last_backfill = statuses.iter().rposition(|s| s.kind == "backfill");
    for status in &statuses[..last_backfill.map_or(0, |i| i + 1)] {
        match (status.kind, status.state) {
            ("template", State::Done) => {}
            ("backfill", State::Done) if !status.left_over => {}
            ("template", _) => {
                return Err(format!(
                    "template step {} is not in place ({}): deploy it first \
                     (DataLayoutStep={}), then run again",
                    status.step, status.does, status.step
                ))
            }
            _ => pending.push(status.step.clone()),
        }
    }
    Ok(pending)
}

/// Runs every pending backfill of `manifest` (or `only` that one) on
/// `changes`' table, in order, once the template steps before it are in
/// place (else refuses, naming the step to deploy); stops after a backfill
/// that was stopped.
pub async fn run(
    changes: &Changes,
    manifest: &Manifest,
    only: Option<&str>,
    options: &backfill::Options,
    bar: &ProgressBar,
) -> Result<Vec<backfill::Outcome>, BoxError> {
    if let Some(name) = only.filter(|name| !manifest.backfills().any(|b| b == *name)) {
        return Err(format!("migration {} has no backfill `{name}`", manifest.id).into());
    }
    let (client, table) = (changes.client(), changes.table());
    let pending = runnable(&plan(client, table, manifest).await?)?;
    let mut outcomes = Vec::new();
    for name in pending
        .into_iter()
        .filter(|name| only.is_none_or(|o| o == name))
    {
        let backfill = backfill::Backfill::named(&name)
            .ok_or_else(|| format!("no backfill is named `{name}`"))?;
        // A backfill done before, with items left over, starts a new pass.
        let found = progress::read(client, table, manifest.id, &name)
            .await?
            .filter(|p| p.state() != State::Done);
        bar.reset();
        bar.set_message(name.clone());
        let outcome =
            backfill::run(backfill, changes, manifest.id, found.as_ref(), options, bar).await?;
        let stopped = outcome.stopped;
        outcomes.push(outcome);
        if stopped {
            break;
        }
    }
    bar.finish_and_clear();
    Ok(outcomes)
}

/// Whether every backfill of the migration is done (`status --require-done`).
pub fn backfills_done(statuses: &[StepStatus]) -> bool {
    statuses
        .iter()
        .filter(|s| s.kind == "backfill")
        .all(|s| s.state == State::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(kind: &'static str, step: &str, state: State) -> StepStatus {
        StepStatus {
            kind,
            step: step.into(),
            does: String::new(),
            state,
            progress: None,
            left_over: false,
        }
    }

    #[test]
    fn migration_0001_reads_and_names_its_backfills_in_order() -> Result<(), BoxError> {
        let manifest = Manifest::migration_0001()?;
        assert_eq!((manifest.from_layout, manifest.to_layout), (1, 2));
        assert_eq!(
            manifest.backfills().collect::<Vec<_>>(),
            ["holds", "name-claims", "stock-items"]
        );
        // Every backfill comes before the switch (template step 5).
        let switch = manifest
            .steps
            .iter()
            .position(|s| matches!(s, StepSpec::Template { step, .. } if step == "5"));
        let stock_items = manifest
            .steps
            .iter()
            .position(|s| matches!(s, StepSpec::Backfill { name, .. } if name == "stock-items"));
        assert!(stock_items < switch && stock_items.is_some());
        Ok(())
    }

    #[test]
    fn a_backfill_runs_only_after_the_template_steps_before_it() {
        let steps = |fourth: State, holds: State| {
            vec![
                status("template", "3", State::Done),
                status("template", "4", fourth),
                status("backfill", "holds", holds),
                status("backfill", "name-claims", State::Pending),
                status("template", "5", State::NotVisible),
            ]
        };
        let refused = runnable(&steps(State::InProgress, State::Pending));
        assert!(refused.is_err_and(|e| e.contains("DataLayoutStep=4")));
        assert_eq!(
            runnable(&steps(State::Done, State::InProgress)),
            Ok(vec!["holds".to_string(), "name-claims".to_string()])
        );
        assert_eq!(
            runnable(&steps(State::Done, State::Done)),
            Ok(vec!["name-claims".to_string()])
        );
        assert!(!backfills_done(&steps(State::Done, State::Done)));
    }
}
