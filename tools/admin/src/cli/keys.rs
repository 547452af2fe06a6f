//! `petstore-admin keys ...`: the arguments of the key commands, parsed into
//! a [`Keys`] command before any AWS call.

use super::Cli;
use clap::error::ErrorKind;
use clap::{Args, CommandFactory, Subcommand};
use petstore::ratelimit::keys::{parse_key_id, KeepOldFor, KeyChange, NewApiKey};
use petstore::ratelimit::Plan;
use petstore::records::{Id, Role};

#[derive(Subcommand)]
pub enum KeysCommand {
    /// Create a key; prints it (the only time it is shown) with its record.
    Create(CreateArgs),
    /// Every key's record.
    List,
    /// A new secret for the same key identity; prints it. Without --yes,
    /// shows the key's record and changes nothing.
    Rotate {
        #[arg(value_parser = key_id)]
        id: Id,
        /// Keep the old secret working beside the new one for DURATION (30m,
        /// 2h, 7d; at most 7d), so callers can switch without an outage. A
        /// secret an earlier rotation kept ends at once.
        #[arg(long, value_name = "DURATION", value_parser = keep_old_for)]
        keep_old_for: Option<KeepOldFor>,
        /// Do it: the key's old secret stops working at once (or at the end
        /// of --keep-old-for).
        #[arg(long)]
        yes: bool,
    },
    /// Change a key identity's plan, role or limits in place: the same id
    /// and secret, its orders, endpoints and counters kept; every function
    /// instance follows within its key cache's time (30 s).
    Update(UpdateArgs),
    /// Revoke a key for good. Without --yes, shows the key's record and
    /// changes nothing.
    Revoke {
        #[arg(value_parser = key_id)]
        id: Id,
        /// Do it: the key stops working at once, for good.
        #[arg(long)]
        yes: bool,
    },
    /// Lift a key's ban.
    Unban {
        #[arg(value_parser = key_id)]
        id: Id,
    },
}

#[derive(Args)]
pub struct CreateArgs {
    /// The key's plan: free, pro, business, or enterprise (limits of its own).
    #[arg(long, default_value = "free", value_parser = plan)]
    plan: Plan,
    /// Who the key is: customer or staff.
    #[arg(long, default_value = "customer", value_parser = role)]
    role: Role,
    #[command(flatten)]
    own: OwnLimits,
    /// A name to tell the key by.
    #[arg(long)]
    name: Option<String>,
}

#[derive(Args)]
pub struct UpdateArgs {
    #[arg(value_parser = key_id)]
    id: Id,
    /// The new plan: free, pro, business, or enterprise.
    #[arg(long, value_parser = plan)]
    plan: Option<Plan>,
    /// The new role: customer or staff.
    #[arg(long, value_parser = role)]
    role: Option<Role>,
    #[command(flatten)]
    own: OwnLimits,
}

/// An enterprise key's own limits and caps.
#[derive(Args)]
pub struct OwnLimits {
    /// Requests per minute (enterprise only, with --per-day).
    #[arg(long, value_name = "N", requires = "per_day")]
    per_minute: Option<u64>,
    /// Requests per day (enterprise only, with --per-minute).
    #[arg(long, value_name = "N", requires = "per_minute")]
    per_day: Option<u64>,
    /// The most incomplete orders the key may hold at once (enterprise only;
    /// the other plans' are the plan's; default 1,000).
    #[arg(long, value_name = "N")]
    max_open_orders: Option<u32>,
    /// The most webhook endpoints the key may have (enterprise only; the
    /// other plans' are the plan's; default 100).
    #[arg(long, value_name = "N")]
    max_webhooks: Option<u32>,
}

/// A key command, parsed.
#[derive(Debug, PartialEq)]
pub enum Keys {
    Create(NewApiKey),
    List,
    Rotate(Id, Option<KeepOldFor>, Confirmed),
    Update(Id, KeyChange),
    Revoke(Id, Confirmed),
    Unban(Id),
}

/// Whether a command that cannot be undone was confirmed (`--yes`): if not,
/// it shows the key it would change, so a mistyped id harms nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmed {
    Yes,
    No,
}

impl From<bool> for Confirmed {
    fn from(yes: bool) -> Confirmed {
        if yes {
            Confirmed::Yes
        } else {
            Confirmed::No
        }
    }
}

/// `command` as run. A key request that cannot be made (limits on a plan
/// that has its own) fails here, as a usage error.
pub fn parsed(command: KeysCommand) -> Result<Keys, clap::Error> {
    Ok(match command {
        KeysCommand::Create(create) => {
            let own = create.own;
            let limits = own.per_minute.zip(own.per_day);
            // Checked here, so a bad request fails before any AWS call.
            let new = NewApiKey::new(create.plan, limits, create.name)
                .and_then(|new| match own.max_open_orders {
                    Some(cap) => new.with_max_open_orders(cap),
                    None => Ok(new),
                })
                .and_then(|new| match own.max_webhooks {
                    Some(cap) => new.with_max_webhooks(cap),
                    None => Ok(new),
                })
                .map_err(|e| usage_error("create", e.to_string()))?;
            Keys::Create(new.with_role(create.role))
        }
        KeysCommand::List => Keys::List,
        KeysCommand::Rotate {
            id,
            keep_old_for,
            yes,
        } => Keys::Rotate(id, keep_old_for, yes.into()),
        KeysCommand::Update(update) => {
            let change = KeyChange {
                plan: update.plan,
                role: update.role,
                limits: update.own.per_minute.zip(update.own.per_day),
                max_open_orders: update.own.max_open_orders,
                max_webhooks: update.own.max_webhooks,
            };
            if change.is_empty() {
                let problem = "say what to change: --plan, --role, --per-minute and --per-day, --max-open-orders or --max-webhooks";
                return Err(usage_error("update", problem.to_string()));
            }
            Keys::Update(update.id, change)
        }
        KeysCommand::Revoke { id, yes } => Keys::Revoke(id, yes.into()),
        KeysCommand::Unban { id } => Keys::Unban(id),
    })
}

/// `problem` as clap reports a usage error, with `keys <command>`'s usage.
fn usage_error(command: &str, problem: String) -> clap::Error {
    let mut cli = Cli::command();
    cli.build();
    match cli
        .find_subcommand_mut("keys")
        .and_then(|keys| keys.find_subcommand_mut(command))
    {
        Some(create) => create.error(ErrorKind::ArgumentConflict, problem),
        None => cli.error(ErrorKind::ArgumentConflict, problem),
    }
}

fn key_id(raw: &str) -> Result<Id, String> {
    parse_key_id(raw).ok_or_else(|| format!("`{raw}` is not a key id"))
}

fn keep_old_for(raw: &str) -> Result<KeepOldFor, String> {
    KeepOldFor::parse(raw).map_err(|e| e.to_string())
}

fn plan(raw: &str) -> Result<Plan, String> {
    Plan::parse(raw)
        .ok_or_else(|| format!("unknown plan `{raw}` (free, pro, business, enterprise)"))
}

fn role(raw: &str) -> Result<Role, String> {
    Role::parse(raw).map_err(|e| e.to_string())
}
