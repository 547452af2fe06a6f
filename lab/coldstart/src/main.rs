//! `petstore-coldstart`: cold start as Lambda runs it, run by `make bench`
//! (`lab/bench/run.sh`) after it built the release bootstraps and the floor.
//!
//! Each bootstrap is spawned with Lambda's environment ([`lambda_env`])
//! against the lab's Runtime API ([`spawn`]), started in a cgroup
//! ([`quota`]): init runs unthrottled; from its first `GET
//! .../invocation/next` on, the cgroup's CPU quota is MEM/1769 of one CPU, as
//! Lambda throttles an invocation. DynamoDB Local is reached through a TLS
//! proxy ([`tls`]). The events come from [`lambda_env::source_of`] each round.
//! Each process serves a cold invocation, a warm one, and one after it was
//! frozen while the proxy closed its connections. Spawns are interleaved
//! across bootstraps so drifting load on a shared machine hits them alike.
//! Then the functions' cold start at full CPU, without TLS ([`full_cpu`]): a
//! local figure, which the runner reads into `results.json`.
//! It reports; it never fails on a figure.
//!
//! Then each bootstrap's init once more under callgrind ([`instructions`]):
//! its instructions, a count the machine's load does not move.
//!
//! Knobs: `COLDSTART_SPAWNS` (32), `COLDSTART_WARM` (10 warm invocations per
//! process), `COLDSTART_MEMORY` (`128,256,512,1024`),
//! `COLDSTART_CFS_PERIOD_US` (20000), `COLDSTART_EXTRA`
//! (`pets-keyless@before=path,...`: more builds of a row's function, compared
//! in the run), `COLDSTART_ONLY` (`pets,floor`: only these rows, the extras'
//! labels included), `COLDSTART_FULL_CPU=0` (no full-CPU run after the
//! Lambda-like one: a change's warm rows alone), `COLDSTART_INSTRUCTIONS=0`
//! (no callgrind count of init).

mod cpu_time;
mod figures;
mod full_cpu;
mod instructions;
mod lambda_env;
mod quota;
mod rows;
mod spawn;
mod timeline;
mod tls;

use figures::{AtMemory, BootstrapFigures, ColdStartRun, COLDSTART_FILE};
use lambda_env::{source_of, Bootstrap, ColdSetup, Function};
use petstore_bench::client::Error;
use petstore_bench::processes::DynamoDbLocal;
use petstore_bench::{api_key, env_or, machine};
use quota::CpuQuota;
use rows::{FLOOR_KEYED_REQUEST, FLOOR_REQUEST, FLOOR_WRITE_REQUEST, FUNCTIONS};
use spawn::{Hooks, Spawn};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use tls::TlsProxy;

struct Settings {
    root: PathBuf,
    /// The host's release binaries.
    release: PathBuf,
    out: PathBuf,
    spawns: usize,
    /// Warm invocations per process.
    warm: usize,
    memory_mb: Vec<u32>,
    period_us: u64,
    bootstraps: Vec<Bootstrap>,
}

impl Settings {
    fn from_env() -> Result<Settings, Error> {
        let root = std::env::current_dir()?;
        let target = petstore_bench::target_dir(&root);
        let mut bootstraps: Vec<Bootstrap> = FUNCTIONS
            .iter()
            .map(|function| Bootstrap {
                label: function.label.to_string(),
                path: target.join("release").join(function.name),
                function,
            })
            .collect();
        for floor in [&FLOOR_REQUEST, &FLOOR_WRITE_REQUEST, &FLOOR_KEYED_REQUEST] {
            bootstraps.push(Bootstrap {
                label: floor.label.to_string(),
                path: target.join("release/coldstart-floor"),
                function: floor,
            });
        }
        for extra in std::env::var("COLDSTART_EXTRA")
            .unwrap_or_default()
            .split(',')
        {
            let Some((label, path)) = extra.split_once('=') else {
                continue;
            };
            let name = label.split('@').next().unwrap_or(label);
            let function = FUNCTIONS.iter().find(|f| f.label == name).ok_or_else(|| {
                format!("COLDSTART_EXTRA: {label} names no function's row (pets@before=path)")
            })?;
            bootstraps.push(Bootstrap {
                label: label.to_string(),
                path: path.into(),
                function,
            });
        }
        if let Ok(only) = std::env::var("COLDSTART_ONLY") {
            let only: Vec<&str> = only.split(',').map(str::trim).collect();
            bootstraps.retain(|b| only.contains(&b.label.as_str()));
        }
        let memory_mb = std::env::var("COLDSTART_MEMORY")
            .unwrap_or_else(|_| "128,256,512,1024".into())
            .split(',')
            .filter_map(|mb| mb.trim().parse().ok())
            .collect();
        Ok(Settings {
            release: target.join("release"),
            out: target.join("bench"),
            spawns: env_or("COLDSTART_SPAWNS", 32),
            warm: env_or("COLDSTART_WARM", 10),
            period_us: env_or("COLDSTART_CFS_PERIOD_US", 20_000),
            memory_mb,
            bootstraps,
            root,
        })
    }
}

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("coldstart: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Error> {
    let settings = Settings::from_env()?;
    std::fs::create_dir_all(&settings.out)?;
    let started = Instant::now();
    let mut notes = Vec::new();
    let missing: Vec<_> = settings
        .bootstraps
        .iter()
        .filter(|b| !b.path.is_file())
        .collect();
    for bootstrap in &missing {
        notes.push(format!(
            "{} not measured: {} is missing",
            bootstrap.label,
            bootstrap.path.display()
        ));
    }
    let mut dynamodb = DynamoDbLocal::start(&settings.root).await?;
    let outcome = async {
        let admin = settings.release.join("../debug/petstore-admin");
        let api_key = api_key::obtain(&admin, &dynamodb.url(), &mut notes).await;
        let bundle = settings.out.join("coldstart-ca-bundle.pem");
        let proxy = Arc::new(TlsProxy::start(dynamodb.addr, &bundle).await?);
        let mut run = ColdStartRun {
            machine: machine::describe(),
            throttle: String::new(),
            spawns_per_bootstrap: settings.spawns,
            by_memory: Vec::new(),
            notes: Vec::new(),
            init_instructions: None,
            elapsed_seconds: 0.0,
        };
        let context = Context {
            settings: &settings,
            proxy,
            bundle,
            api_key,
        };
        for &memory_mb in &settings.memory_mb {
            eprintln!(
                "coldstart: {memory_mb} MB, {} spawns of each bootstrap",
                settings.spawns
            );
            run.by_memory
                .push(at_memory(&context, memory_mb, &mut run.throttle, &mut notes).await?);
        }
        // The environment's memory size only: nothing is throttled.
        let memory_mb = settings.memory_mb.first().copied().unwrap_or(128);
        run.init_instructions = instructions::count_all(&context, memory_mb, &mut notes).await;
        run.notes = notes;
        run.elapsed_seconds = started.elapsed().as_secs_f64();
        let path = settings.out.join(COLDSTART_FILE);
        std::fs::write(&path, serde_json::to_vec_pretty(&run)?)?;
        figures::print_table(&run);
        if let Some(counted) = &run.init_instructions {
            instructions::print_table(counted);
        }
        println!(
            "\nFull results: {}",
            path.strip_prefix(&settings.root).unwrap_or(&path).display()
        );
        let (release, out) = (&settings.release, &settings.out);
        let key = context.api_key.as_deref();
        if std::env::var("COLDSTART_FULL_CPU").is_ok_and(|v| v == "0") {
            return Ok(());
        }
        // At full CPU, each binary once, with its keyed event.
        let binaries: Vec<&Function> = FUNCTIONS.iter().filter(|f| f.label == f.name).collect();
        full_cpu::measure_all(&binaries, release, out, &dynamodb.url(), key).await
    }
    .await;
    dynamodb.stop().await;
    outcome
}

/// What every spawn of the run shares.
struct Context<'a> {
    settings: &'a Settings,
    proxy: Arc<TlsProxy>,
    bundle: PathBuf,
    api_key: Option<String>,
}

/// A CPU quota for `memory_mb`, or `None` and a note saying why not.
fn quota_for(
    memory_mb: u32,
    period_us: u64,
    throttle: &mut String,
    notes: &mut Vec<String>,
) -> Option<Arc<CpuQuota>> {
    match CpuQuota::create(memory_mb, period_us) {
        Ok(quota) => {
            *throttle = format!(
                "invocation throttled to MEM/1769 of one CPU by a cgroup CPU quota, period {period_us} us"
            );
            Some(Arc::new(quota))
        }
        Err(e) => {
            *throttle = format!("NOT throttled ({e}): full-CPU figures");
            notes.push(format!(
                "{memory_mb} MB: no CPU quota ({e}); measured at full CPU"
            ));
            None
        }
    }
}

/// Every bootstrap's spawns at one memory size, interleaved.
async fn at_memory(
    context: &Context<'_>,
    memory_mb: u32,
    throttle: &mut String,
    notes: &mut Vec<String>,
) -> Result<AtMemory, Error> {
    let settings = context.settings;
    let quota = quota_for(memory_mb, settings.period_us, throttle, notes);
    let hooks = Hooks {
        env: vec![(
            "SSL_CERT_FILE".to_string(),
            context.bundle.display().to_string(),
        )],
        quota: quota.clone(),
        idle_close: Some(context.proxy.clone()),
        warm_invocations: settings.warm,
    };
    let present: Vec<&Bootstrap> = settings
        .bootstraps
        .iter()
        .filter(|b| b.path.is_file())
        .collect();
    let mut measured: Vec<Vec<Spawn>> = present.iter().map(|_| Vec::new()).collect();
    for round in 0..settings.spawns {
        let source_ip = source_of(round);
        for (bootstrap, spawns) in present.iter().zip(&mut measured) {
            match spawn_one(context, (bootstrap, source_ip), memory_mb, &hooks).await {
                Ok(spawn) => spawns.push(spawn),
                Err(e) => eprintln!(
                    "coldstart: {} at {memory_mb} MB failed: {e}",
                    bootstrap.label
                ),
            }
        }
    }
    if let Some(quota) = &quota {
        quota.remove();
    }
    let mut at = AtMemory {
        memory_mb,
        cpu_share: quota.map(|q| q.share),
        bootstraps: present
            .iter()
            .zip(&measured)
            .map(|(bootstrap, spawns)| {
                let request = bootstrap.function.request();
                BootstrapFigures::of(bootstrap, request, memory_mb, settings.spawns, spawns)
            })
            .collect(),
    };
    at.compare_to_floor();
    Ok(at)
}

/// One spawn of `bootstrap`, its output appended to its log.
async fn spawn_one(
    context: &Context<'_>,
    (bootstrap, source_ip): (&Bootstrap, &str),
    memory_mb: u32,
    hooks: &Hooks,
) -> Result<Spawn, Error> {
    let settings = context.settings;
    let log_path = settings
        .out
        .join(format!("coldstart-{}.log", bootstrap.label));
    let endpoint = context.proxy.endpoint();
    let setup = ColdSetup {
        function: bootstrap.function,
        bootstrap: &bootstrap.path,
        dynamodb_endpoint: &endpoint,
        api_key: context
            .api_key
            .as_deref()
            .filter(|_| bootstrap.function.keyed),
        source_ip,
        memory_mb,
        log: &log_path,
    };
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)?;
    spawn::spawn_once(&setup, hooks, &log).await
}

#[cfg(test)]
mod tests {
    use super::rows::FUNCTIONS;
    use petstore_lab_template::Template;

    /// A function spawned without a variable the template sets it may refuse
    /// to start (the webhooks function without its KMS key did, every spawn)
    /// or start otherwise than deployed.
    #[test]
    fn every_row_has_the_variables_the_template_gives_its_function() {
        let template = Template::parse(include_str!("../../../template.yaml")).unwrap();
        let mut checked = 0;
        for function in &FUNCTIONS {
            let mut resource = function.name.to_string();
            resource[..1].make_ascii_uppercase();
            let resource = format!("{resource}Function");
            let variables = template.own_variables(&resource);
            let variables = variables.unwrap_or_else(|| panic!("template.yaml has no {resource}"));
            for variable in variables {
                checked += 1;
                assert!(
                    function.env.iter().any(|(name, _)| *name == variable),
                    "{} is spawned without {variable}, which template.yaml's {resource} sets",
                    function.label
                );
            }
        }
        // The events function's three and the webhooks function's two: the
        // reader found their blocks.
        assert_eq!(checked, 3 + 2, "variables read from template.yaml");
    }
}
