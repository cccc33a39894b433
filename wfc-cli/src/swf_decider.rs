//! `wfc swf-decider`: a long-polling Amazon SWF decider for one definition, until SIGTERM or
//! Ctrl-C (docs/adapters.md).

use std::path::PathBuf;

use wfc_aws::swf::poller::{self as swf_poller, AwsSettings, PollerOptions, SwfClient};

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
    /// `region`, as aws-config resolves it).
    #[arg(long)]
    pub(crate) region: Option<String>,
    /// The profile of the shared config and credentials files (default: AWS_PROFILE, then
    /// `default`): static keys, `role_arn`, SSO and `credential_process` profiles, as the AWS
    /// CLI. Credentials come from aws-config's chain: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY
    /// in the environment win over the profile.
    #[arg(long)]
    pub(crate) profile: Option<String>,
    /// The SWF endpoint (default: AWS_ENDPOINT_URL_SWF, AWS_ENDPOINT_URL, then
    /// `https://swf.REGION.amazonaws.com`; `http://127.0.0.1:PORT` for a local emulator).
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
    let settings = AwsSettings {
        profile: args.profile.clone(),
        region: args.region.clone(),
        endpoint: args.endpoint.clone(),
        ..AwsSettings::default()
    };
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
        let client = SwfClient::new(&settings).await.map_err(|e| e.to_string())?;
        let shutdown = crate::durable::shutdown_signal()?;
        eprintln!(
            "wfc swf-decider: deciding {} for domain {:?}, task list {:?} at {} with credentials from {} (SIGTERM or Ctrl-C stops)",
            loaded.workflow.name,
            options.domain,
            options.task_list,
            client.endpoint(),
            client.credentials_source()
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
