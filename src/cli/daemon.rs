//! `hearth daemon`: run every configured channel until SIGINT/SIGTERM.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;

use crate::config::{Config, ConfigSource, Environment};
use crate::daemon::{
    CourseFiles, Daemon, DaemonDesk, DeadlineFeed, DeskParts, Heartbeat, LoadedModel, LocalModels,
    Providers, ServedLocal, Services, build_channels, signalled,
};
use crate::documents::Library;
use crate::lock::DataLock;
use crate::metrics::errors::RecentErrors;
use crate::metrics::{Known, Metrics};
use crate::pipeline::fixed_prompt::{DoesNotFit, FixedPrompt};
use crate::pipeline::{ConfigWatcher, Outcome, RuntimeBuilder};

pub async fn run(
    config: Config,
    env: &Environment,
    errors: Arc<RecentErrors>,
) -> anyhow::Result<ExitCode> {
    // Before anything binds a port or opens a store: a second daemon on
    // this folder would answer the first one's messages again.
    let _lock = DataLock::acquire(&config.data_dir, "hearth daemon")?;
    let metrics = Arc::new(Metrics::new());
    let models = Arc::new(LocalModels::new(config.clone()));
    let services = Services::open(&config, Arc::new(LoadedModel::new(models.clone())))
        .context("cannot start the daemon")?;
    let served =
        Arc::new(ServedLocal::new(&config, models.clone()).with_meaning(services.meaning.clone()));
    let built = build_channels(&config, &metrics, Some(served))?;
    let channels = built.channels;
    if channels.is_empty() {
        return Ok(nothing_to_listen_to());
    }
    let tool_context = super::tools_cmd::context(&config, env)?;
    let depth = models.clone();
    metrics.queue_source(Arc::new(move || depth.queue_depth()));
    let providers = Arc::new(Providers::new(&config, models.clone())?);
    let library = documents(&config, &services, &tool_context.sandbox)?;
    let tools = services.tools(&config, &tool_context.sandbox);
    let tools = Arc::new(super::docs_cmd::with_search(tools, &library));
    known(&metrics, &channels, &tools, &config);
    let mut builder = RuntimeBuilder::new(config.clone(), providers, tool_context.clone())
        .channels(channels)
        .tools(tools.clone())
        .metrics(metrics.clone())
        .documents(library.clone());
    if let Some(memory) = services.turn_memory() {
        builder = builder.memory(memory);
    }
    if let ConfigSource::File(path) = &config.source {
        builder = builder.watch(ConfigWatcher::new(PathBuf::from(path), env.clone()));
    }
    let runtime = builder.build().context("cannot start the daemon")?;
    if let Some(gateway) = &built.gateway {
        let parts = desk_parts(&models, (&services, &library), errors);
        equip(gateway, &runtime, parts, (&config, &services));
    }
    // Load the model now, so the first message does not wait for it.
    // A fixed prompt that leaves no room for a reply stops the daemon.
    let names: Vec<String> = runtime.channels().map(|c| c.name().to_string()).collect();
    let first = names.first().cloned().unwrap_or_default();
    let unfit = preload(&models, &config, (tools.clone(), first));
    // Caught from here on, before anything says the daemon is listening:
    // a SIGTERM right after that line stops it gracefully, never by default.
    let signals = signalled();
    let stop = async {
        tokio::select! {
            () = signals => None,
            Ok(why) = unfit => Some(why),
        }
    };
    announce(&names, built.gateway.as_deref());
    let daemon = Daemon::start(runtime, None);
    let stop_services = tokio_util::sync::CancellationToken::new();
    services.spawn(daemon.delivery(), metrics, stop_services.clone());
    heartbeat(
        (&config, &services),
        &models,
        (&tools, &tool_context),
        (&daemon, &stop_services),
    );
    index_in_background((&services, &library), &models, &stop_services);
    let unfit = stop.await;
    stop_services.cancel();
    let grace = config.daemon.shutdown_grace_secs;
    eprintln!("hearth daemon: stopping (in-flight replies get {grace} s)…");
    daemon.stop().await;
    models.shutdown().await;
    match unfit {
        Some(why) => Err(why.into()),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// Says that no channel is configured, and how to configure one.
fn nothing_to_listen_to() -> ExitCode {
    eprintln!(
        "hearth daemon: no channel is configured, so there is nothing to listen to. Set [channels.telegram] bot_token (or HEARTH_TELEGRAM_TOKEN in {}), [channels.email], [channels.matrix], [channels.gateway] listen, or [daemon] loopback_channel = true to run without a platform.",
        crate::config::secrets::HINT
    );
    ExitCode::FAILURE
}

/// Tells `/metrics` the names it counts by, so each shows from the start.
fn known(
    metrics: &Metrics,
    channels: &[Arc<dyn crate::channels::Channel>],
    tools: &crate::tools::ToolRegistry,
    config: &Config,
) {
    metrics.known(&Known {
        channels: channels.iter().map(|c| c.name().to_string()).collect(),
        outcomes: Outcome::LABELS.to_vec(),
        tools: tools.names(),
        lms_sources: config.lms.sources.iter().map(|s| s.name.clone()).collect(),
    });
}

/// Gives the gateway what it serves beside the chat: the web page's desk
/// and the calendar feed.
fn equip(
    gateway: &crate::channels::GatewayChannel,
    runtime: &Arc<crate::pipeline::Runtime>,
    parts: DeskParts,
    (config, services): (&Config, &Services),
) {
    gateway.attach_desk(Arc::new(DaemonDesk::new(runtime, parts)));
    // The notifier's store where the LMS runs; else the jobs' reminders alone.
    let feed = match &services.deadlines {
        Some(d) => Ok(DeadlineFeed::of(d.clone())),
        None => DeadlineFeed::open(&config.data_dir, &config.lms, services.scheduler.clone()),
    };
    match feed {
        Ok(feed) => gateway.attach_calendar(Arc::new(feed)),
        Err(e) => tracing::warn!("the gateway serves no calendar feed: {e}"),
    }
}

/// Runs the standing checks of `HEARTBEAT.md` for the person the LMS
/// tells, where `[heartbeat]` is on and `[lms] deliver` names them.
fn heartbeat(
    (config, services): (&Config, &Services),
    models: &Arc<LocalModels>,
    (tools, context): (&Arc<crate::tools::ToolRegistry>, &crate::tools::ToolContext),
    (daemon, stop): (&Daemon, &tokio_util::sync::CancellationToken),
) {
    let (true, Some(person)) = (config.heartbeat.enabled, config.lms.deliver.clone()) else {
        return;
    };
    let background = Arc::new(LoadedModel::new(models.clone()));
    match Heartbeat::new(config, person, background, tools.clone(), context.clone()) {
        Ok(mut beat) => {
            if let Some(n) = &services.notifier {
                beat = beat.about(n.store().clone());
            }
            tracing::info!(workspace = %beat.workspace().display(), "heartbeat: reads HEARTBEAT.md there every {} min", config.heartbeat.every.as_secs() / 60);
            tokio::spawn(crate::daemon::heartbeat::run(
                beat,
                daemon.delivery(),
                stop.clone(),
            ));
        }
        Err(e) => tracing::warn!("no heartbeat: {e}"),
    }
}

/// The documents, found by meaning with the services' embedding model, and
/// the LMS's course files kept among them.
fn documents(
    config: &Config,
    services: &Services,
    sandbox: &Arc<crate::sandbox::Sandbox>,
) -> anyhow::Result<Arc<Library>> {
    let meaning = (services.meaning.clone()).map(|m| -> Arc<dyn crate::embed::Embed> { m });
    let library = super::docs_cmd::library_with(config, meaning)?;
    if let Some(n) = &services.notifier {
        let scope = CourseFiles::scope_of(&config.lms);
        n.keep_files(Arc::new(CourseFiles::new(
            library.clone(),
            sandbox.clone(),
            scope,
        )));
    }
    Ok(library)
}

/// Embeds what memory and the documents have not embedded yet, while the
/// engine is idle, until `stop`.
fn index_in_background(
    (services, library): (&Services, &Library),
    models: &Arc<LocalModels>,
    stop: &tokio_util::sync::CancellationToken,
) {
    services.index_memory(LocalModels::idle_fn(models), stop.clone());
    let idle = LocalModels::idle_fn(models);
    tokio::spawn(crate::embed::index(
        library.store.clone(),
        idle,
        stop.clone(),
    ));
}

/// Loads the model now, so the first message does not wait for it, and
/// measures the fixed prompt against its context: the receiver hears when
/// it leaves no room for a reply.
fn preload(
    models: &Arc<LocalModels>,
    config: &Config,
    (tools, channel): (Arc<crate::tools::ToolRegistry>, String),
) -> tokio::sync::oneshot::Receiver<DoesNotFit> {
    let (unfit, heard) = tokio::sync::oneshot::channel();
    let (models, config) = (models.clone(), config.clone());
    tokio::spawn(async move {
        let local = match models.ensure(&config.model.path).await {
            Ok(local) => local,
            Err(e) => {
                return tracing::error!(error = %e, "cannot load the model; replies will fail until it loads");
            }
        };
        tracing::info!(model = config.model.path, "model loaded");
        match FixedPrompt::measure(&config, &tools.specs(), local.engine(), &channel) {
            Ok(fixed) => {
                tracing::info!(fixed = fixed.describe(), "the fixed prompt");
                if let Err(why) = fixed.fits() {
                    let _ = unfit.send(why);
                }
            }
            Err(e) => tracing::warn!(error = %e, "the fixed prompt could not be measured"),
        }
    });
    heard
}

/// What the web page reads besides the runtime.
fn desk_parts(
    models: &Arc<LocalModels>,
    (services, library): (&Services, &Library),
    errors: Arc<RecentErrors>,
) -> DeskParts {
    DeskParts {
        models: Some(models.clone()),
        scheduler: services.scheduler.clone(),
        notifier: services.notifier.clone(),
        memory: services.memory.as_ref().map(|m| m.store().clone()),
        documents: Some(library.store.clone()),
        errors: Some(errors),
        brief: services.brief.clone(),
    }
}

/// Says what the daemon listens on, and where the web page is.
fn announce(names: &[String], gateway: Option<&crate::channels::gateway::GatewayChannel>) {
    eprintln!(
        "hearth daemon: listening on {}; Ctrl-C stops.",
        names.join(", ")
    );
    if let Some(gateway) = gateway {
        eprintln!("hearth daemon: the web page: {}", gateway.page_url());
    }
}
