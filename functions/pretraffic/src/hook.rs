//! The CodeDeploy hook: CodeDeploy invokes it with a deployment and a hook
//! execution id before it shifts any traffic to a new version. It asks
//! CodeDeploy which function and version are being released, sends that
//! version its checks ([`crate::invoke`]) and reports `Succeeded` or
//! `Failed`; a failure stops the release, and the alias stays where it was.
//!
//! It always reports: a hook that does not answer holds the release for an
//! hour before CodeDeploy gives up on it.

use crate::checks::{Function, Outcome};
use crate::invoke::Invoker;
use aws_sdk_codedeploy::types::LifecycleEventStatus;
use serde::Deserialize;

/// What CodeDeploy sends a lifecycle hook.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HookEvent {
    pub deployment_id: String,
    pub lifecycle_event_hook_execution_id: String,
}

/// The function and version a deployment releases.
#[derive(Debug, PartialEq, Eq)]
pub struct Release {
    pub function: Function,
    pub name: String,
    pub version: String,
}

pub struct Hook {
    codedeploy: aws_sdk_codedeploy::Client,
    /// This stack's CodeDeploy application: the only one whose deployments it checks.
    application: String,
    invoker: Invoker,
    /// The stack's functions by deployed name (the template's environment).
    functions: Vec<(Function, String)>,
    /// Where the keyed check's short-lived key is put (`TABLE_NAME`, the data table).
    dynamodb: aws_sdk_dynamodb::Client,
    table: String,
}

impl Hook {
    /// The hook as deployed: the functions named by PETS_FUNCTION, ...,
    /// the application by CODEDEPLOY_APPLICATION, the data table by TABLE_NAME.
    pub fn from_env(config: &aws_config::SdkConfig) -> Result<Hook, String> {
        let application = std::env::var("CODEDEPLOY_APPLICATION")
            .map_err(|_| "CODEDEPLOY_APPLICATION is not set".to_string())?;
        let table = std::env::var("TABLE_NAME").map_err(|_| "TABLE_NAME is not set".to_string())?;
        let functions = Function::ALL
            .into_iter()
            .map(|f| {
                std::env::var(f.variable())
                    .map(|name| (f, name))
                    .map_err(|_| format!("{} is not set", f.variable()))
            })
            .collect::<Result<_, _>>()?;
        Ok(Hook {
            codedeploy: aws_sdk_codedeploy::Client::new(config),
            application,
            invoker: Invoker::new(aws_sdk_lambda::Client::new(config)),
            functions,
            dynamodb: aws_sdk_dynamodb::Client::new(config),
            table,
        })
    }

    /// Checks the deployment's new version and reports the verdict; reports
    /// nothing for a deployment of another application (an error: its own
    /// hook answers it).
    pub async fn handle(&self, event: &HookEvent) -> Result<LifecycleEventStatus, String> {
        self.own(&event.deployment_id).await?;
        let outcomes = match self.release(&event.deployment_id).await {
            Ok(release) => {
                tracing::info!(function = %release.name, version = %release.version, "checking");
                let key = self.key_for(release.function).await;
                self.invoker
                    .check(
                        release.function,
                        &release.name,
                        Some(&release.version),
                        &key,
                    )
                    .await
            }
            Err(why) => {
                tracing::error!(deployment = %event.deployment_id, "{why}");
                Vec::new()
            }
        };
        let status = verdict(&outcomes);
        for outcome in &outcomes {
            match &outcome.result {
                Ok(()) => tracing::info!(check = outcome.check.name, "passed"),
                Err(why) => tracing::error!(check = outcome.check.name, "failed: {why}"),
            }
        }
        self.codedeploy
            .put_lifecycle_event_hook_execution_status()
            .deployment_id(&event.deployment_id)
            .lifecycle_event_hook_execution_id(&event.lifecycle_event_hook_execution_id)
            .status(status.clone())
            .send()
            .await
            .map_err(|e| {
                format!(
                    "reporting {status:?}: {}",
                    aws_sdk_codedeploy::error::DisplayErrorContext(&e)
                )
            })?;
        tracing::info!(deployment = %event.deployment_id, status = ?status, "reported");
        Ok(status)
    }

    /// A fresh short-lived key when `function` has a keyed check (none is
    /// made for the others).
    async fn key_for(&self, function: Function) -> Result<String, String> {
        if !crate::checks::of(function).any(|c| c.keyed()) {
            return Err(format!("{} has no keyed check", function.binary()));
        }
        crate::key::mint(self.dynamodb.clone(), &self.table).await
    }

    /// Whether `deployment` is of this stack's application (IAM lets the hook
    /// read no other's).
    async fn own(&self, deployment: &str) -> Result<(), String> {
        let described = self
            .codedeploy
            .get_deployment()
            .deployment_id(deployment)
            .send()
            .await
            .map_err(|e| {
                format!(
                    "deployment {deployment}: {}",
                    aws_sdk_codedeploy::error::DisplayErrorContext(&e)
                )
            })?;
        let application = described
            .deployment_info()
            .and_then(|d| d.application_name())
            .unwrap_or_default();
        if application == self.application {
            Ok(())
        } else {
            Err(format!(
                "deployment {deployment} is of {application}, not {}",
                self.application
            ))
        }
    }

    /// The function of this stack and the version that `deployment` releases.
    async fn release(&self, deployment: &str) -> Result<Release, String> {
        let err = |e: &dyn std::fmt::Display| format!("deployment {deployment}: {e}");
        let targets = self
            .codedeploy
            .list_deployment_targets()
            .deployment_id(deployment)
            .send()
            .await
            .map_err(|e| err(&aws_sdk_codedeploy::error::DisplayErrorContext(&e)))?;
        let target = targets
            .target_ids()
            .first()
            .ok_or_else(|| err(&"no deployment target"))?;
        let described = self
            .codedeploy
            .get_deployment_target()
            .deployment_id(deployment)
            .target_id(target)
            .send()
            .await
            .map_err(|e| err(&aws_sdk_codedeploy::error::DisplayErrorContext(&e)))?;
        let info = described
            .deployment_target()
            .and_then(|t| t.lambda_target())
            .and_then(|t| t.lambda_function_info())
            .ok_or_else(|| err(&"not a Lambda deployment"))?;
        let name = info.function_name().unwrap_or_default();
        let version = info
            .target_version()
            .ok_or_else(|| err(&"no target version"))?;
        let function = self
            .functions
            .iter()
            .find(|(_, deployed)| deployed == name)
            .map(|(f, _)| *f)
            .ok_or_else(|| err(&format!("{name} is none of this stack's functions")))?;
        Ok(Release {
            function,
            name: name.to_string(),
            version: version.to_string(),
        })
    }
}

/// Succeeded only when there were checks and every one passed.
pub fn verdict(outcomes: &[Outcome]) -> LifecycleEventStatus {
    let passed = !outcomes.is_empty() && outcomes.iter().all(|o| o.result.is_ok());
    if passed {
        LifecycleEventStatus::Succeeded
    } else {
        LifecycleEventStatus::Failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks;

    #[test]
    fn no_checks_or_one_failure_is_a_failed_release() {
        assert_eq!(verdict(&[]), LifecycleEventStatus::Failed);
        let ok = |n: usize| Outcome {
            check: &checks::CHECKS[n],
            result: Ok(()),
        };
        assert_eq!(verdict(&[ok(0), ok(1)]), LifecycleEventStatus::Succeeded);
        let failed = Outcome {
            check: &checks::CHECKS[1],
            result: Err("status 503".into()),
        };
        assert_eq!(verdict(&[ok(0), failed]), LifecycleEventStatus::Failed);
    }

    #[test]
    fn codedeploys_event_reads() {
        let event: HookEvent = serde_json::from_str(
            r#"{"DeploymentId": "d-ABC", "LifecycleEventHookExecutionId": "eyJ..."}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(event.deployment_id, "d-ABC");
    }
}
