//! Configuration, read once from the environment at cold start.
//!
//! Every knob has a default that works for `make run`, so a function only needs
//! `TABLE_NAME` and `RATE_LIMIT_TABLE_NAME` in production (set by `template.yaml`).

use crate::db::shards::{Shards, MAX_SHARDS};
use crate::db::Layout;
use chrono::{DateTime, Utc};
use std::time::Duration;

/// Everything the service reads from its environment.
#[derive(Debug, Clone)]
pub struct Config {
    /// The single data table (`TABLE_NAME`).
    pub table_name: String,
    /// The rate-limit counter table (`RATE_LIMIT_TABLE_NAME`).
    pub rate_limit_table_name: String,
    /// When `GET /pets/{petId}` starts answering 410 (`SUNSET_AT`, RFC 3339).
    pub sunset_at: DateTime<Utc>,
    /// When `GET /pets/{petId}` was deprecated (`DEPRECATED_AT`, RFC 3339).
    pub deprecated_at: DateTime<Utc>,
    /// Rate limiting and API keys.
    pub limits: LimitsConfig,
    /// How many partitions each kind's lists are spread over
    /// (`PET_LIST_SHARDS`, `ORDER_LIST_SHARDS`, `CATEGORY_LIST_SHARDS`; see
    /// [`crate::db::shards`]), and while a lowered count is resharded the
    /// count its entries may still be under (`PET_LIST_SHARDS_DRAINING`,
    /// `ORDER_LIST_SHARDS_DRAINING`); and how many delivery partitions a new
    /// webhook endpoint gets (`WEBHOOK_DELIVERY_SHARDS`; template.yaml's
    /// `OrderRate` sets them all).
    pub shards: Shards,
    /// The origins whose pages may call the API from a browser
    /// (`ALLOWED_ORIGINS`, comma-separated, e.g.
    /// `https://shop.example.com,http://localhost:5173`), lower-cased. Empty,
    /// the default: no CORS at all. Read by the local stacks; in AWS the
    /// template's `AllowedOrigins` sets API Gateway's CORS instead (see
    /// [`crate::http::cors`]).
    pub allowed_origins: Vec<String>,
    /// The secret the optional CloudFront front sends in
    /// [`crate::http::front::ORIGIN_HEADER`] (`ORIGIN_SECRET`; template.yaml's
    /// `FrontOriginSecret`). Set, every request without it is refused before
    /// any other work; unset (the default), there is no front and no check.
    pub origin_secret: Option<String>,
    /// How long an incomplete order holds its units before it lapses
    /// (`HOLD_DAYS`, whole days, at least 1; see [`crate::rules::holds`]).
    pub hold: chrono::Duration,
    /// The data table's stored layout (`DATA_LAYOUT`, `1` or `2`; absent:
    /// `2`, the current): set by the deploy that moves the table from one to
    /// the next (template.yaml's `DataLayoutStep`, docs/upgrade.md), never
    /// read from the table, so a cold start pays nothing for it.
    pub data_layout: Layout,
}

/// The rate limiter's thresholds; small values make the ban testable.
#[derive(Debug, Clone)]
pub struct LimitsConfig {
    /// Refused requests within one minute window that earn a ban (`BAN_THRESHOLD`).
    pub ban_threshold: u64,
    /// The first ban's length (`BAN_BASE_SECONDS`); each repeat within a day doubles it.
    pub ban_base: Duration,
    /// The longest ban (`BAN_MAX_SECONDS`).
    pub ban_max: Duration,
    /// How long a warm process trusts a key it has looked up (`KEY_CACHE_SECONDS`).
    pub key_cache_ttl: Duration,
    /// When the counter table fails: refuse with 503 (`closed`, the default) or
    /// serve uncounted (`open`) (`RATE_LIMIT_FAILURE_MODE`).
    pub fail_open: bool,
    /// Refusals a process answers from memory before it reports them to the
    /// counter table (`REFUSAL_FLUSH_EVERY`).
    pub refusal_flush_every: u64,
}

/// The default sunset of the deprecated `GET /pets/{petId}`.
pub const DEFAULT_SUNSET_AT: &str = "2027-06-30T00:00:00Z";
/// The default deprecation instant of `GET /pets/{petId}`.
pub const DEFAULT_DEPRECATED_AT: &str = "2026-07-01T00:00:00Z";

/// A variable that is set but cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("environment variable {name} is not valid: {reason}")]
pub struct ConfigError {
    name: &'static str,
    reason: String,
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads configuration through `lookup`, so tests need not touch the process environment.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let vars = Vars(lookup);
        let fail_open = vars.fail_open()?;
        let allowed_origins = vars.allowed_origins()?;
        let hold = vars.hold()?;
        let defaults = Shards::default();
        Ok(Config {
            data_layout: vars.data_layout()?,
            allowed_origins,
            origin_secret: (vars.0)("ORIGIN_SECRET").filter(|secret| !secret.is_empty()),
            hold,
            shards: Shards {
                pets: vars.shards("PET_LIST_SHARDS", defaults.pets)?,
                orders: vars.shards("ORDER_LIST_SHARDS", defaults.orders)?,
                categories: vars.shards("CATEGORY_LIST_SHARDS", defaults.categories)?,
                pets_draining: vars.draining("PET_LIST_SHARDS_DRAINING")?,
                orders_draining: vars.draining("ORDER_LIST_SHARDS_DRAINING")?,
                deliveries: vars.shards("WEBHOOK_DELIVERY_SHARDS", defaults.deliveries)?,
            },
            table_name: vars.text("TABLE_NAME", "petstore"),
            rate_limit_table_name: vars.text("RATE_LIMIT_TABLE_NAME", "petstore-ratelimits"),
            sunset_at: vars.instant("SUNSET_AT", DEFAULT_SUNSET_AT)?,
            deprecated_at: vars.instant("DEPRECATED_AT", DEFAULT_DEPRECATED_AT)?,
            limits: LimitsConfig {
                ban_threshold: vars.number("BAN_THRESHOLD", 30)?,
                ban_base: Duration::from_secs(vars.number("BAN_BASE_SECONDS", 15 * 60)?),
                ban_max: Duration::from_secs(vars.number("BAN_MAX_SECONDS", 24 * 60 * 60)?),
                key_cache_ttl: Duration::from_secs(vars.number("KEY_CACHE_SECONDS", 30)?),
                fail_open,
                refusal_flush_every: vars.number("REFUSAL_FLUSH_EVERY", 5)?.max(1),
            },
        })
    }
}

/// The variables as `lookup` gives them, each read as its type; a set but
/// empty variable is as unset (its default).
struct Vars<F>(F);

impl<F: Fn(&str) -> Option<String>> Vars<F> {
    fn text(&self, name: &'static str, default: &str) -> String {
        (self.0)(name)
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| default.to_string())
    }

    fn instant(&self, name: &'static str, default: &str) -> Result<DateTime<Utc>, ConfigError> {
        let raw = self.text(name, default);
        DateTime::parse_from_rfc3339(&raw)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| ConfigError {
                name,
                reason: e.to_string(),
            })
    }

    fn number(&self, name: &'static str, default: u64) -> Result<u64, ConfigError> {
        match (self.0)(name).filter(|v| !v.is_empty()) {
            None => Ok(default),
            Some(raw) => raw.parse::<u64>().map_err(|e| ConfigError {
                name,
                reason: e.to_string(),
            }),
        }
    }

    fn shards(&self, name: &'static str, default: u16) -> Result<u16, ConfigError> {
        let count = self.number(name, u64::from(default))?;
        u16::try_from(count)
            .ok()
            .filter(|c| (1..=MAX_SHARDS).contains(c))
            .ok_or_else(|| ConfigError {
                name,
                reason: format!("a shard count is 1 to {MAX_SHARDS}, got {count}"),
            })
    }

    /// A draining shard count: unset, empty or 0 for none.
    fn draining(&self, name: &'static str) -> Result<u16, ConfigError> {
        match self.number(name, 0)? {
            0 => Ok(0),
            _ => self.shards(name, 0),
        }
    }

    fn fail_open(&self) -> Result<bool, ConfigError> {
        match self.text("RATE_LIMIT_FAILURE_MODE", "closed").as_str() {
            "closed" => Ok(false),
            "open" => Ok(true),
            other => Err(ConfigError {
                name: "RATE_LIMIT_FAILURE_MODE",
                reason: format!("expected `closed` or `open`, got `{other}`"),
            }),
        }
    }

    fn allowed_origins(&self) -> Result<Vec<String>, ConfigError> {
        (self.0)("ALLOWED_ORIGINS")
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|origin| !origin.is_empty())
            .map(|origin| {
                web_origin(origin).ok_or_else(|| ConfigError {
                    name: "ALLOWED_ORIGINS",
                    reason: format!(
                        "an origin is http(s)://host[:port], without a path: got `{origin}`"
                    ),
                })
            })
            .collect()
    }

    fn data_layout(&self) -> Result<Layout, ConfigError> {
        let layout = self.number("DATA_LAYOUT", Layout::default().number())?;
        Layout::from_number(layout).ok_or_else(|| ConfigError {
            name: "DATA_LAYOUT",
            reason: format!("a data layout is 1 or 2, got {layout}"),
        })
    }

    fn hold(&self) -> Result<chrono::Duration, ConfigError> {
        let hold_days = self.number(
            "HOLD_DAYS",
            u64::from(crate::rules::holds::DEFAULT_HOLD_DAYS),
        )?;
        i64::try_from(hold_days)
            .ok()
            .filter(|days| (1..=3_650).contains(days))
            .map(chrono::Duration::days)
            .ok_or_else(|| ConfigError {
                name: "HOLD_DAYS",
                reason: format!("a hold is 1 to 3650 days, got {hold_days}"),
            })
    }
}

/// `raw` as a browser sends it in `Origin` (scheme and host lower-case),
/// if it is a web origin: `http` or `https`, a host, maybe a port; no path,
/// query, user or wildcard.
fn web_origin(raw: &str) -> Option<String> {
    let origin = raw.to_ascii_lowercase();
    let authority = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"))?;
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']');
    (!authority.is_empty() && authority.chars().all(plain)).then_some(origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_apply_when_nothing_is_set() -> Result<(), Box<dyn std::error::Error>> {
        let config = Config::from_lookup(|_| None)?;
        assert_eq!(config.table_name, "petstore");
        assert_eq!(config.rate_limit_table_name, "petstore-ratelimits");
        assert_eq!(config.sunset_at.to_rfc3339(), "2027-06-30T00:00:00+00:00");
        assert_eq!(config.limits.ban_threshold, 30);
        assert_eq!(config.limits.ban_base, Duration::from_secs(900));
        assert!(!config.limits.fail_open);
        assert_eq!(config.shards, Shards::default());
        assert!(config.allowed_origins.is_empty());
        assert_eq!(config.hold, chrono::Duration::days(30));
        assert_eq!(config.data_layout, Layout::V2);
        Ok(())
    }

    #[test]
    fn the_data_layout_is_one_the_code_serves() -> Result<(), Box<dyn std::error::Error>> {
        let layout = |raw: &'static str| {
            Config::from_lookup(move |n| (n == "DATA_LAYOUT").then(|| raw.into()))
        };
        assert_eq!(layout("1")?.data_layout, Layout::V1);
        assert_eq!(layout("2")?.data_layout, Layout::V2);
        for wrong in ["0", "3", "v2"] {
            let err = layout(wrong)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains("DATA_LAYOUT"), "{wrong}: {err}");
        }
        Ok(())
    }

    #[test]
    fn a_hold_is_whole_days_from_one_to_ten_years() -> Result<(), Box<dyn std::error::Error>> {
        let days = |raw: &'static str| {
            Config::from_lookup(move |n| (n == "HOLD_DAYS").then(|| raw.into()))
        };
        assert_eq!(days("7")?.hold, chrono::Duration::days(7));
        assert!(days("0").is_err());
        assert!(days("3651").is_err());
        assert!(days("a week").is_err());
        Ok(())
    }

    #[test]
    fn a_bad_value_names_its_variable() {
        let err =
            Config::from_lookup(|n| (n == "SUNSET_AT").then(|| "soon".to_string())).unwrap_err();
        assert!(err.to_string().contains("SUNSET_AT"));
        let err =
            Config::from_lookup(|n| (n == "BAN_THRESHOLD").then(|| "-1".to_string())).unwrap_err();
        assert!(err.to_string().contains("BAN_THRESHOLD"));
        for bad in ["0", "257", "many"] {
            let err = Config::from_lookup(|n| (n == "ORDER_LIST_SHARDS").then(|| bad.to_string()))
                .unwrap_err();
            assert!(err.to_string().contains("ORDER_LIST_SHARDS"), "{bad}");
            let err = Config::from_lookup(|n| {
                (n == "ORDER_LIST_SHARDS_DRAINING").then(|| bad.to_string())
            })
            .map(|c| c.shards.orders_draining.to_string())
            .unwrap_or_else(|e| e.to_string());
            let expected = if bad == "0" {
                "0"
            } else {
                "ORDER_LIST_SHARDS_DRAINING"
            };
            assert!(err.contains(expected), "{bad}: {err}");
        }
        for bad in [
            "*",
            "shop.example.com",
            "https://shop.example.com/",
            "https://*.example.com",
            "ftp://x",
        ] {
            let err = Config::from_lookup(|n| (n == "ALLOWED_ORIGINS").then(|| bad.to_string()))
                .unwrap_err();
            assert!(err.to_string().contains("ALLOWED_ORIGINS"), "{bad}");
        }
    }

    #[test]
    fn allowed_origins_are_a_comma_separated_list_as_browsers_send_them(
    ) -> Result<(), Box<dyn std::error::Error>> {
        let config = Config::from_lookup(|n| {
            (n == "ALLOWED_ORIGINS").then(|| {
                " https://Shop.Example.com, http://127.0.0.1:5173,,http://[::1]:8080 ".into()
            })
        })?;
        assert_eq!(
            config.allowed_origins,
            [
                "https://shop.example.com",
                "http://127.0.0.1:5173",
                "http://[::1]:8080"
            ]
        );
        Ok(())
    }
}
