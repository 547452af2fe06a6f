//! The command line, parsed by `clap` (derive) into a [`Command`]: a module
//! per command group (`keys`, `data`), each with its arguments and what they
//! parse to. A mistake is an error with the usage, before any AWS call.

pub mod data;
pub mod keys;

use clap::{Parser, Subcommand};
use data::{Data, DataCommand};
use keys::{Keys, KeysCommand};

/// API keys of the pet store (create, list, rotate, revoke, unban), and the
/// data table's upkeep.
#[derive(Parser)]
#[command(name = "petstore-admin")]
pub struct Cli {
    #[command(subcommand)]
    group: Group,
}

#[derive(Subcommand)]
enum Group {
    /// Manage API keys (JSON lines on stdout, one per key).
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Upkeep of the data table (a JSON line on stdout).
    #[command(subcommand)]
    Data(DataCommand),
}

/// A command, parsed.
#[derive(Debug, PartialEq)]
pub enum Command {
    Keys(Keys),
    Data(Data),
}

/// `args` without the program name. A key request that cannot be made
/// (limits on a plan that has its own) fails here too, as a usage error.
pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Command, clap::Error> {
    let program = std::iter::once("petstore-admin".to_string());
    Ok(match Cli::try_parse_from(program.chain(args))?.group {
        Group::Keys(command) => Command::Keys(keys::parsed(command)?),
        Group::Data(command) => Command::Data(data::parsed(command)),
    })
}

#[cfg(test)]
mod tests {
    use super::keys::Confirmed;
    use super::*;
    use petstore::ratelimit::keys::{KeepOldFor, KeyChange, NewApiKey};
    use petstore::ratelimit::Plan;
    use petstore::records::{Id, Role};
    use petstore_admin::restore;
    use std::path::PathBuf;

    /// The command `line` parses to, or the error as the operator sees it.
    fn parse_line(line: &str) -> Result<Command, String> {
        parse(line.split_whitespace().map(str::to_string)).map_err(|e| e.render().to_string())
    }

    fn new_key(plan: Plan, limits: Option<(u64, u64)>, name: Option<&str>, role: Role) -> Command {
        let new = NewApiKey::new(plan, limits, name.map(str::to_string));
        Command::Keys(Keys::Create(
            new.expect("a valid key request").with_role(role),
        ))
    }

    fn id(raw: u64) -> Id {
        Id::new(raw).expect("a valid id")
    }

    /// The error `line` gives, which must be a usage error (exit status 2).
    fn refused(line: &str) -> String {
        match parse(line.split_whitespace().map(str::to_string)) {
            Ok(command) => panic!("`{line}` parsed to {command:?}"),
            Err(e) => {
                assert_eq!(e.exit_code(), 2, "`{line}`: {e}");
                e.render().to_string()
            }
        }
    }

    #[test]
    fn commands_parse() {
        assert_eq!(
            parse_line("keys create --plan pro --name ci"),
            Ok(new_key(Plan::Pro, None, Some("ci"), Role::Customer))
        );
        assert_eq!(
            parse_line("keys create --plan enterprise --per-minute 10 --per-day 100"),
            Ok(new_key(
                Plan::Enterprise,
                Some((10, 100)),
                None,
                Role::Customer
            ))
        );
        assert_eq!(
            parse_line("keys create"),
            Ok(new_key(Plan::Free, None, None, Role::Customer))
        );
        let capped = NewApiKey::new(Plan::Enterprise, Some((10, 100)), None)
            .and_then(|new| new.with_max_open_orders(5_000))
            .map(|new| Command::Keys(Keys::Create(new.with_role(Role::Customer))));
        assert_eq!(
            parse_line(
                "keys create --plan enterprise --per-minute 10 --per-day 100 --max-open-orders 5000"
            ),
            capped.map_err(|e| e.to_string())
        );
        assert!(refused("keys create --plan pro --max-open-orders 5")
            .contains("only enterprise keys carry their own limits"));
        assert_eq!(parse_line("keys list"), Ok(Command::Keys(Keys::List)));
        assert_eq!(
            parse_line("keys rotate 42"),
            Ok(Command::Keys(Keys::Rotate(id(42), None, Confirmed::No)))
        );
        assert_eq!(
            parse_line("keys rotate 42 --yes"),
            Ok(Command::Keys(Keys::Rotate(id(42), None, Confirmed::Yes)))
        );
        for keep in ["30m", "2h", "7d"] {
            let kept = KeepOldFor::parse(keep).ok();
            assert!(kept.is_some(), "{keep}");
            assert_eq!(
                parse_line(&format!("keys rotate 42 --keep-old-for {keep} --yes")),
                Ok(Command::Keys(Keys::Rotate(id(42), kept, Confirmed::Yes)))
            );
        }
        let upgrade = KeyChange {
            plan: Some(Plan::Pro),
            role: Some(Role::Staff),
            ..KeyChange::default()
        };
        assert_eq!(
            parse_line("keys update 42 --plan pro --role staff"),
            Ok(Command::Keys(Keys::Update(id(42), upgrade)))
        );
        let own = KeyChange {
            limits: Some((10, 100)),
            max_webhooks: Some(3),
            ..KeyChange::default()
        };
        assert_eq!(
            parse_line("keys update 42 --per-minute 10 --per-day 100 --max-webhooks 3"),
            Ok(Command::Keys(Keys::Update(id(42), own)))
        );
        assert!(refused("keys update 42").contains("say what to change"));
        assert!(parse_line("keys update 42 --per-minute 10").is_err());
        assert_eq!(
            parse_line("keys revoke 42"),
            Ok(Command::Keys(Keys::Revoke(id(42), Confirmed::No)))
        );
        assert_eq!(
            parse_line("keys revoke --yes 42"),
            Ok(Command::Keys(Keys::Revoke(id(42), Confirmed::Yes)))
        );
        assert_eq!(
            parse_line("keys unban 42"),
            Ok(Command::Keys(Keys::Unban(id(42))))
        );
        assert_eq!(
            parse_line("data backfill-inventory"),
            Ok(Command::Data(Data::BackfillInventory))
        );
        assert_eq!(
            parse_line("data check"),
            Ok(Command::Data(Data::Check {
                table: None,
                segments: 8
            }))
        );
        assert_eq!(
            parse_line("data export --output prod.jsonl"),
            Ok(Command::Data(Data::Export {
                table: None,
                segments: 8,
                output: Some(PathBuf::from("prod.jsonl"))
            }))
        );
        assert_eq!(
            parse_line("data import --table dev --input prod.jsonl"),
            Ok(Command::Data(Data::Import {
                table: Some("dev".to_string()),
                input: Some(PathBuf::from("prod.jsonl"))
            }))
        );
        assert_eq!(
            parse_line("data restore --to restored --backup arn:b"),
            Ok(Command::Data(Data::Restore {
                source: restore::Source::Backup {
                    arn: "arn:b".to_string()
                },
                to: "restored".to_string()
            }))
        );
        let at = chrono::DateTime::parse_from_rfc3339("2026-11-25T18:00:00Z").ok();
        assert_eq!(
            parse_line("data restore --to r --from petstore --at 2026-11-25T18:00:00Z"),
            Ok(Command::Data(Data::Restore {
                source: restore::Source::PointInTime {
                    table: "petstore".to_string(),
                    at: at.map(|t| t.with_timezone(&chrono::Utc))
                },
                to: "r".to_string()
            }))
        );
        assert!(parse_line("data restore --to r").is_err());
        assert!(parse_line("data restore --to r --backup a --from t").is_err());
        assert!(parse_line("data restore --to r --from t --at yesterday").is_err());
        assert_eq!(
            parse_line("data check --table restored --segments 16"),
            Ok(Command::Data(Data::Check {
                table: Some("restored".to_string()),
                segments: 16
            }))
        );
    }

    #[test]
    fn a_role_is_chosen_at_creation() {
        assert_eq!(
            parse_line("keys create --role staff --plan business --name ops"),
            Ok(new_key(Plan::Business, None, Some("ops"), Role::Staff))
        );
        assert_eq!(
            parse_line("keys create --role customer"),
            Ok(new_key(Plan::Free, None, None, Role::Customer))
        );
    }

    #[test]
    fn mistakes_are_refused_before_any_call_saying_what_is_wrong() {
        let says = |line: &str, what: &str| {
            let error = refused(line);
            assert!(error.contains(what), "`{line}` says:\n{error}");
        };
        says("keys create --plan gold", "unknown plan `gold`");
        says(
            "keys create --plan enterprise",
            "an enterprise key needs --per-minute and --per-day",
        );
        says(
            "keys create --plan pro --per-minute 5 --per-day 9",
            "only enterprise keys carry their own limits",
        );
        says("keys create --per-minute 5", "--per-day <N>");
        says("keys create --per-day 5", "--per-minute <N>");
        says("keys create --per-minute five --per-day 9", "invalid digit");
        says("keys create --role admin", "admin");
        says(
            "keys create --role",
            "a value is required for '--role <ROLE>'",
        );
        says("keys create --colour red", "unexpected argument '--colour'");
        says("keys revoke x", "`x` is not a key id");
        says("keys rotate 0", "`0` is not a key id");
        says("keys rotate", "<ID>");
        says("keys rotate 1 2", "unexpected argument '2'");
        says(
            "keys rotate 1 --keep-old-for 8d --yes",
            "`8d` is longer than 7 days: an old secret is kept at most 7d (168h)",
        );
        says(
            "keys rotate 1 --keep-old-for 2 --yes",
            "`2` is not a duration",
        );
        says("keys rotate 1 --keep-old-for", "--keep-old-for <DURATION>");
        says("keys", "Usage: petstore-admin keys <COMMAND>");
        says("pets list", "unrecognized subcommand 'pets'");
        // A key request that cannot be made shows `create`'s usage.
        let error = refused("keys create --plan free --per-minute 1 --per-day 2");
        assert!(
            error.contains("Usage: petstore-admin keys create"),
            "{error}"
        );
    }
}
