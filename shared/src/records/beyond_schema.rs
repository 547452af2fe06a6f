//! The rules on a record's fields that its JSON Schema in `openapi.yaml`
//! cannot state (a name unique among categories, a reference to a record
//! that exists, a date within a window), and what makes the conformance run
//! respect each.
//!
//! `make conformance` has schemathesis generate requests from the schemas
//! alone, so it sends bodies that break these rules and, unless told, calls
//! the service's refusal a failure. Each rule therefore names its
//! [`Conformance`](super::Conformance): a hook in `tools/gates/src/gates/conformance_hooks.py` that keeps the
//! generated requests within the rule, or the status the service refuses a
//! schema-valid request with, which `scripts/conformance.toml` accepts.
//!
//! Each record's validation module lists its rules (`RULES`) beside the
//! code that enforces them; [`ALL`] gathers them. The test below fails when
//! a rule's hook is missing from `conformance_hooks.py`, when a hook there
//! serves no rule listed here, and when a refusal's status is not accepted
//! by `conformance.toml` or its code is not in `openapi.yaml`.

use super::schema_rule::BeyondSchema;

/// Every record's rules beyond its schema.
pub const ALL: &[&[BeyondSchema]] = &[
    super::text::RULES,
    super::pet::RULES,
    super::category::RULES,
    super::order::RULES,
    super::idempotency_key::RULES,
    super::webhook_endpoint::RULES,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::Conformance;
    use std::collections::BTreeSet;
    use std::path::Path;

    fn repo_file(path: &str) -> Result<String, String> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        std::fs::read_to_string(root.join(path)).map_err(|e| format!("{path}: {e}"))
    }

    /// The functions `conformance_hooks.py` registers with `@schemathesis.hook`.
    fn hooks(source: &str) -> BTreeSet<String> {
        let mut hooks = BTreeSet::new();
        let mut decorated = false;
        for line in source.lines() {
            if line.starts_with("@schemathesis.hook") {
                decorated = true;
            } else if let Some(def) = line.strip_prefix("def ").filter(|_| decorated) {
                hooks.insert(def.split('(').next().unwrap_or(def).trim().to_string());
                decorated = false;
            } else if !line.starts_with('@') {
                decorated = false;
            }
        }
        hooks
    }

    /// The statuses `conformance.toml` accepts for a schema-valid request.
    fn accepted_statuses(config: &str) -> BTreeSet<String> {
        let check = config
            .split("[checks.positive_data_acceptance]")
            .nth(1)
            .unwrap_or_default();
        let list = check
            .split("expected-statuses")
            .nth(1)
            .and_then(|rest| rest.split(']').next())
            .unwrap_or_default();
        list.split('"')
            .skip(1)
            .step_by(2)
            .map(String::from)
            .collect()
    }

    #[test]
    fn every_rule_beyond_the_schema_has_its_conformance_hook() -> Result<(), String> {
        let hooks = hooks(&repo_file("tools/gates/src/gates/conformance_hooks.py")?);
        let accepted = accepted_statuses(&repo_file("scripts/conformance.toml")?);
        let openapi = repo_file("openapi.yaml")?;
        let mut served = BTreeSet::new();
        for BeyondSchema {
            field,
            rule,
            conformance,
        } in ALL.iter().flat_map(|rules| rules.iter())
        {
            match conformance {
                Conformance::Hook(hook) => {
                    assert!(
                        hooks.contains(*hook),
                        "{field} ({rule}): its hook {hook} is no @schemathesis.hook function \
                         of tools/gates/src/gates/conformance_hooks.py"
                    );
                    served.insert(hook.to_string());
                }
                Conformance::Refused { status, code } => {
                    assert!(
                        accepted.contains(&status.to_string()),
                        "{field} ({rule}): scripts/conformance.toml's positive_data_acceptance \
                         does not accept {status}, the status it is refused with"
                    );
                    assert!(
                        openapi.contains(code),
                        "{field} ({rule}): openapi.yaml never names its error code {code}"
                    );
                }
            }
        }
        let unserved: Vec<&String> = hooks.difference(&served).collect();
        assert!(
            unserved.is_empty(),
            "tools/gates/src/gates/conformance_hooks.py's hooks {unserved:?} serve no rule of a record's RULES \
             (shared/src/records/): list the rule beside the validation that enforces it"
        );
        assert!(
            !served.is_empty() && !accepted.is_empty(),
            "the files were read"
        );
        Ok(())
    }

    /// The modules of `shared/src` that declare a `RULES` of
    /// [`BeyondSchema`], as `records::pet`, found in the source.
    fn modules_declaring_rules() -> BTreeSet<String> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut paths = vec![root.clone()];
        let mut modules = BTreeSet::new();
        while let Some(path) = paths.pop() {
            if path.is_dir() {
                let entries = std::fs::read_dir(&path).expect("shared/src is readable");
                paths.extend(entries.map(|entry| entry.expect("a directory entry").path()));
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let declares = text.lines().any(|line| {
                line.starts_with("pub const RULES: &[") && line.contains("BeyondSchema]")
            });
            if declares {
                let module = path.strip_prefix(&root).expect("under shared/src");
                let module = module
                    .with_extension("")
                    .to_string_lossy()
                    .replace(['/', '\\'], "::");
                modules.insert(module);
            }
        }
        modules
    }

    /// A record module's `RULES` left out of [`ALL`] would have its rules
    /// held to no hook and no accepted status: each is found in the source
    /// and must be gathered.
    #[test]
    fn every_module_s_rules_are_in_all() -> Result<(), String> {
        let source = repo_file("shared/src/records/beyond_schema.rs")?;
        let gathered = source
            .split("pub const ALL")
            .nth(1)
            .and_then(|rest| rest.split("];").next())
            .unwrap_or_default();
        let gathered: BTreeSet<String> = gathered
            .lines()
            .map(|line| line.split("//").next().unwrap_or_default())
            .flat_map(|line| line.split(','))
            .filter_map(|entry| entry.split_whitespace().last()?.strip_suffix("::RULES"))
            .map(|path| {
                let path = path.replace("super::", "records::");
                path.trim_start_matches("crate::").to_string()
            })
            .collect();
        let declared = modules_declaring_rules();
        let left_out: Vec<&String> = declared.difference(&gathered).collect();
        assert!(
            left_out.is_empty(),
            "{left_out:?} declare RULES beyond the schema that records::beyond_schema::ALL \
             does not gather: add each there"
        );
        assert_eq!(
            gathered.len(),
            ALL.len(),
            "ALL's entries were read: {gathered:?}"
        );
        Ok(())
    }

    #[test]
    fn hooks_are_the_decorated_functions_only() {
        let source = "@schemathesis.hook(\"before_call\")\ndef keys(ctx, case):\n    pass\n\n\
                      def helper():\n    pass\n@schemathesis.hook\ndef map_body(ctx, body):\n";
        let expected: BTreeSet<String> = ["keys", "map_body"].map(String::from).into();
        assert_eq!(hooks(source), expected);
        let config =
            "[checks.positive_data_acceptance]\n# why\nexpected-statuses = [\"2xx\", \"409\"]\n";
        assert!(accepted_statuses(config).contains("409"));
    }
}
