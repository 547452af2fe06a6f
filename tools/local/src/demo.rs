//! The demo keys every local stack prints at start.

use petstore::ratelimit::keys::NewApiKey;
use petstore::ratelimit::Plan;
use petstore::records::Role;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A customer key per plan and one staff key, so a local stack can be tried
/// at once (more with `make key`). The enterprise key's limits are small, to
/// show a 429 by hand.
pub async fn print_demo_keys(app: &petstore::App) -> Result<(), BoxError> {
    let keys = [
        (Plan::Free, None, Role::Customer),
        (Plan::Pro, None, Role::Customer),
        (Plan::Business, None, Role::Customer),
        (Plan::Enterprise, Some((5, 100)), Role::Customer),
        (Plan::Pro, None, Role::Staff),
    ];
    println!("Demo API keys (send as X-API-Key):");
    for (plan, limits, role) in keys {
        let name = format!("demo {} {}", role.as_str(), plan.as_str());
        let new = NewApiKey::new(plan, limits, Some(name))?.with_role(role);
        let issued = app.limiter.keys().create(new, chrono::Utc::now()).await?;
        let record = &issued.record;
        println!(
            "  {:<8} {:<10} {}  ({}/minute, {}/day, id {})",
            role.as_str(),
            plan.as_str(),
            issued.key,
            record.per_minute,
            record.per_day,
            record.id
        );
    }
    Ok(())
}
