//! Property tests: Choice logic laws, retry delays, jitter bounds, ResultPath round trips.

mod common;

use std::time::Duration;

use common::*;
use proptest::prelude::*;
use rand::SeedableRng;
use serde_json::{Value, json};
use wfc_runtime::choice::evaluate;
use wfc_runtime::ir::*;
use wfc_runtime::retry::{MAX_RETRY_DELAY, backoff_delay, jittered};

fn leaf() -> impl Strategy<Value = Condition> {
    prop_oneof![
        (0i64..10).prop_map(|n| cmp("$.n", Operator::NumericLessThan, json!(n))),
        (0i64..10).prop_map(|n| cmp("$.n", Operator::NumericEquals, json!(n))),
        "[a-c]{0,2}".prop_map(|s| cmp("$.s", Operator::StringGreaterThanEquals, json!(s))),
        "[a-c*]{0,3}".prop_map(|s| cmp("$.s", Operator::StringMatches, json!(s))),
        any::<bool>().prop_map(|b| cmp("$.b", Operator::BooleanEquals, json!(b))),
        any::<bool>().prop_map(|b| cmp("$.maybe", Operator::IsPresent, json!(b))),
        any::<bool>().prop_map(|b| cmp("$.s", Operator::IsNumeric, json!(b))),
    ]
}

fn condition() -> impl Strategy<Value = Condition> {
    leaf().prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(Condition::And),
            prop::collection::vec(inner.clone(), 1..4).prop_map(Condition::Or),
            inner.prop_map(|c| Condition::Not(Box::new(c))),
        ]
    })
}

fn input() -> impl Strategy<Value = Value> {
    (0i64..10, "[a-c]{0,3}", any::<bool>(), any::<bool>()).prop_map(|(n, s, b, maybe)| {
        let mut v = json!({"n": n, "s": s, "b": b});
        if maybe {
            v["maybe"] = Value::Null;
        }
        v
    })
}

fn eval(c: &Condition, v: &Value) -> bool {
    match evaluate(c, v, &Value::Null) {
        Ok(b) => b,
        Err(f) => panic!("unexpected failure: {f}"),
    }
}

proptest! {
    #[test]
    fn not_negates(c in condition(), v in input()) {
        prop_assert_eq!(eval(&Condition::Not(Box::new(c.clone())), &v), !eval(&c, &v));
    }

    #[test]
    fn and_or_laws(a in condition(), b in condition(), v in input()) {
        let (x, y) = (eval(&a, &v), eval(&b, &v));
        prop_assert_eq!(eval(&Condition::And(vec![a.clone(), b.clone()]), &v), x && y);
        prop_assert_eq!(eval(&Condition::Or(vec![a.clone(), b.clone()]), &v), x || y);
        // De Morgan.
        let not_and = Condition::Not(Box::new(Condition::And(vec![a.clone(), b.clone()])));
        let or_not = Condition::Or(vec![Condition::Not(Box::new(a.clone())), Condition::Not(Box::new(b.clone()))]);
        prop_assert_eq!(eval(&not_and, &v), eval(&or_not, &v));
        // Singletons are identities.
        prop_assert_eq!(eval(&Condition::And(vec![a.clone()]), &v), x);
        prop_assert_eq!(eval(&Condition::Or(vec![a]), &v), x);
    }

    #[test]
    fn retry_delays_are_monotone_and_capped(
        interval in 1u64..100_000,
        rate in 1.0f64..10.0,
        cap in proptest::option::of(1u64..1_000_000),
        n in 1u32..200,
    ) {
        let r = Retrier { interval_seconds: interval, backoff_rate: rate, max_delay_seconds: cap, ..Retrier::new(vec!["E".into()]) };
        let (d1, d2) = (backoff_delay(&r, n), backoff_delay(&r, n + 1));
        prop_assert!(d1 <= d2, "{:?} > {:?}", d1, d2);
        prop_assert!(d2 <= MAX_RETRY_DELAY);
        if let Some(cap) = cap {
            prop_assert!(d2 <= Duration::from_secs(cap));
        }
        if n == 1 {
            prop_assert_eq!(d1, Duration::from_secs(interval).min(cap.map_or(MAX_RETRY_DELAY, Duration::from_secs)).min(MAX_RETRY_DELAY));
        }
    }

    #[test]
    fn full_jitter_is_within_zero_and_the_delay(millis in 0u64..10_000_000, seed in any::<u64>()) {
        let delay = Duration::from_millis(millis);
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let j = jittered(delay, Jitter::Full, &mut rng);
        prop_assert!(j <= delay);
        let mut again = rand::rngs::StdRng::seed_from_u64(seed);
        prop_assert_eq!(jittered(delay, Jitter::Full, &mut again), j);
        prop_assert_eq!(jittered(delay, Jitter::None, &mut rng), delay);
    }

    #[test]
    fn result_path_set_then_get_round_trips(
        keys in prop::collection::vec("[a-z]{1,4}", 1..4),
        base in prop::collection::btree_map("[a-z]{1,4}", 0i64..5, 0..4),
        value in prop_oneof![any::<i64>().prop_map(Value::from), "[a-z]{0,5}".prop_map(Value::from), Just(Value::Null)],
    ) {
        let raw = Value::Object(base.into_iter().map(|(k, v)| (k, Value::from(v))).collect());
        let text = format!("$.{}", keys.join("."));
        let rp = rpath(&text);
        match wfc_runtime::io::result_path(&Some(rp.clone()), raw.clone(), value.clone()) {
            Ok(out) => {
                prop_assert_eq!(rp.get(&out), Some(&value));
                // Keys not on the path are untouched.
                if let (Value::Object(before), Value::Object(after)) = (&raw, &out) {
                    for (k, v) in before {
                        if k != &keys[0] {
                            prop_assert_eq!(after.get(k), Some(v));
                        }
                    }
                }
            }
            // Only possible when a step meets a non-object (a number from `base`).
            Err(f) => {
                prop_assert_eq!(f.error.as_str(), "States.Runtime");
                prop_assert!(raw.get(&keys[0]).is_some());
            }
        }
        // `$` replaces, null discards.
        prop_assert_eq!(wfc_runtime::io::result_path(&Some(rpath("$")), raw.clone(), value.clone()).ok(), Some(value.clone()));
        prop_assert_eq!(wfc_runtime::io::result_path(&None, raw.clone(), value).ok(), Some(raw));
    }
}
