//! `petstore-admin keys ...`: the arguments of the key commands, parsed into
//! a [`Keys`] command before any AWS call.

use super::Cli;
use clap::error::ErrorKind;
use clap::{Args, CommandFactory, Subcommand};
use petstore::ratelimit::keys::{parse_key_id, NewApiKey};
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
        /// Do it: the key's old secret stops working at once.
        #[arg(long)]
        yes: bool,
    },
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
    /// A name to tell the key by.
    #[arg(long)]
    name: Option<String>,
}

/// A key command, parsed.
#[derive(Debug, PartialEq)]
pub enum Keys {
    Create(NewApiKey),
    List,
    Rotate(Id, Confirmed),
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
            let limits = create.per_minute.zip(create.per_day);
            // Checked here, so a bad request fails before any AWS call.
            let new = NewApiKey::new(create.plan, limits, create.name)
                .and_then(|new| match create.max_open_orders {
                    Some(cap) => new.with_max_open_orders(cap),
                    None => Ok(new),
                })
                .and_then(|new| match create.max_webhooks {
                    Some(cap) => new.with_max_webhooks(cap),
                    None => Ok(new),
                })
                .map_err(|e| create_usage_error(e.to_string()))?;
            Keys::Create(new.with_role(create.role))
        }
        KeysCommand::List => Keys::List,
        KeysCommand::Rotate { id, yes } => Keys::Rotate(id, yes.into()),
        KeysCommand::Revoke { id, yes } => Keys::Revoke(id, yes.into()),
        KeysCommand::Unban { id } => Keys::Unban(id),
    })
}

/// `problem` as clap reports a usage error, with `keys create`'s usage.
fn create_usage_error(problem: String) -> clap::Error {
    let mut cli = Cli::command();
    cli.build();
    match cli
        .find_subcommand_mut("keys")
        .and_then(|keys| keys.find_subcommand_mut("create"))
    {
        Some(create) => create.error(ErrorKind::ArgumentConflict, problem),
        None => cli.error(ErrorKind::ArgumentConflict, problem),
    }
}

fn key_id(raw: &str) -> Result<Id, String> {
    parse_key_id(raw).ok_or_else(|| format!("`{raw}` is not a key id"))
}

fn plan(raw: &str) -> Result<Plan, String> {
    Plan::parse(raw)
        .ok_or_else(|| format!("unknown plan `{raw}` (free, pro, business, enterprise)"))
}

fn role(raw: &str) -> Result<Role, String> {
    Role::parse(raw).map_err(|e| e.to_string())
}
