//! `petstore-admin keys ...`: API keys, through the rate limiter's key store.

use crate::cli::keys::{Confirmed, Keys};
use crate::BoxError;
use petstore::App;
use serde_json::json;
use std::process::ExitCode;

/// Runs `command`, printing each key's record (and an issued key) as a JSON line.
pub async fn run(app: &App, command: Keys) -> Result<ExitCode, BoxError> {
    let keys = app.limiter.keys();
    match command {
        Keys::Create(new) => {
            let issued = keys.create(new, chrono::Utc::now()).await?;
            println!("{}", serde_json::to_string(&issued)?);
        }
        Keys::Rotate(id, keep_old_for, confirmed) => {
            if shown_unconfirmed(app, id, confirmed, "rotate").await? {
                return Ok(ExitCode::FAILURE);
            }
            let now = chrono::Utc::now();
            let printed = match keep_old_for {
                None => serde_json::to_string(&keys.rotate(id, now).await?)?,
                Some(keep) => {
                    serde_json::to_string(&keys.rotate_keeping_old(id, now, keep).await?)?
                }
            };
            println!("{printed}");
        }
        Keys::Update(id, change) => {
            let record = keys.update(id, &change).await?;
            if let Some(role) = change.role {
                // The fan-out finds a staff key's endpoints in the staff list.
                petstore::webhooks::endpoints::follow_role(&app.db, id, role).await?;
            }
            println!("{}", serde_json::to_string(&record)?);
        }
        Keys::List => {
            for record in keys.list().await? {
                println!("{}", serde_json::to_string(&record)?);
            }
        }
        Keys::Revoke(id, confirmed) => {
            if shown_unconfirmed(app, id, confirmed, "revoke").await? {
                return Ok(ExitCode::FAILURE);
            }
            match keys.revoke(id).await? {
                Some(record) => println!("{}", serde_json::to_string(&record)?),
                None => return Err(format!("no key has id {id}").into()),
            }
        }
        Keys::Unban(id) => {
            if !keys.exists(id).await? {
                return Err(format!("no key has id {id}").into());
            }
            let was_banned = app.limiter.unban(id).await?;
            println!("{}", json!({ "id": id, "wasBanned": was_banned }));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Shows the record of key `id` (an error if there is none) before `verb`
/// acts on it; true when the command was not confirmed, and so stops here.
async fn shown_unconfirmed(
    app: &App,
    id: petstore::records::Id,
    confirmed: Confirmed,
    verb: &str,
) -> Result<bool, BoxError> {
    let Some(record) = app.limiter.keys().find_by_id(id).await? else {
        return Err(format!("no key has id {id}").into());
    };
    if confirmed == Confirmed::Yes {
        return Ok(false);
    }
    println!("{}", serde_json::to_string(&record)?);
    eprintln!("petstore-admin: nothing changed; `keys {verb} {id} --yes` does it to this key");
    Ok(true)
}
