//! Event-started instances in process (`wfc_runtime::starts::StartRouter`), on generated code of
//! two of the draft's examples: *Car Auction Bids* (an exclusive starting event state: every bid
//! starts an instance) and *Finalize College Application* (a non-exclusive one: an instance per
//! applicant once all three of that applicant's events have come, correlated by `applicantId`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use wfc_runtime::starts::{Start, StartRouter};
use wfc_runtime::{EventType, RunOptions, Status, TaskContext, TaskError, Value, json};

wfc_runtime::include_workflow!("cases/sw/definitions/handleCarAuctionBid.sw.json");
wfc_runtime::include_workflow!("cases/sw/definitions/finalizeCollegeApplication.sw.json");

/// The IR `include_workflow!` lowered the definition at `path` to (generated code carries none),
/// for what reads the IR.
fn lowered(path: &str) -> wfc_ir::Workflow {
    wfc_build::load_file(path, &wfc_core::Settings::new()).unwrap_or_else(|e| panic!("{path}: {e}")).workflow
}

/// Records every call's input.
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<Value>>,
}

impl Recorder {
    fn calls(&self) -> Vec<Value> {
        self.calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
    fn record(&self, input: Value) -> Result<Value, TaskError> {
        self.calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(input.clone());
        Ok(json!({ "recorded": input }))
    }
}

impl handle_car_auction_bid::Handler for Recorder {
    async fn store_bid_function(&self, input: Value, _ctx: TaskContext) -> Result<Value, TaskError> {
        self.record(input)
    }
}

impl finalize_college_application::Handler for Recorder {
    async fn finalize_application_function(&self, input: Value, _ctx: TaskContext) -> Result<Value, TaskError> {
        self.record(input)
    }
}

fn event(ty: &str, source: &str, extra: Value) -> Value {
    let mut e = json!({ "specversion": "1.0", "type": ty, "source": source, "data": {} });
    if let (Some(e), Value::Object(extra)) = (e.as_object_mut(), extra) {
        e.extend(extra);
    }
    e
}

#[test]
fn every_bid_starts_an_instance_of_the_exclusive_starting_state() {
    let recorder = Arc::new(Recorder::default());
    let results = wfc_runtime::block_on_virtual(async {
        let mut router = StartRouter::new();
        let h = recorder.clone();
        let start: Start = Arc::new(move |input, bus| {
            let h = h.clone();
            Box::pin(async move {
                // The bids come inside the auction's availability window.
                let mut options = RunOptions::virtual_time().with_events(bus);
                options.clock = wfc_runtime::Clock::virtual_from("2020-03-20T10:00:00Z".parse().expect("a time"));
                handle_car_auction_bid::run_with(&*h, input, options).await
            })
        });
        router.register(&lowered("cases/sw/definitions/handleCarAuctionBid.sw.json"), start).expect("starts on events");
        for bid in [10, 20] {
            let d = router.deliver(&event("carBidMadeType", "carBidEventSource", json!({ "data": { "bid": bid } })));
            assert_eq!(d.started, ["handleCarAuctionBid"], "each bid starts one instance");
        }
        let other = router.deliver(&event("somethingElse", "carBidEventSource", json!({})));
        assert!(other.started.is_empty() && other.delivered == 0, "{other:?}");
        router.finish().await
    });
    assert_eq!(results.len(), 2);
    for (id, r) in &results {
        let r = r.as_ref().expect("the instance ran");
        assert_eq!(id, "handleCarAuctionBid");
        assert_eq!(r.status, Status::Succeeded, "{:?}", r.error);
        // The start state consumed the event that created the instance.
        assert_eq!(r.history.iter().filter(|e| e.event_type == EventType::EventConsumed).count(), 1);
    }
    let mut bids: Vec<Value> = recorder.calls().iter().map(|c| c["bid"].clone()).collect();
    bids.sort_by_key(|b| b.as_i64());
    assert_eq!(bids, [json!(10), json!(20)]);
}

#[test]
fn a_non_exclusive_start_creates_one_instance_per_correlated_group_of_all_its_events() {
    let recorder = Arc::new(Recorder::default());
    let (deliveries, results) = wfc_runtime::block_on_virtual(async {
        let mut router = StartRouter::new();
        let h = recorder.clone();
        let start: Start = Arc::new(move |input, bus| {
            let h = h.clone();
            Box::pin(async move {
                finalize_college_application::run_with(&*h, input, RunOptions::virtual_time().with_events(bus)).await
            })
        });
        router
            .register(&lowered("cases/sw/definitions/finalizeCollegeApplication.sw.json"), start)
            .expect("starts on events");
        let src = "applicationsource";
        let mut deliveries = Vec::new();
        // Two applicants' events, interleaved; only a1's three events are all there.
        for (ty, who) in [
            ("org.application.submitted", "a1"),
            ("org.application.submitted", "a2"),
            ("org.application.satscores", "a1"),
            ("org.application.satscores", "a2"),
            ("org.application.recommendationLetter", "a1"),
        ] {
            deliveries.push(router.deliver(&event(ty, src, json!({ "applicantId": who }))).started.len());
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        (deliveries, router.finish().await)
    });
    assert_eq!(deliveries, [0, 0, 0, 0, 1], "the instance is created by its group's last event");
    assert_eq!(results.len(), 1);
    let r = results[0].1.as_ref().expect("the instance ran");
    assert_eq!(r.status, Status::Succeeded, "{:?}", r.error);
    let consumed: Vec<&Value> = r
        .history
        .iter()
        .filter(|e| e.event_type == EventType::EventConsumed)
        .map(|e| &e.details["event"]["applicantId"])
        .collect();
    assert_eq!(consumed, [&json!("a1"); 3], "all three events are the one applicant's");
    assert_eq!(recorder.calls(), [json!({ "student": "a1" })]);
}

/// The interpreter's side, with a `timeout` on the non-exclusive start state: the time between
/// two events of one group. A group whose next event is later is dropped (no instance), and that
/// event starts a new group.
#[test]
fn a_group_whose_next_event_comes_after_the_timeout_creates_no_instance() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/cases/sw/definitions/finalizeCollegeApplication.sw.json"
    ))
    .expect("the definition");
    let mut doc: Value = serde_json::from_str(&text).expect("JSON");
    doc["states"][0]["timeout"] = json!("PT1M");
    let text = doc.to_string();
    let loaded = wfc_core::load(wfc_core::Source { path: "finalize.sw.json", text: &text }).expect("valid");
    let workflow = Arc::new(loaded.workflow);
    let handlers = Arc::new(
        wfc_runtime::Handlers::new()
            .on("finalizeApplicationFunction", |input, _ctx| async move { Ok(json!({ "finalized": input })) }),
    );
    let results = wfc_runtime::block_on_virtual(async {
        let mut router = StartRouter::new();
        let (w, h) = (workflow.clone(), handlers.clone());
        let start: Start = Arc::new(move |input, bus| {
            let (w, h) = (w.clone(), h.clone());
            Box::pin(
                async move { wfc_runtime::sw::run(&w, &*h, input, RunOptions::virtual_time().with_events(bus)).await },
            )
        });
        router.register(&workflow, start).expect("starts on events");
        let src = "applicationsource";
        let e = |ty: &str| event(ty, src, json!({ "applicantId": "a1" }));
        assert!(router.deliver(&e("org.application.submitted")).started.is_empty());
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert!(router.deliver(&e("org.application.satscores")).started.is_empty());
        // Two minutes of silence: the group is dropped; this letter starts a new one.
        tokio::time::sleep(Duration::from_secs(120)).await;
        assert!(router.deliver(&e("org.application.recommendationLetter")).started.is_empty());
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert!(router.deliver(&e("org.application.submitted")).started.is_empty());
        tokio::time::sleep(Duration::from_secs(10)).await;
        let last = router.deliver(&e("org.application.satscores"));
        assert_eq!(last.started.len(), 1, "the second group is complete in time");
        router.finish().await
    });
    assert_eq!(results.len(), 1);
    let r = results[0].1.as_ref().expect("the instance ran");
    assert_eq!(r.status, Status::Succeeded, "{:?}", r.error);
    assert_eq!(r.output, Some(json!({ "applicantId": "a1", "finalized": { "student": "a1" } })));
}
