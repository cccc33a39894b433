//! `wfc swf-decider`: a long-polling Amazon SWF decider for one definition, until SIGTERM or
//! Ctrl-C (docs/adapters.md).

use std::path::PathBuf;

use wfc_runtime::adapters::swf_poller::{self, AwsSettings, PollerOptions, SwfClient};

use crate::{Exit, fatal};

/// `wfc swf-decider`.
#[derive(Debug, clap::Args)]
pub(crate) struct SwfDeciderArgs {
    /// The definition file.
    pub(crate) file: PathBuf,
    /// The SWF domain.
    #[arg(long)]
    pub(crate) domain: String,
    /// The decision task list to poll.
    #[arg(long, value_name = "NAME")]
    pub(crate) task_list: String,
    /// The AWS region (default: AWS_REGION, then AWS_DEFAULT_REGION, then the profile's
    /// `region`).
    #[arg(long)]
    pub(crate) region: Option<String>,
    /// The profile of the shared credentials and config files (default: AWS_PROFILE, then
    /// `default`); AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY in the environment win over it.
    #[arg(long)]
    pub(crate) profile: Option<String>,
    /// The SWF endpoint (default `https://swf.REGION.amazonaws.com`; `http://127.0.0.1:PORT` for
    /// a local emulator).
    #[arg(long, value_name = "URL")]
    pub(crate) endpoint: Option<String>,
    /// The decider's configuration (activity types, task list, timeouts) as JSON, as for
    /// `wfc decide --config`.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// The poller's identity in the history (default `wfc-decider-PID`).
    #[arg(long)]
    pub(crate) identity: Option<String>,
    /// History events per PollForDecisionTask page (1 to 1000).
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub(crate) page_size: u32,
}

/// Polls and decides until SIGTERM/SIGINT; exit 0 then, 2 when polling fails for good.
pub(crate) fn run(args: &SwfDeciderArgs) -> Exit {
    let (loaded, decider) = match crate::adapters::load_decider(&args.file, args.config.as_ref()) {
        Ok(both) => both,
        Err(exit) => return exit,
    };
    if !(1..=1000).contains(&args.page_size) {
        return fatal(format!("--page-size must be between 1 and 1000, not {}", args.page_size));
    }
    let settings = match AwsSettings::load(args.profile.as_deref()) {
        Ok(s) => s,
        Err(e) => return fatal(e),
    };
    let Some(region) = args.region.clone().or_else(|| settings.region.clone()) else {
        return fatal("no AWS region: pass --region, set AWS_REGION, or set `region` in the profile");
    };
    let credentials = settings.credentials;
    let endpoint = args.endpoint.clone().unwrap_or_else(|| SwfClient::aws_endpoint(&region));
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fatal(format!("cannot start the async runtime: {e}")),
    };
    let mut options = PollerOptions::new(args.domain.clone(), args.task_list.clone());
    options.decider = decider;
    options.page_size = args.page_size;
    if let Some(identity) = &args.identity {
        options.identity = identity.clone();
    }
    let result = rt.block_on(async {
        let client = SwfClient::new(&endpoint, &region, credentials).map_err(|e| e.to_string())?;
        let shutdown = crate::durable::shutdown_signal()?;
        eprintln!(
            "wfc swf-decider: deciding {} for domain {:?}, task list {:?} at {endpoint} with credentials from {} (SIGTERM or Ctrl-C stops)",
            loaded.workflow.name, options.domain, options.task_list, settings.source
        );
        swf_poller::run_interpreted_decider(&client, &options, &loaded.workflow, shutdown)
            .await
            .map_err(|e| e.to_string())
    });
    match result {
        Ok(stats) => {
            eprintln!(
                "wfc swf-decider: stopped; {} decision tasks answered, {} not decided, {} answers refused",
                stats.answered, stats.failed, stats.refused
            );
            Exit::Success
        }
        Err(e) => fatal(e),
    }
}
