//! The pre-traffic hook as a Lambda function (template.yaml's
//! PreTrafficFunction): wiring only; the work is [`petstore_pretraffic::hook`].

use lambda_runtime::{service_fn, LambdaEvent};
use petstore_pretraffic::hook::{Hook, HookEvent};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_runtime::Error> {
    tracing_subscriber::fmt()
        .json()
        .with_target(false)
        .without_time()
        .init();
    // From the environment alone, as every function (petstore::aws_env).
    let config = petstore::aws_env::sdk_config(petstore_pretraffic::sdk_http_client())?;
    let hook = Hook::from_env(&config)?;
    let hook = &hook;
    lambda_runtime::run(service_fn(
        move |event: LambdaEvent<HookEvent>| async move {
            let status = hook.handle(&event.payload).await?;
            Ok::<_, lambda_runtime::Error>(serde_json::json!({ "status": status.as_str() }))
        },
    ))
    .await
}
