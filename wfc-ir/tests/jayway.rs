//! Table tests of the Jayway dialect and result shapes, from the Jayway README's examples (the
//! "store" document) and the AWS Step Functions docs' path examples.

use serde_json::{Value, json};
use wfc_ir::jsonpath::{Path, ReferencePath, SelectError};

fn store() -> Value {
    json!({
        "store": {
            "book": [
                {"category": "reference", "author": "Nigel Rees", "title": "Sayings of the Century", "price": 8.95},
                {"category": "fiction", "author": "Evelyn Waugh", "title": "Sword of Honour", "price": 12.99},
                {"category": "fiction", "author": "Herman Melville", "title": "Moby Dick", "isbn": "0-553-21311-3", "price": 8.99},
                {"category": "fiction", "author": "J. R. R. Tolkien", "title": "The Lord of the Rings", "isbn": "0-395-19395-8", "price": 22.99}
            ],
            "bicycle": {"color": "red", "price": 19.95}
        },
        "expensive": 10
    })
}

/// What a case expects.
enum Want {
    /// `select` gives this value.
    Is(Value),
    /// `select` fails with `NotFound` (a definite path that names something missing).
    NotFound,
    /// `Path::parse` rejects the text.
    Invalid,
}
use Want::{Invalid, Is, NotFound};

fn book(i: usize) -> Value {
    store()["store"]["book"][i].clone()
}

fn check(doc: &Value, cases: Vec<(&str, Want)>) -> usize {
    let n = cases.len();
    for (text, want) in cases {
        let parsed = Path::parse(text);
        match (want, parsed) {
            (Invalid, Err(_)) => {}
            (Invalid, Ok(p)) => panic!("`{text}` should be rejected, parsed as {:?}", p.segments()),
            (_, Err(e)) => panic!("`{text}` should parse: {e}"),
            (Is(v), Ok(p)) => match p.select(doc) {
                Ok(got) => assert_eq!(got, v, "`{text}`"),
                Err(e) => panic!("`{text}`: {e}"),
            },
            (NotFound, Ok(p)) => match p.select(doc) {
                Err(SelectError::NotFound { path, .. }) => assert_eq!(path, text),
                Ok(v) => panic!("`{text}` should not be found, got {v}"),
            },
        }
    }
    n
}

#[test]
fn jayway_readme_store_examples() {
    let doc = store();
    let authors = json!(["Nigel Rees", "Evelyn Waugh", "Herman Melville", "J. R. R. Tolkien"]);
    let n = check(
        &doc,
        vec![
            ("$.store.book[*].author", Is(authors.clone())),
            ("$..author", Is(authors.clone())),
            ("$.store.*", Is(json!([doc["store"]["book"], doc["store"]["bicycle"]]))),
            ("$.store..price", Is(json!([8.95, 12.99, 8.99, 22.99, 19.95]))),
            ("$..book[2]", Is(json!([book(2)]))),
            ("$..book[-2]", Is(json!([book(2)]))),
            ("$..book[0,1]", Is(json!([book(0), book(1)]))),
            ("$..book[:2]", Is(json!([book(0), book(1)]))),
            ("$..book[1:2]", Is(json!([book(1)]))),
            ("$..book[-2:]", Is(json!([book(2), book(3)]))),
            ("$..book[2:]", Is(json!([book(2), book(3)]))),
            ("$..book[?(@.isbn)]", Is(json!([book(2), book(3)]))),
            ("$.store.book[?(@.price < 10)]", Is(json!([book(0), book(2)]))),
            ("$..book[?(@.price <= $['expensive'])]", Is(json!([book(0), book(2)]))),
            ("$..book[?(@.price <= $.expensive)].title", Is(json!(["Sayings of the Century", "Moby Dick"]))),
            ("$.store.book[?(@.category == 'fiction' && @.price > 20)].title", Is(json!(["The Lord of the Rings"]))),
            ("$.store.book[?(@.category == 'reference' || @.price > 20)].price", Is(json!([8.95, 22.99]))),
            ("$.store.book[?(!(@.category == 'fiction'))].author", Is(json!(["Nigel Rees"]))),
            ("$.store.book[?(!@.isbn)].title", Is(json!(["Sayings of the Century", "Sword of Honour"]))),
            ("$.store.book[?(@.author != 'Nigel Rees')].price", Is(json!([12.99, 8.99, 22.99]))),
            ("$.store.book[?(@.price >= 12.99)].price", Is(json!([12.99, 22.99]))),
            ("$.store.book[?@.price > 12.99].price", Is(json!([22.99]))),
            ("$.store.book[?(@.title == \"Moby Dick\")].isbn", Is(json!(["0-553-21311-3"]))),
            ("$.store.book[?(@.price == 8.95)].author", Is(json!(["Nigel Rees"]))),
            // Jayway merges a final multi-name bracket into one object per node.
            (
                "$.store.book[*]['author','price']",
                Is(json!([
                    {"author": "Nigel Rees", "price": 8.95},
                    {"author": "Evelyn Waugh", "price": 12.99},
                    {"author": "Herman Melville", "price": 8.99},
                    {"author": "J. R. R. Tolkien", "price": 22.99}
                ])),
            ),
            (
                "$.store.book[*]['isbn','nope']",
                Is(json!([{}, {}, {"isbn": "0-553-21311-3"}, {"isbn": "0-395-19395-8"}])),
            ),
            ("$.store.book.length()", Is(json!(4))),
            // Jayway's README: "the number of books".
            ("$..book.length()", Is(json!(4))),
            ("$.store.book[*].length()", Is(json!(4))),
            ("$.store.book[*].price.min()", Is(json!(8.95))),
            ("$..price.max()", Is(json!(22.99))),
            ("$.store.bicycle.keys()", Is(json!(["color", "price"]))),
            ("$.store.book[*].author.first()", Is(json!("Nigel Rees"))),
            ("$.store.book[*].author.last()", Is(json!("J. R. R. Tolkien"))),
            ("$.store.book[?(@.category in ['reference', 'poetry'])].author", Is(json!(["Nigel Rees"]))),
            ("$.store.book[?(@.category nin ['fiction'])].author", Is(json!(["Nigel Rees"]))),
            ("$.store.book[?(@.title contains 'Moby')].author", Is(json!(["Herman Melville"]))),
            ("$.store.book[?(@.author size 10)].author", Is(json!(["Nigel Rees"]))),
            ("$.store[?(@.book.length() > 3)].bicycle.color", Is(json!(["red"]))),
            ("$.store.book.sum()", NotFound),
            ("$.store.nothing.length()", NotFound),
            ("$.store.book[?(@.author =~ /.*REES/i)]", Invalid),
            // Definite paths: the node itself, never wrapped.
            ("$.store.bicycle.color", Is(json!("red"))),
            ("$.store.book[0].author", Is(json!("Nigel Rees"))),
            ("$.store.book[-1].title", Is(json!("The Lord of the Rings"))),
            ("$['store']['bicycle']['price']", Is(json!(19.95))),
            ("$.expensive", Is(json!(10))),
            ("$.store.bicycle['color','price']", Is(json!({"color": "red", "price": 19.95}))),
            ("$.store.book[4]", NotFound),
            ("$.store.book[0].isbn", NotFound),
            ("$.store.motorbike", NotFound),
            ("$.store.bicycle.color.shade", NotFound),
            // Indefinite paths: an array, empty when nothing matches (never an error).
            ("$.store.motorbike[*]", Is(json!([]))),
            ("$..nothing", Is(json!([]))),
            ("$.store.book[?(@.price > 100)]", Is(json!([]))),
            ("$.store.book[10:]", Is(json!([]))),
            ("$.store.bicycle.*", Is(json!(["red", 19.95]))),
            ("$.store.book[*].isbn", Is(json!(["0-553-21311-3", "0-395-19395-8"]))),
            ("$.store.book[::2].price", Is(json!([8.95, 8.99]))),
            ("$.store.book[::-1].price", Is(json!([22.99, 8.99, 12.99, 8.95]))),
            ("$.store.book[?(length(@.title) < 10)].title", Is(json!(["Moby Dick"]))),
            ("$.store[?(@.bicycle)].bicycle.color", Is(json!(["red"]))),
            ("$..[?(@.color)].price", Is(json!([19.95]))),
            ("$.store.bicycle[?(@.color == 'red')].price", Is(json!([19.95]))),
            ("$.store.bicycle[?(@.color == 'blue')].price", Is(json!([]))),
        ],
    );
    assert!(n >= 50);
}

#[test]
fn aws_docs_examples() {
    // "Reference Paths": {"foo": 123, "bar": ["a", "b", "c"], "car": {"cdr": true}}.
    let doc = json!({"foo": 123, "bar": ["a", "b", "c"], "car": {"cdr": true}});
    check(
        &doc,
        vec![
            ("$.foo", Is(json!(123))),
            ("$.bar", Is(json!(["a", "b", "c"]))),
            ("$.car.cdr", Is(json!(true))),
            ("$.bar[0]", Is(json!("a"))),
            ("$.bar[1:]", Is(json!(["b", "c"]))),
            ("$", Is(doc.clone())),
        ],
    );
    // InputPath example: select one dataset.
    let doc = json!({
        "comment": "Example for InputPath.",
        "dataset1": {"val1": 1, "val2": 2, "val3": 3},
        "dataset2": {"val1": "a", "val2": "b", "val3": "c"}
    });
    check(
        &doc,
        vec![
            ("$.dataset2", Is(json!({"val1": "a", "val2": "b", "val3": "c"}))),
            ("$.dataset1.val2", Is(json!(2))),
            ("$.*.val1", Is(json!([1, "a"]))),
            ("$.dataset3", NotFound),
        ],
    );
    // Names with spaces and other characters, as the AWS docs write them.
    let doc = json!({"abc": {"def ghi": 1, "key-dash": 2, "2": 3, "a:b": 4}, "Execution": {"Input": {"x": 1}}});
    check(
        &doc,
        vec![
            ("$.abc.['def ghi']", Is(json!(1))),
            ("$.abc['def ghi']", Is(json!(1))),
            ("$.abc.key-dash", Is(json!(2))),
            ("$.abc.2", Is(json!(3))),
            ("$.abc.a:b", Is(json!(4))),
            ("$.abc.def ghi", Invalid),
            ("$$.Execution.Input.x", Is(json!(1))),
        ],
    );
    // Map-state style: ItemsPath over an array, then a filter.
    let doc = json!({"ships": [{"type": "tanker", "n": 1}, {"type": "ferry", "n": 2}, {"type": "tanker", "n": 3}]});
    check(
        &doc,
        vec![
            ("$.ships[?(@.type == 'tanker')].n", Is(json!([1, 3]))),
            ("$.ships[?(@.type == 'tanker')]", Is(json!([doc["ships"][0], doc["ships"][2]]))),
            ("$.ships[0]", Is(doc["ships"][0].clone())),
            ("$.ships[-1].n", Is(json!(3))),
            ("$.ships[*].n", Is(json!([1, 2, 3]))),
            ("$.ships.length()", Is(json!(3))),
            ("$.ships[*].n.sum()", Is(json!(6.0))),
            ("$.ships[*].n.avg()", Is(json!(2.0))),
            ("$.ships[?(@.type in ['tanker', 'barge'])].n", Is(json!([1, 3]))),
        ],
    );
}

#[test]
fn aws_result_path_examples() {
    // ResultPath "$.taskresult": the result is added next to the input.
    let input = json!({"comment": "This is a test of the input and output of a Task state.", "details": "Default example", "who": "AWS Step Functions"});
    let mut doc = input.clone();
    ReferencePath::parse("$.taskresult").unwrap().set(&mut doc, json!("Hello, AWS Step Functions!")).unwrap();
    let mut want = input.clone();
    want["taskresult"] = json!("Hello, AWS Step Functions!");
    assert_eq!(doc, want);

    // ResultPath "$.strings.lambdaresult": written into an existing nested object.
    let mut doc = json!({"strings": {"a": 1}, "who": "x"});
    ReferencePath::parse("$.strings.lambdaresult").unwrap().set(&mut doc, json!("r")).unwrap();
    assert_eq!(doc, json!({"strings": {"a": 1, "lambdaresult": "r"}, "who": "x"}));

    // ResultPath "$": the result replaces the input.
    let mut doc = input;
    ReferencePath::parse("$").unwrap().set(&mut doc, json!({"r": 1})).unwrap();
    assert_eq!(doc, json!({"r": 1}));

    // ResultPath "$.a.b.c" into a document without "a": every parent is created.
    let mut doc = json!({});
    ReferencePath::parse("$.a.b.c").unwrap().set(&mut doc, json!(1)).unwrap();
    assert_eq!(doc, json!({"a": {"b": {"c": 1}}}));

    // Error Output placed by a catcher's ResultPath.
    let mut doc = json!({"order": 1});
    let err = json!({"Error": "States.TaskFailed", "Cause": "boom"});
    ReferencePath::parse("$.error-info").unwrap().set(&mut doc, err.clone()).unwrap();
    assert_eq!(doc, json!({"order": 1, "error-info": err}));
}
